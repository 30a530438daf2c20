package sim

func testRoofline(chunked bool) Roofline {
	h100, _ := LookupGPU("h100")
	m, _ := LookupModel("llama-3.1-70b")
	return Roofline{GPU: h100, Model: m, Weights: "fp8", Batch: 16, Prompt: 1000,
		Prefill: Prefill{Rate: 1, Prompt: Lengths{Dist: Dist{Mean: 4000}}, Chunked: chunked}}
}

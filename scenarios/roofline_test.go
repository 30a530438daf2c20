package scenarios

import (
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/sim"
)

func parseRoofline(t *testing.T, src string) sim.Roofline {
	t.Helper()
	s, err := Parse([]byte(src), "test.yaml", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	r, ok := s.Setup.Gen.Timing.(sim.Roofline)
	if !ok {
		t.Fatalf("timing %T, want sim.Roofline", s.Setup.Gen.Timing)
	}
	return r
}

// TestRooflineProfiles: a GPU or model the library lacks is a few lines
// of YAML, and a built-in one can be changed field by field.
func TestRooflineProfiles(t *testing.T) {
	t.Parallel()
	t.Run("new", func(t *testing.T) {
		t.Parallel()
		r := parseRoofline(t, `generator:
  kind: roofline
  gpu: my-gpu
  gpu_profile: {bandwidth_gb_s: 2000, tflops_16: 400, memory_gb: 64, layer_overhead: 40us, comm: 5us}
  model: my-model
  model_profile: {params_b: 14, layers: 40, kv_heads: 8, head_dim: 128}
  gpus: 2
  batch: 8
`)
		want := sim.GPU{Name: "my-gpu", Bandwidth: 2000e9, FLOPS16: 400e12, Memory: 64e9, LayerOverhead: 40 * time.Microsecond, Comm: 5 * time.Microsecond}
		if r.GPU != want {
			t.Errorf("gpu %+v, want %+v", r.GPU, want)
		}
		wantModel := sim.Model{Name: "my-model", Params: 14e9, Active: 14e9, Layers: 40, KVHeads: 8, HeadDim: 128}
		if r.Model != wantModel {
			t.Errorf("model %+v, want %+v", r.Model, wantModel)
		}
		if got, want := r.StepOverhead(), sim.DefaultOverhead+40*(40+5)*time.Microsecond; got != want {
			t.Errorf("step overhead %v, want the profile's %v", got, want)
		}
	})
	t.Run("changed built-in", func(t *testing.T) {
		t.Parallel()
		r := parseRoofline(t, `generator:
  kind: roofline
  gpu: h100
  gpu_profile: {memory_gb: 94, bandwidth_gb_s: 3900, compute_efficiency: 0.5}
  model: mixtral-8x7b
  model_profile: {layers: 16}
`)
		h100, _ := sim.LookupGPU("h100")
		h100.Memory, h100.Bandwidth, h100.ComputeEfficiency = 94e9, 3900e9, 0.5
		if r.GPU != h100 {
			t.Errorf("gpu %+v, want %+v", r.GPU, h100)
		}
		m, _ := sim.LookupModel("mixtral-8x7b")
		m.Layers = 16
		if r.Model != m {
			t.Errorf("model %+v, want %+v", r.Model, m)
		}
		if _, c := r.Efficiencies(); c != 0.5 {
			t.Errorf("compute efficiency %v, want the profile's 0.5", c)
		}
	})
	t.Run("new mixture of experts", func(t *testing.T) {
		t.Parallel()
		r := parseRoofline(t, `generator:
  kind: roofline
  gpu: h200
  model: my-moe
  weights: fp8
  model_profile: {params_b: 100, active_params_b: 10, experts: 64, experts_per_token: 4, layers: 40, kv_heads: 4, head_dim: 128}
`)
		if !r.Model.MoE() || r.Model.Active != 10e9 {
			t.Errorf("model %+v, want a mixture of experts with 10B active", r.Model)
		}
	})
}

// TestRooflineClosedLoopScenario: concurrency makes the batch a closed
// loop of clients, chunked by default.
func TestRooflineClosedLoopScenario(t *testing.T) {
	t.Parallel()
	r := parseRoofline(t, `generator:
  kind: roofline
  gpu: h100
  model: llama-3.1-8b
  concurrency: 32
  prompt_tokens: 2000
  output_tokens: {mean: 400, cv: 0.3}
`)
	if r.Batch != 32 || !r.Prefill.ClosedLoop || !r.Prefill.Chunked || r.Prefill.Output.Mean != 400 || r.Prefill.Rate != 0 {
		t.Errorf("roofline %+v, want a chunked closed loop of 32 clients answering 400 tokens", r)
	}
	r = parseRoofline(t, `generator:
  kind: roofline
  gpu: h100
  model: llama-3.1-8b
  concurrency: 4
  output_tokens: {mean: 100}
  prefill: {chunked: false, prompt_tokens: {mean: 3000, cv: 1}}
`)
	if r.Prefill.Chunked || r.Prefill.Prompt.Mean != 3000 || r.Prefill.Prompt.Shape != sim.ShapeLognormal {
		t.Errorf("prefill %+v, want unchunked lognormal 3000-token prompts", r.Prefill)
	}
}

func TestRooflineParseErrors(t *testing.T) {
	t.Parallel()
	const head = "generator:\n  kind: roofline\n"
	checkParseErrors(t, []parseErrorCase{
		{"unknown profile field", head + "  gpu: h100\n  gpu_profile:\n    bandwith_gb_s: 3\n  model: llama-3.1-8b\n", []string{"line 5", "bandwith_gb_s"}},
		{"new gpu without bandwidth", head + "  gpu: x1\n  gpu_profile:\n    memory_gb: 80\n  model: llama-3.1-8b\n", []string{"line 5", "generator.gpu_profile.bandwidth_gb_s", "x1"}},
		{"negative bandwidth", head + "  gpu: h100\n  gpu_profile:\n    bandwidth_gb_s: -1\n  model: llama-3.1-8b\n", []string{"line 5", "generator.gpu_profile.bandwidth_gb_s"}},
		{"efficiency above 1", head + "  gpu: h100\n  gpu_profile:\n    compute_efficiency: 2\n  model: llama-3.1-8b\n", []string{"line 5", "generator.gpu_profile.compute_efficiency", "(0, 1]"}},
		{"profile without a name", head + "  gpu_profile: {bandwidth_gb_s: 1000, tflops_16: 100, memory_gb: 24}\n  model: llama-3.1-8b\n", []string{"generator.gpu", "name"}},
		{"new model without layers", head + "  gpu: h100\n  model: m1\n  model_profile:\n    params_b: 7\n    kv_heads: 8\n    head_dim: 128\n", []string{"line 6", "generator.model_profile.layers", "m1"}},
		{"moe without active", head + "  gpu: h100\n  model: m2\n  model_profile:\n    params_b: 7\n    experts: 8\n    experts_per_token: 2\n    layers: 8\n    kv_heads: 8\n    head_dim: 128\n", []string{"generator.model_profile.active_params_b"}},
		{"active above params", head + "  gpu: h100\n  model: llama-3.1-8b\n  model_profile:\n    active_params_b: 9\n", []string{"line 6", "generator.model_profile", "active params"}},
		{"batch beside concurrency", head + "  gpu: h100\n  model: llama-3.1-8b\n  batch: 8\n  concurrency: 4\n  output_tokens: {mean: 100}\n", []string{"line 5", "generator.batch", "concurrency"}},
		{"concurrency without output", head + "  gpu: h100\n  model: llama-3.1-8b\n  concurrency: 4\n", []string{"generator.output_tokens", "answer length"}},
		{"output without concurrency", head + "  gpu: h100\n  model: llama-3.1-8b\n  output_tokens: {mean: 100}\n", []string{"line 5", "generator.output_tokens", "concurrency"}},
		{"rate in a closed loop", head + "  gpu: h100\n  model: llama-3.1-8b\n  concurrency: 4\n  output_tokens: {mean: 100}\n  prefill:\n    rate: 2\n", []string{"line 8", "generator.prefill.rate", "closed loop"}},
		{"zero output", head + "  gpu: h100\n  model: llama-3.1-8b\n  concurrency: 4\n  output_tokens: {cv: 1}\n", []string{"line 6", "generator.output_tokens"}},
		{"negative comm", head + "  gpu: h100\n  model: llama-3.1-8b\n  comm: -1us\n", []string{"line 5", "generator.comm"}},
		{"profile of another kind", "generator:\n  kind: constant\n  tpot: 40ms\n  model_profile: {layers: 3}\n", []string{"line 4", "generator.model_profile", "only by roofline"}},
	})
}

// rooflineSeeds seed FuzzParse with the roofline keys: profiles, overheads
// and the closed loop.
var rooflineSeeds = []string{
	"generator:\n  kind: roofline\n  gpu: my-gpu\n  gpu_profile: {bandwidth_gb_s: 2000, tflops_16: 400, tflops_8: 800, memory_gb: 64, overhead: 1ms}\n  model: m\n  model_profile: {params_b: 14, layers: 40, kv_heads: 8, head_dim: 128}\n  gpus: 2\n",
	"generator:\n  kind: roofline\n  gpu: h100\n  model: mixtral-8x7b\n  model_profile: {experts: 16, experts_per_token: 4}\n  concurrency: 16\n  output_tokens: {mean: 200, cv: 0.5}\n  prefill: {chunked: true, token_budget: 4096, prompt_tokens: {mean: 900}}\n",
	"generator:\n  kind: roofline\n  gpu: b200\n  model: deepseek-r1\n  gpus: 8\n  weights: fp4\n  layer_overhead: 10us\n  comm: 2us\n  expert_overhead: 30us\ntokens: 20\n",
}

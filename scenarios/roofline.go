package scenarios

import (
	"fmt"
	"math"
	"time"

	"github.com/speech-pipeline/underrun/sim"
)

// PrefillFile is the prefill interference of a roofline generator: an
// arrival rate (open loop) or, with the generator's concurrency, how the
// closed loop's prefills are scheduled.
type PrefillFile struct {
	Rate    float64     `yaml:"rate"`
	Prompt  LengthsFile `yaml:"prompt_tokens"`
	Chunked bool        `yaml:"chunked"`
	Budget  int         `yaml:"token_budget"`
}

// GPUProfileFile defines a GPU or changes a built-in one (the profile the
// generator's gpu names, when it is built in): the fields given replace
// the profile's. Zero keeps the profile's value.
type GPUProfileFile struct {
	BandwidthGBs        float64       `yaml:"bandwidth_gb_s"`
	TFLOPS16            float64       `yaml:"tflops_16"`
	TFLOPS8             float64       `yaml:"tflops_8"`
	MemoryGB            float64       `yaml:"memory_gb"`
	BandwidthEfficiency float64       `yaml:"bandwidth_efficiency"`
	ComputeEfficiency   float64       `yaml:"compute_efficiency"`
	Overhead            time.Duration `yaml:"overhead"`
	LayerOverhead       time.Duration `yaml:"layer_overhead"`
	Comm                time.Duration `yaml:"comm"`
}

// ModelProfileFile defines a model or changes a built-in one, like
// GPUProfileFile. A new dense model's active parameters default to its
// parameters.
type ModelProfileFile struct {
	ParamsB         float64 `yaml:"params_b"`
	ActiveParamsB   float64 `yaml:"active_params_b"`
	Layers          int     `yaml:"layers"`
	KVHeads         int     `yaml:"kv_heads"`
	HeadDim         int     `yaml:"head_dim"`
	Experts         int     `yaml:"experts"`
	ExpertsPerToken int     `yaml:"experts_per_token"`
}

// rooflineFields are the generator fields only the roofline kind uses.
func rooflineFields(g GeneratorFile) []onlyField {
	r := []string{KindRoofline}
	return []onlyField{
		{"gpu", g.GPU != "", r},
		{"gpu_profile", g.GPUProfile != nil, r},
		{"model", g.Model != "", r},
		{"model_profile", g.ModelProfile != nil, r},
		{"gpus", g.GPUs != 0, r},
		{"weights", g.Weights != "", r},
		{"kv_cache", g.KVCache != "", r},
		{"batch", g.Batch != 0, r},
		{"concurrency", g.Concurrency != 0, r},
		{"prompt_tokens", g.Prompt != 0, r},
		{"output_tokens", g.Output != nil, r},
		{"context", g.Context != 0, r},
		{"bandwidth_efficiency", g.BandwidthEfficiency != 0, r},
		{"compute_efficiency", g.ComputeEfficiency != 0, r},
		{"overhead", g.Overhead != 0, r},
		{"layer_overhead", g.LayerOverhead != 0, r},
		{"comm", g.Comm != 0, r},
		{"expert_overhead", g.ExpertOverhead != 0, r},
		{"prefill", g.Prefill != nil, r},
	}
}

// finite reports a number that is not NaN or infinite.
func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// check is one field's validation: bad names the field and what it wants.
type check struct {
	field string
	bad   bool
	want  string
}

func (ld *loader) first(checks []check) error {
	for _, c := range checks {
		if c.bad {
			return ld.fieldErrorf(c.field, "want %s", c.want)
		}
	}
	return nil
}

// profileBase looks up the built-in profile called name (the file's key
// field) that a profile in the file may change or define; builtin is
// false when there is none and the file's profile defines a new one. A
// name without a built-in, and with no profile, is an error.
func profileBase[T any](ld *loader, key, want, name string, profile bool, lookup func(string) (T, error)) (v T, builtin bool, err error) {
	v, err = lookup(name)
	switch {
	case err != nil && !profile:
		return v, false, ld.fieldError(key, err)
	case name == "":
		return v, false, ld.fieldErrorf(key, "want %s", want)
	}
	return v, err == nil, nil
}

// override sets *to to v unless v is zero (the file left it out).
func override[T comparable](to *T, v T) {
	var zero T
	if v != zero {
		*to = v
	}
}

// gpu returns the GPU profile: the built-in one gpu names, changed or
// defined by gpu_profile.
func (ld *loader) gpu(g GeneratorFile) (sim.GPU, error) {
	p := g.GPUProfile
	gpu, builtin, err := profileBase(ld, "generator.gpu", "a built-in GPU or the name of the one gpu_profile defines", g.GPU, p != nil, sim.LookupGPU)
	if err != nil || p == nil {
		return gpu, err
	}
	const f = "generator.gpu_profile."
	if err := ld.first([]check{
		{f + "bandwidth_gb_s", !(p.BandwidthGBs >= 0) || !finite(p.BandwidthGBs), "a memory bandwidth in GB/s > 0"},
		{f + "tflops_16", !(p.TFLOPS16 >= 0) || !finite(p.TFLOPS16), "a dense 16-bit throughput in TFLOPS > 0"},
		{f + "tflops_8", !(p.TFLOPS8 >= 0) || !finite(p.TFLOPS8), "a dense 8-bit throughput in TFLOPS >= 0"},
		{f + "memory_gb", !(p.MemoryGB >= 0) || !finite(p.MemoryGB), "a memory size in GB > 0"},
		{f + "bandwidth_efficiency", !(p.BandwidthEfficiency >= 0 && p.BandwidthEfficiency <= 1), "a share in (0, 1]"},
		{f + "compute_efficiency", !(p.ComputeEfficiency >= 0 && p.ComputeEfficiency <= 1), "a share in (0, 1]"},
		{f + "overhead", p.Overhead < 0, "a duration >= 0"},
		{f + "layer_overhead", p.LayerOverhead < 0, "a duration >= 0"},
		{f + "comm", p.Comm < 0, "a duration >= 0"},
	}); err != nil {
		return gpu, err
	}
	if !builtin { // a new GPU: no profile to start from
		gpu = sim.GPU{}
		if err := ld.first([]check{
			{f + "bandwidth_gb_s", p.BandwidthGBs == 0, fmt.Sprintf("the memory bandwidth of %s, a GPU with no built-in profile", g.GPU)},
			{f + "tflops_16", p.TFLOPS16 == 0, fmt.Sprintf("the dense 16-bit throughput of %s, a GPU with no built-in profile", g.GPU)},
			{f + "memory_gb", p.MemoryGB == 0, fmt.Sprintf("the memory of %s, a GPU with no built-in profile", g.GPU)},
		}); err != nil {
			return gpu, err
		}
	}
	gpu.Name = g.GPU
	override(&gpu.Bandwidth, p.BandwidthGBs*1e9)
	override(&gpu.FLOPS16, p.TFLOPS16*1e12)
	override(&gpu.FLOPS8, p.TFLOPS8*1e12)
	override(&gpu.Memory, p.MemoryGB*1e9)
	override(&gpu.BandwidthEfficiency, p.BandwidthEfficiency)
	override(&gpu.ComputeEfficiency, p.ComputeEfficiency)
	override(&gpu.Overhead, p.Overhead)
	override(&gpu.LayerOverhead, p.LayerOverhead)
	override(&gpu.Comm, p.Comm)
	if err := gpu.Validate(); err != nil {
		return gpu, ld.fieldError("generator.gpu_profile", err)
	}
	return gpu, nil
}

// model returns the model profile, as gpu does the GPU's.
func (ld *loader) model(g GeneratorFile) (sim.Model, error) {
	p := g.ModelProfile
	model, builtin, err := profileBase(ld, "generator.model", "a built-in model or the name of the one model_profile defines", g.Model, p != nil, sim.LookupModel)
	if err != nil || p == nil {
		return model, err
	}
	const f = "generator.model_profile."
	if err := ld.first([]check{
		{f + "params_b", !(p.ParamsB >= 0) || !finite(p.ParamsB), "a parameter count in billions > 0"},
		{f + "active_params_b", !(p.ActiveParamsB >= 0) || !finite(p.ActiveParamsB), "the parameters used per token, in billions"},
		{f + "layers", p.Layers < 0, "a number of layers >= 1"},
		{f + "kv_heads", p.KVHeads < 0, "a number of KV heads >= 1"},
		{f + "head_dim", p.HeadDim < 0, "a head size >= 1"},
		{f + "experts", p.Experts < 0, "a number of experts >= 0"},
		{f + "experts_per_token", p.ExpertsPerToken < 0, "a number of experts per token >= 0"},
	}); err != nil {
		return model, err
	}
	if !builtin { // a new model
		model = sim.Model{}
		for _, c := range []struct {
			field string
			unset bool
		}{{"params_b", p.ParamsB == 0}, {"layers", p.Layers == 0}, {"kv_heads", p.KVHeads == 0}, {"head_dim", p.HeadDim == 0}} {
			if c.unset {
				return model, ld.fieldErrorf(f+c.field, "want it for %s, a model with no built-in profile", g.Model)
			}
		}
	}
	model.Name = g.Model
	if p.ParamsB != 0 {
		model.Params = p.ParamsB * 1e9
		if p.ActiveParamsB == 0 && p.Experts == 0 && model.Experts == 0 {
			model.Active = model.Params
		}
	}
	if p.ActiveParamsB != 0 {
		model.Active = p.ActiveParamsB * 1e9
	}
	override(&model.Layers, p.Layers)
	override(&model.KVHeads, p.KVHeads)
	override(&model.HeadDim, p.HeadDim)
	override(&model.Experts, p.Experts)
	override(&model.ExpertsPerToken, p.ExpertsPerToken)
	if model.Experts > 0 && p.ActiveParamsB == 0 && !(model.Active > 0 && model.Active < model.Params) {
		return model, ld.fieldErrorf(f+"active_params_b", "a mixture of experts needs the parameters used per token (fewer than params_b)")
	}
	if err := model.Validate(); err != nil {
		return model, ld.fieldError("generator.model_profile", err)
	}
	return model, nil
}

func (ld *loader) roofline(g GeneratorFile) (sim.Roofline, error) {
	var r sim.Roofline
	gpu, err := ld.gpu(g)
	if err != nil {
		return r, err
	}
	model, err := ld.model(g)
	if err != nil {
		return r, err
	}
	r = sim.Roofline{
		GPU: gpu, Model: model, GPUs: g.GPUs, Weights: g.Weights, KVCache: g.KVCache,
		Batch: g.Batch, Prompt: g.Prompt, Context: g.Context,
		BandwidthEfficiency: g.BandwidthEfficiency, ComputeEfficiency: g.ComputeEfficiency,
		Overhead: g.Overhead, LayerOverhead: g.LayerOverhead, Comm: g.Comm, ExpertOverhead: g.ExpertOverhead,
	}
	if err := ld.first([]check{
		{"generator.batch", g.Batch < 0, "a batch size >= 1"},
		{"generator.concurrency", g.Concurrency < 0, "a number of clients >= 1"},
		{"generator.batch", g.Concurrency > 0 && g.Batch != 0 && g.Batch != g.Concurrency,
			fmt.Sprintf("no batch beside concurrency (the %d clients are the batch), got %d", g.Concurrency, g.Batch)},
		{"generator.output_tokens", g.Output != nil && g.Concurrency == 0, "concurrency beside it (the other clients' answers)"},
		{"generator.output_tokens", g.Concurrency > 0 && g.Output == nil, "the other clients' answer length, such as {mean: 500}"},
		{"generator.gpus", g.GPUs < 0, "a GPU count >= 1"},
		{"generator.prompt_tokens", g.Prompt < 0, "a prompt length >= 1"},
		{"generator.context", g.Context < 0, "a context length >= 1"},
		{"generator.bandwidth_efficiency", !(g.BandwidthEfficiency >= 0 && g.BandwidthEfficiency <= 1), "a share in (0, 1]"},
		{"generator.compute_efficiency", !(g.ComputeEfficiency >= 0 && g.ComputeEfficiency <= 1), "a share in (0, 1]"},
		{"generator.overhead", g.Overhead < 0, "a duration >= 0"},
		{"generator.layer_overhead", g.LayerOverhead < 0, "a duration >= 0"},
		{"generator.comm", g.Comm < 0, "a duration >= 0"},
		{"generator.expert_overhead", g.ExpertOverhead < 0, "a duration >= 0"},
		{"generator.weights", g.Weights != "" && sim.Dtypes[g.Weights] == 0, "one of fp32, fp16, bf16, fp8, int8, int4, fp4"},
		{"generator.kv_cache", g.KVCache != "" && sim.Dtypes[g.KVCache] == 0, "one of fp32, fp16, bf16, fp8, int8, int4, fp4"},
	}); err != nil {
		return r, err
	}
	if g.Concurrency > 0 {
		r.Batch = g.Concurrency
		out, err := ld.lengths("generator.output_tokens", *g.Output)
		if err != nil {
			return r, err
		}
		if !(out.Mean >= 1) {
			return r, ld.fieldErrorf("generator.output_tokens.mean", "want the other clients' mean answer length (>= 1 token), got %v", out.Mean)
		}
		// engines batch prefills with decodes unless told otherwise
		r.Prefill = sim.Prefill{ClosedLoop: true, Output: out, Chunked: true}
	}
	if r.Batch == 0 {
		r.Batch = 1
	}
	if p := g.Prefill; p != nil {
		if err := ld.prefill(g, p, &r); err != nil {
			return r, err
		}
	}
	if err := r.Validate(); err != nil {
		return r, ld.fieldError("generator", err)
	}
	return r, nil
}

// prefill reads the prefill section: the open loop's arrival rate and
// prompts, or how the closed loop's prefills are scheduled.
func (ld *loader) prefill(g GeneratorFile, p *PrefillFile, r *sim.Roofline) error {
	closed := g.Concurrency > 0
	switch {
	case closed && p.Rate != 0:
		return ld.fieldErrorf("generator.prefill.rate", "not with concurrency: a closed loop's clients send their next request when an answer ends, so the rate follows from the lengths")
	case !closed && (!(p.Rate > 0) || math.IsInf(p.Rate, 0)):
		return ld.fieldErrorf("generator.prefill.rate", "want the interfering requests' arrival rate per second > 0, got %v (or concurrency for a closed loop)", p.Rate)
	case !closed && !(p.Prompt.Mean > 0):
		return ld.fieldErrorf("generator.prefill.prompt_tokens.mean", "want a positive mean prompt length, got %v", p.Prompt.Mean)
	case p.Budget < 0 || (p.Budget > 0 && !p.Chunked):
		return ld.fieldErrorf("generator.prefill.token_budget", "want a positive token budget, with chunked: true")
	}
	var lengths sim.Lengths
	if p.Prompt != (LengthsFile{}) {
		var err error
		if lengths, err = ld.lengths("generator.prefill.prompt_tokens", p.Prompt); err != nil {
			return err
		}
	}
	r.Prefill.Rate, r.Prefill.Prompt, r.Prefill.Chunked, r.Prefill.Budget = p.Rate, lengths, p.Chunked, p.Budget
	return nil
}

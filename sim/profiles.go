package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// GPU is an accelerator as the roofline model sees it: how fast it reads
// memory, how fast it multiplies, how much it holds, and what it achieves
// of its data sheet in practice. The zero value of each practical field
// (efficiencies, overheads, Comm) means the package default.
type GPU struct {
	// Name is the profile's key, as scenario files write it.
	Name string
	// Bandwidth is the memory bandwidth in bytes per second.
	Bandwidth float64
	// FLOPS16 is the dense 16-bit tensor throughput in FLOP/s.
	FLOPS16 float64
	// FLOPS8 is the dense 8-bit tensor throughput (0: no 8-bit tensor
	// cores; 8-bit weights then compute at FLOPS16).
	FLOPS8 float64
	// Memory is the device memory in bytes.
	Memory float64
	// BandwidthEfficiency is the share of Bandwidth a decode step
	// achieves (0: DefaultBandwidthEfficiency).
	BandwidthEfficiency float64
	// ComputeEfficiency is the share of the tensor throughput a step
	// achieves (0: DefaultComputeEfficiency).
	ComputeEfficiency float64
	// FixedCostScale multiplies the fixed cost of every step (overheads,
	// communication, expert overhead) for GPUs whose published points
	// pay a different share of it than the defaults were fitted on (0:
	// 1).
	FixedCostScale float64
	// Overhead is the fixed cost of every step: scheduling, sampling,
	// the host's share (0: DefaultOverhead).
	Overhead time.Duration
	// LayerOverhead is the fixed cost of every layer in every step:
	// kernel launches and the small kernels between the big ones (0:
	// DefaultLayerOverhead).
	LayerOverhead time.Duration
	// Comm is the tensor-parallel communication of every layer in every
	// step for each GPU in the group beyond the first (0: DefaultComm).
	Comm time.Duration
}

// GPUs are the built-in accelerator profiles, from the vendors' data
// sheets (dense throughput, no sparsity). Practical fields left zero take
// the package defaults, which were fitted on published measurements
// (sim/testdata/roofline-measurements.csv); a100-40gb is the 40 GB A100
// SXM (1.555 TB/s).
var GPUs = []GPU{
	{Name: "a100", Bandwidth: 2.039e12, FLOPS16: 312e12, FLOPS8: 624e12, Memory: 80e9},
	{Name: "a100-40gb", Bandwidth: 1.555e12, FLOPS16: 312e12, FLOPS8: 624e12, Memory: 40e9},
	{Name: "h100", Bandwidth: 3.35e12, FLOPS16: 989e12, FLOPS8: 1979e12, Memory: 80e9},
	{Name: "h200", Bandwidth: 4.8e12, FLOPS16: 989e12, FLOPS8: 1979e12, Memory: 141e9},
	{Name: "h20", Bandwidth: 4.0e12, FLOPS16: 148e12, FLOPS8: 296e12, Memory: 96e9},
	{Name: "b200", Bandwidth: 8e12, FLOPS16: 2250e12, FLOPS8: 4500e12, Memory: 180e9, FixedCostScale: B200FixedCostScale},
	{Name: "l4", Bandwidth: 300e9, FLOPS16: 121e12, FLOPS8: 242e12, Memory: 24e9},
	{Name: "rtx4090", Bandwidth: 1.008e12, FLOPS16: 165e12, FLOPS8: 330e12, Memory: 24e9},
	{Name: "mi300x", Bandwidth: 5.3e12, FLOPS16: 1307e12, FLOPS8: 2615e12, Memory: 192e9,
		ComputeEfficiency: MI300XComputeEfficiency, FixedCostScale: MI300XFixedCostScale},
}

// Validate reports the first field out of range.
func (g GPU) Validate() error {
	switch {
	case !positive(g.Bandwidth) || !positive(g.FLOPS16) || !positive(g.Memory):
		return fmt.Errorf("%w: gpu %q needs positive bandwidth, FLOPS and memory", ErrModel, g.Name)
	case !(g.FLOPS8 >= 0) || math.IsInf(g.FLOPS8, 0):
		return fmt.Errorf("%w: gpu %q: 8-bit FLOPS must be a number >= 0, got %v", ErrModel, g.Name, g.FLOPS8)
	case !share(g.BandwidthEfficiency):
		return fmt.Errorf("%w: gpu %q: bandwidth efficiency must be in (0, 1], got %v", ErrModel, g.Name, g.BandwidthEfficiency)
	case !share(g.ComputeEfficiency):
		return fmt.Errorf("%w: gpu %q: compute efficiency must be in (0, 1], got %v", ErrModel, g.Name, g.ComputeEfficiency)
	case !(g.FixedCostScale >= 0) || g.FixedCostScale > 100:
		return fmt.Errorf("%w: gpu %q: fixed cost scale must be in [0, 100], got %v", ErrModel, g.Name, g.FixedCostScale)
	case g.Overhead < 0 || g.LayerOverhead < 0 || g.Comm < 0:
		return fmt.Errorf("%w: gpu %q: overheads must not be negative", ErrModel, g.Name)
	}
	return nil
}

// positive reports a finite number > 0.
func positive(v float64) bool { return v > 0 && !math.IsInf(v, 0) }

// share reports 0 (the default) or a share in (0, 1].
func share(v float64) bool { return v >= 0 && v <= 1 }

// Model is a transformer as the roofline model sees it: its weights and
// the shape of its KV cache.
type Model struct {
	// Name is the profile's key.
	Name string
	// Params is the total parameter count.
	Params float64
	// Active is the parameters used per token (Params for a dense model).
	Active float64
	// Experts and ExpertsPerToken describe a mixture of experts (0 for a
	// dense model): each token is routed to ExpertsPerToken of Experts.
	Experts, ExpertsPerToken int
	// Layers, KVHeads and HeadDim shape the KV cache: a token of context
	// holds Layers x KVHeads x HeadDim values for the keys and as many for
	// the values.
	Layers, KVHeads, HeadDim int
}

// Models are the built-in model profiles, from the models' published
// configurations. DeepSeek's multi-head latent attention caches one
// 576-value latent per layer and token (512 compressed plus 64 rotary):
// written as one KV head of 288 values, since keys and values count twice.
var Models = []Model{
	{Name: "llama-3.1-8b", Params: 8.03e9, Active: 8.03e9, Layers: 32, KVHeads: 8, HeadDim: 128},
	{Name: "llama-3.1-70b", Params: 70.6e9, Active: 70.6e9, Layers: 80, KVHeads: 8, HeadDim: 128},
	{Name: "llama-3.3-70b", Params: 70.6e9, Active: 70.6e9, Layers: 80, KVHeads: 8, HeadDim: 128},
	{Name: "llama-3.1-405b", Params: 405.9e9, Active: 405.9e9, Layers: 126, KVHeads: 8, HeadDim: 128},
	{Name: "qwen3-8b", Params: 8.19e9, Active: 8.19e9, Layers: 36, KVHeads: 8, HeadDim: 128},
	{Name: "mixtral-8x7b", Params: 46.7e9, Active: 12.9e9, Experts: 8, ExpertsPerToken: 2, Layers: 32, KVHeads: 8, HeadDim: 128},
	{Name: "mixtral-8x22b", Params: 140.6e9, Active: 39.1e9, Experts: 8, ExpertsPerToken: 2, Layers: 56, KVHeads: 8, HeadDim: 128},
	{Name: "qwen3-30b-a3b", Params: 30.5e9, Active: 3.3e9, Experts: 128, ExpertsPerToken: 8, Layers: 48, KVHeads: 4, HeadDim: 128},
	{Name: "deepseek-v3", Params: 671e9, Active: 37e9, Experts: 256, ExpertsPerToken: 8, Layers: 61, KVHeads: 1, HeadDim: 288},
	{Name: "deepseek-r1", Params: 671e9, Active: 37e9, Experts: 256, ExpertsPerToken: 8, Layers: 61, KVHeads: 1, HeadDim: 288},
}

// Dtypes maps the weight and KV cache number formats to bytes per value.
// fp4 (NVFP4, MXFP4) counts its block scales: 4 bits per value plus one
// 8-bit scale per 16 values.
var Dtypes = map[string]float64{
	"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "int4": 0.5, "fp4": 0.5625,
}

// dtypeNames lists Dtypes for messages.
func dtypeNames() string {
	names := make([]string, 0, len(Dtypes))
	for n := range Dtypes {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// LookupGPU finds a built-in GPU profile by name (case-insensitive).
func LookupGPU(name string) (GPU, error) {
	return lookup(GPUs, func(g GPU) string { return g.Name }, "gpu", name)
}

// LookupModel finds a built-in model profile by name (case-insensitive).
func LookupModel(name string) (Model, error) {
	return lookup(Models, func(m Model) string { return m.Name }, "model", name)
}

// lookup finds the entry of list called want (case-insensitive), or says
// which kind was unknown and lists the names there are.
func lookup[T any](list []T, name func(T) string, kind, want string) (T, error) {
	names := make([]string, len(list))
	for i, v := range list {
		if strings.EqualFold(name(v), want) {
			return v, nil
		}
		names[i] = name(v)
	}
	var zero T
	return zero, fmt.Errorf("%w: unknown %s %q: want one of %s", ErrModel, kind, want, strings.Join(names, ", "))
}

// Validate reports the first parameter out of range.
func (m Model) Validate() error {
	switch {
	case !positive(m.Params):
		return fmt.Errorf("%w: model %q: params must be positive", ErrModel, m.Name)
	case !positive(m.Active) || m.Active > m.Params:
		return fmt.Errorf("%w: model %q: active params must be in (0, params]", ErrModel, m.Name)
	case m.Layers <= 0 || m.KVHeads <= 0 || m.HeadDim <= 0:
		return fmt.Errorf("%w: model %q: layers, kv heads and head dim must be positive", ErrModel, m.Name)
	case m.Layers > 10_000 || m.KVHeads > 10_000 || m.HeadDim > 100_000:
		return fmt.Errorf("%w: model %q: want at most 10000 layers and kv heads and a head dim of at most 100000", ErrModel, m.Name)
	case m.Experts < 0 || m.ExpertsPerToken < 0 || m.ExpertsPerToken > m.Experts:
		return fmt.Errorf("%w: model %q: want 0 <= experts per token <= experts", ErrModel, m.Name)
	case m.Experts > 0 && m.ExpertsPerToken == 0:
		return fmt.Errorf("%w: model %q: a mixture of experts needs experts per token", ErrModel, m.Name)
	}
	return nil
}

// MoE reports whether the model is a mixture of experts.
func (m Model) MoE() bool { return m.Experts > 0 && m.Active < m.Params }

// KVBytesPerToken is the KV cache one token of context occupies: layers x
// KV heads x head size x 2 (key and value) x bytes per value.
func (m Model) KVBytesPerToken(bytesPerValue float64) float64 {
	return float64(m.Layers) * float64(m.KVHeads) * float64(m.HeadDim) * 2 * bytesPerValue
}

// WeightsRead is the number of parameters one step over tokens tokens
// reads (the batch of a decode step, or a prompt). A dense model reads
// all of them. A mixture of experts reads its shared parameters plus,
// per layer, every expert at least one of the tokens is routed to: with
// uniform routing a fraction 1 - (1 - k/E)^tokens of them.
func (m Model) WeightsRead(tokens int) float64 {
	if !m.MoE() {
		return m.Params
	}
	f := float64(m.ExpertsPerToken) / float64(m.Experts)
	if f >= 1 {
		return m.Params
	}
	experts := (m.Params - m.Active) / (1 - f) // all expert parameters
	shared := max(0, m.Params-experts)
	touched := 1 - pow(1-f, tokens)
	return min(m.Params, shared+experts*touched)
}

func pow(x float64, n int) float64 {
	r := 1.0
	for ; n > 0; n >>= 1 {
		if n&1 == 1 {
			r *= x
		}
		x *= x
	}
	return r
}

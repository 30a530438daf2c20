package sim

import (
	"fmt"
	"slices"
	"strings"
)

// GPU is an accelerator as the roofline model sees it: how fast it reads
// memory, how fast it multiplies, and how much it holds.
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
}

// GPUs are the built-in accelerator profiles, from the vendors' data
// sheets (dense throughput, no sparsity).
var GPUs = []GPU{
	{Name: "a100", Bandwidth: 2.039e12, FLOPS16: 312e12, FLOPS8: 624e12, Memory: 80e9},
	{Name: "h100", Bandwidth: 3.35e12, FLOPS16: 989e12, FLOPS8: 1979e12, Memory: 80e9},
	{Name: "h200", Bandwidth: 4.8e12, FLOPS16: 989e12, FLOPS8: 1979e12, Memory: 141e9},
	{Name: "b200", Bandwidth: 8e12, FLOPS16: 2250e12, FLOPS8: 4500e12, Memory: 180e9},
	{Name: "l4", Bandwidth: 300e9, FLOPS16: 121e12, FLOPS8: 242e12, Memory: 24e9},
	{Name: "rtx4090", Bandwidth: 1.008e12, FLOPS16: 165e12, FLOPS8: 330e12, Memory: 24e9},
	{Name: "mi300x", Bandwidth: 5.3e12, FLOPS16: 1307e12, FLOPS8: 2615e12, Memory: 192e9},
}

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
	// Layers, KVHeads and HeadDim shape the KV cache.
	Layers, KVHeads, HeadDim int
}

// Models are the built-in model profiles, from the models' published
// configurations.
var Models = []Model{
	{Name: "llama-3.1-8b", Params: 8.03e9, Active: 8.03e9, Layers: 32, KVHeads: 8, HeadDim: 128},
	{Name: "llama-3.1-70b", Params: 70.6e9, Active: 70.6e9, Layers: 80, KVHeads: 8, HeadDim: 128},
	{Name: "llama-3.1-405b", Params: 405.9e9, Active: 405.9e9, Layers: 126, KVHeads: 8, HeadDim: 128},
	{Name: "mixtral-8x7b", Params: 46.7e9, Active: 12.9e9, Experts: 8, ExpertsPerToken: 2, Layers: 32, KVHeads: 8, HeadDim: 128},
	{Name: "qwen3-30b-a3b", Params: 30.5e9, Active: 3.3e9, Experts: 128, ExpertsPerToken: 8, Layers: 48, KVHeads: 4, HeadDim: 128},
}

// Dtypes maps the weight and KV cache number formats to bytes per value.
var Dtypes = map[string]float64{
	"fp32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1, "int4": 0.5,
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
	for _, g := range GPUs {
		if strings.EqualFold(g.Name, name) {
			return g, nil
		}
	}
	names := make([]string, len(GPUs))
	for i, g := range GPUs {
		names[i] = g.Name
	}
	return GPU{}, fmt.Errorf("%w: unknown gpu %q: want one of %s", ErrModel, name, strings.Join(names, ", "))
}

// LookupModel finds a built-in model profile by name (case-insensitive).
func LookupModel(name string) (Model, error) {
	for _, m := range Models {
		if strings.EqualFold(m.Name, name) {
			return m, nil
		}
	}
	names := make([]string, len(Models))
	for i, m := range Models {
		names[i] = m.Name
	}
	return Model{}, fmt.Errorf("%w: unknown model %q: want one of %s", ErrModel, name, strings.Join(names, ", "))
}

// Validate reports the first parameter out of range.
func (m Model) Validate() error {
	switch {
	case !(m.Params > 0):
		return fmt.Errorf("%w: model %q: params must be positive", ErrModel, m.Name)
	case !(m.Active > 0) || m.Active > m.Params:
		return fmt.Errorf("%w: model %q: active params must be in (0, params]", ErrModel, m.Name)
	case m.Layers <= 0 || m.KVHeads <= 0 || m.HeadDim <= 0:
		return fmt.Errorf("%w: model %q: layers, kv heads and head dim must be positive", ErrModel, m.Name)
	case m.Experts < 0 || m.ExpertsPerToken < 0 || m.ExpertsPerToken > m.Experts:
		return fmt.Errorf("%w: model %q: want 0 <= experts per token <= experts", ErrModel, m.Name)
	case m.Experts > 0 && m.ExpertsPerToken == 0:
		return fmt.Errorf("%w: model %q: a mixture of experts needs experts per token", ErrModel, m.Name)
	}
	return nil
}

// KVBytesPerToken is the KV cache one token of context occupies: layers x
// KV heads x head size x 2 (key and value) x bytes per value.
func (m Model) KVBytesPerToken(bytesPerValue float64) float64 {
	return float64(m.Layers*m.KVHeads*m.HeadDim) * 2 * bytesPerValue
}

// WeightsRead is the number of parameters one decode step over batch
// sequences reads. A dense model reads all of them. A mixture of experts
// reads its shared parameters plus, per layer, every expert at least one
// of the batch's tokens is routed to: with uniform routing a fraction
// 1 - (1 - k/E)^batch of them.
func (m Model) WeightsRead(batch int) float64 {
	if m.Experts == 0 || m.Active >= m.Params {
		return m.Params
	}
	f := float64(m.ExpertsPerToken) / float64(m.Experts)
	experts := (m.Params - m.Active) / (1 - f) // all expert parameters
	shared := m.Params - experts
	touched := 1 - pow(1-f, batch)
	return shared + experts*touched
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

package sim

import (
	"container/heap"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Defaults of the roofline model. The efficiencies and overheads were
// fitted on two thirds of the published decode measurements in
// testdata/roofline-measurements.csv (the other third is held out); `go
// test ./sim -run TestFitRoofline -fit -v` refits them and prints the
// values, and TestRooflineMeasurements checks the model against every
// point.
const (
	// DefaultBandwidthEfficiency is the share of the data-sheet memory
	// bandwidth a decode step achieves.
	DefaultBandwidthEfficiency = 0.76
	// DefaultComputeEfficiency is the share of the data-sheet tensor
	// throughput a step of a dense model achieves (model FLOPs
	// utilization), prefill and large batches alike. NIM's single-user
	// TTFT of 5000 tokens on 2 x H100 (407 ms, HTTP included) says at
	// least 0.45.
	DefaultComputeEfficiency = 0.45
	// MI300XComputeEfficiency is the mi300x profile's compute efficiency:
	// its published points (vLLM on ROCm) compute at a far smaller share
	// of the data sheet than the NVIDIA ones.
	MI300XComputeEfficiency = 0.13
	// DefaultExpertComputeEfficiency is the compute efficiency of a
	// mixture of experts: its tokens are permuted to their experts and
	// back, and the experts' grouped GEMMs, each over its share of the
	// tokens, run below a dense GEMM's share of the data sheet.
	DefaultExpertComputeEfficiency = 0.34
	// B200FixedCostScale is the b200 profile's fixed cost scale: its
	// published points (DeepSeek-R1 with TensorRT-LLM) pay about half the
	// fixed cost the same software pays on H200.
	B200FixedCostScale = 0.51
	// MI300XFixedCostScale is the mi300x profile's fixed cost scale: its
	// published points (vLLM on ROCm) pay 0.8 of the defaults.
	MI300XFixedCostScale = 0.8
	// DefaultOverhead is the fixed cost of every step (scheduling,
	// sampling); the fit puts all fixed cost in the layers.
	DefaultOverhead = 0 * time.Microsecond
	// DefaultLayerOverhead is the fixed cost of every layer in every step
	// (kernel launches, norms, the small kernels between the GEMMs).
	DefaultLayerOverhead = 60 * time.Microsecond
	// DefaultComm is the tensor-parallel all-reduce cost of every layer in
	// every step for each GPU in the group beyond the first.
	DefaultComm = 10 * time.Microsecond
	// DefaultExpertOverhead is the extra fixed cost of every layer of a
	// mixture of experts in every step (routing, permuting tokens to their
	// experts and back).
	DefaultExpertOverhead = 75 * time.Microsecond
	// DefaultMemoryUtilization is the share of the GPUs' memory a serving
	// engine takes for the weights and the KV cache (vLLM's
	// gpu_memory_utilization, TensorRT-LLM's KV cache memory fraction and
	// SGLang's mem_fraction_static are 0.9 or close by default); the rest
	// holds activations, CUDA graphs and the runtime.
	DefaultMemoryUtilization = 0.9
	// DefaultPrompt is the prompt length of the simulated turn.
	DefaultPrompt = 1000
	// DefaultTokenBudget is the tokens per step with chunked prefill.
	DefaultTokenBudget = 2048
	// DefaultDtype is the number format of weights and KV cache.
	DefaultDtype = "bf16"
)

// Roofline models decoding on a GPU from first principles. Every decode
// step reads the weights (WeightsRead x bytes per parameter) and the KV
// cache of every sequence in the batch (KVBytesPerToken x context) at the
// memory bandwidth times the bandwidth efficiency, and computes 2 x active
// parameters FLOPs per token (decoded or prefilled in the step) at the
// tensor throughput times the compute efficiency; the step takes the
// longer of the two, plus its fixed cost:
//
//	overhead + layers x (layer overhead + expert overhead [mixture of experts]
//	                     + comm x (GPUs - 1))
//
// The fixed cost is multiplied by the GPU's FixedCostScale (b200, mi300x).
//
// The turn's own context grows from Prompt by one token per token; the
// other Running-1 sequences hold Context tokens on average. The turn's
// TTFT is its own prefill: the longer of reading the weights and
// computing 2 x active parameters x Prompt FLOPs, plus the fixed cost,
// after the queue wait of a closed loop larger than the KV cache holds.
//
// Each practical term (efficiencies, overheads, comm) is this Roofline's
// field when set, else the GPU profile's, else the package default.
//
// Prefill interference: other requests' prefills interrupt decoding, from
// a Poisson arrival rate (open loop) or from a closed loop of clients (see
// Prefill). In a closed loop only the Running sequences (as many as the KV
// cache holds, KVCapacity) decode and prefill; the other clients wait in
// the server's queue. Without chunked prefill each runs as a step of its own and
// stalls every running decode for its whole length; with chunked prefill
// each step carries at most Budget tokens (decodes included), so a long
// prompt is spread over many slightly slower steps.
type Roofline struct {
	GPU   GPU
	Model Model
	// GPUs is the tensor-parallel degree (0 means 1): bandwidth, compute
	// and memory add up, and every layer pays Comm per GPU beyond the
	// first.
	GPUs int
	// Weights and KVCache name the number formats (Dtypes; "" is bf16).
	Weights, KVCache string
	// Batch is the number of sequences decoding together (ours included);
	// in a closed loop, the number of clients.
	Batch int
	// Prompt is the turn's own prompt length (0: DefaultPrompt).
	Prompt int
	// Context is the mean context of the other sequences in the batch
	// (0: halfway through their answers in a closed loop, else
	// Prompt + 256).
	Context int
	// BandwidthEfficiency and ComputeEfficiency scale the data sheet (0:
	// the GPU's, else the defaults: DefaultExpertComputeEfficiency for a
	// mixture of experts).
	BandwidthEfficiency, ComputeEfficiency float64
	// Overhead is added to every step (0: the GPU's, else
	// DefaultOverhead).
	Overhead time.Duration
	// LayerOverhead is added to every step once per layer (0: the GPU's,
	// else DefaultLayerOverhead).
	LayerOverhead time.Duration
	// Comm is added to every step once per layer for each GPU beyond the
	// first (0: the GPU's, else DefaultComm).
	Comm time.Duration
	// ExpertOverhead is added to every step once per layer of a mixture
	// of experts (0: DefaultExpertOverhead).
	ExpertOverhead time.Duration
	// MemoryUtilization is the share of the GPUs' memory for the weights
	// and the KV cache in a closed loop (0: DefaultMemoryUtilization).
	MemoryUtilization float64
	// Prefill is the interfering load.
	Prefill Prefill
}

// Prefill is the load of other requests whose prefill interrupts decoding:
// an open loop (Rate, Poisson arrivals) or a closed loop.
type Prefill struct {
	// Rate is the arrival rate in requests per second (0: no open-loop
	// load).
	Rate float64
	// ClosedLoop makes the other Batch-1 sequences clients that send
	// their next request the moment one ends, as a benchmark's
	// --max-concurrency or N users do: each answers Output tokens, then
	// its next prompt is prefilled. The prefill load follows from the
	// concurrency and the lengths; Rate must be 0.
	ClosedLoop bool
	// Output is the distribution of the other requests' answer lengths
	// (closed loop).
	Output Lengths
	// Prompt is the distribution of their prompt lengths in tokens (in a
	// closed loop, Mean 0 is the turn's own Prompt).
	Prompt Lengths
	// Chunked spreads each prefill over steps of at most Budget tokens.
	Chunked bool
	// Budget is the tokens per step with chunked prefill (0:
	// DefaultTokenBudget).
	Budget int
}

var _ Timing = Roofline{}

func (r Roofline) gpus() int {
	return max(1, r.GPUs)
}

func dtypeBytes(name string) (float64, error) {
	if name == "" {
		name = DefaultDtype
	}
	b, ok := Dtypes[name]
	if !ok {
		return 0, fmt.Errorf("%w: unknown number format %q: want one of %s", ErrModel, name, dtypeNames())
	}
	return b, nil
}

func orDefault(v, d float64) float64 {
	if v == 0 {
		return d
	}
	return v
}

func orDuration(v ...time.Duration) time.Duration {
	for _, d := range v {
		if d != 0 {
			return d
		}
	}
	return 0
}

// PromptTokens returns the turn's prompt length.
func (r Roofline) PromptTokens() int {
	if r.Prompt > 0 {
		return r.Prompt
	}
	return DefaultPrompt
}

// OtherContext returns the mean context of the other sequences: Context,
// else halfway through their answers in a closed loop, else Prompt + 256.
func (r Roofline) OtherContext() int {
	switch {
	case r.Context > 0:
		return r.Context
	case r.Prefill.ClosedLoop && r.Prefill.Output.Mean >= 1:
		return int(min(float64(r.othersPrompt().Mean)+r.Prefill.Output.Mean/2, math.MaxInt32))
	}
	return r.PromptTokens() + 256
}

// Budget returns the chunked-prefill token budget.
func (r Roofline) Budget() int {
	if r.Prefill.Budget > 0 {
		return r.Prefill.Budget
	}
	return DefaultTokenBudget
}

// Efficiencies returns the bandwidth and compute efficiencies in force:
// the Roofline's, else the GPU's, else the defaults (a mixture of experts
// computes at DefaultExpertComputeEfficiency).
func (r Roofline) Efficiencies() (bandwidth, compute float64) {
	c := DefaultComputeEfficiency
	if r.Model.MoE() {
		c = DefaultExpertComputeEfficiency
	}
	return orDefault(r.BandwidthEfficiency, orDefault(r.GPU.BandwidthEfficiency, DefaultBandwidthEfficiency)),
		orDefault(r.ComputeEfficiency, orDefault(r.GPU.ComputeEfficiency, c))
}

// StepOverhead returns the fixed cost of every step: the overhead plus,
// per layer, the layer overhead, the expert overhead of a mixture of
// experts and the tensor-parallel communication.
func (r Roofline) StepOverhead() time.Duration {
	perLayer := orDuration(r.LayerOverhead, r.GPU.LayerOverhead, DefaultLayerOverhead)
	if r.Model.MoE() {
		perLayer += orDuration(r.ExpertOverhead, DefaultExpertOverhead)
	}
	perLayer += time.Duration(r.gpus()-1) * orDuration(r.Comm, r.GPU.Comm, DefaultComm)
	d := orDuration(r.Overhead, r.GPU.Overhead, DefaultOverhead) + time.Duration(r.Model.Layers)*perLayer
	if r.GPU.FixedCostScale > 0 {
		d = time.Duration(float64(d) * r.GPU.FixedCostScale)
	}
	return d
}

// Bandwidth returns the achieved memory bandwidth, all GPUs together.
func (r Roofline) Bandwidth() float64 {
	bw, _ := r.Efficiencies()
	return r.GPU.Bandwidth * float64(r.gpus()) * bw
}

// FLOPS returns the achieved tensor throughput for the weights' format,
// all GPUs together: 8-bit and 4-bit floating-point weights compute at
// the 8-bit rate, everything else at the 16-bit one.
func (r Roofline) FLOPS() float64 {
	f := r.GPU.FLOPS16
	switch r.Weights {
	case "fp8", "int8", "fp4":
		if r.GPU.FLOPS8 > 0 {
			f = r.GPU.FLOPS8
		}
	}
	_, c := r.Efficiencies()
	return f * float64(r.gpus()) * c
}

// MemoryNeeded returns the bytes the weights and the batch's KV cache
// occupy.
func (r Roofline) MemoryNeeded(batch int) float64 {
	wb, _ := dtypeBytes(r.Weights)
	kb, _ := dtypeBytes(r.KVCache)
	ctx := max(r.OtherContext(), r.PromptTokens())
	return r.Model.Params*wb + float64(batch)*float64(ctx)*r.Model.KVBytesPerToken(kb)
}

// MaxBatch returns the largest batch whose weights and KV cache fit in the
// GPUs' memory (0 when not even the weights fit).
func (r Roofline) MaxBatch() int {
	mem := r.GPU.Memory * float64(r.gpus())
	wb, _ := dtypeBytes(r.Weights)
	kb, _ := dtypeBytes(r.KVCache)
	free := mem - r.Model.Params*wb
	if free <= 0 {
		return 0
	}
	per := float64(max(r.OtherContext(), r.PromptTokens())) * r.Model.KVBytesPerToken(kb)
	return int(min(free/per, math.MaxInt32))
}

// KVCapacity returns how many sequences of a closed loop the KV cache
// holds at once: the memory an engine takes (MemoryUtilization x GPUs x
// memory) less the weights, over the KV cache of a whole request (prompt
// plus answer, which a scheduler must be able to hold to the end). 0 when
// not even one fits.
func (r Roofline) KVCapacity() int {
	wb, _ := dtypeBytes(r.Weights)
	kb, _ := dtypeBytes(r.KVCache)
	util := orDefault(r.MemoryUtilization, DefaultMemoryUtilization)
	free := util*r.GPU.Memory*float64(r.gpus()) - r.Model.Params*wb
	per := (r.othersPrompt().Mean + r.Prefill.Output.Mean) * r.Model.KVBytesPerToken(kb)
	if free <= 0 || !(per > 0) {
		return 0
	}
	return int(min(free/per, math.MaxInt32))
}

// Running returns the number of sequences that decode together: Batch,
// or in a closed loop at most KVCapacity; the other clients wait in the
// server's queue, and only the running ones prefill and decode.
func (r Roofline) Running() int {
	if r.Prefill.ClosedLoop {
		return max(1, min(r.Batch, r.KVCapacity()))
	}
	return r.Batch
}

// Load returns the share of time the GPU spends on the open-loop
// interfering prefills: arrival rate x mean prefill time. At 1 or above
// the queue grows without end. A closed loop cannot overload: its clients
// wait for their answers.
func (r Roofline) Load() float64 {
	if r.Prefill.Rate == 0 {
		return 0
	}
	return r.Prefill.Rate * r.prefillTime(r.Prefill.Prompt.Mean)
}

// prefillTime returns the compute seconds of a prefill of tokens tokens.
func (r Roofline) prefillTime(tokens float64) float64 {
	return 2 * r.Model.Active * tokens / r.FLOPS()
}

// PrefillTime returns a prefill of tokens tokens run as a step of its own:
// the longer of reading the weights its tokens touch and computing them,
// plus the fixed cost of a step.
func (r Roofline) PrefillTime(tokens int) time.Duration {
	wb, _ := dtypeBytes(r.Weights)
	mem := r.Model.WeightsRead(tokens) * wb / r.Bandwidth()
	return seconds(max(mem, r.prefillTime(float64(tokens)))) + r.StepOverhead()
}

// othersPrompt returns the prompt lengths of the interfering requests.
func (r Roofline) othersPrompt() Lengths {
	if r.Prefill.ClosedLoop && r.Prefill.Prompt.Mean == 0 {
		return Lengths{Dist: Dist{Mean: float64(r.PromptTokens())}}
	}
	return r.Prefill.Prompt
}

// Validate reports the first parameter out of range, a batch that does
// not fit in memory, and a prefill load the GPU cannot keep up with.
func (r Roofline) Validate() error {
	if _, err := dtypeBytes(r.Weights); err != nil {
		return fmt.Errorf("weights: %w", err)
	}
	if _, err := dtypeBytes(r.KVCache); err != nil {
		return fmt.Errorf("kv cache: %w", err)
	}
	if err := r.Model.Validate(); err != nil {
		return err
	}
	if err := r.GPU.Validate(); err != nil {
		return err
	}
	switch {
	case r.GPUs < 0 || r.GPUs > 4096:
		return fmt.Errorf("%w: gpus must be in 1..4096, got %d", ErrModel, r.GPUs)
	case r.Batch < 1 || r.Batch > 1<<20:
		return fmt.Errorf("%w: batch must be in 1..%d, got %d", ErrModel, 1<<20, r.Batch)
	case r.Prompt < 0 || r.Context < 0:
		return fmt.Errorf("%w: prompt and context must not be negative", ErrModel)
	case !share(r.BandwidthEfficiency):
		return fmt.Errorf("%w: bandwidth efficiency must be in (0, 1], got %v", ErrModel, r.BandwidthEfficiency)
	case !share(r.ComputeEfficiency):
		return fmt.Errorf("%w: compute efficiency must be in (0, 1], got %v", ErrModel, r.ComputeEfficiency)
	case r.Overhead < 0 || r.LayerOverhead < 0 || r.Comm < 0 || r.ExpertOverhead < 0:
		return fmt.Errorf("%w: overheads must not be negative", ErrModel)
	case !(r.Prefill.Rate >= 0) || math.IsInf(r.Prefill.Rate, 0):
		return fmt.Errorf("%w: prefill rate must be a number >= 0, got %v", ErrModel, r.Prefill.Rate)
	case r.Prefill.ClosedLoop && r.Prefill.Rate > 0:
		return fmt.Errorf("%w: a closed loop derives its prefill load from the concurrency: give no arrival rate", ErrModel)
	case r.Prefill.ClosedLoop && !(r.Prefill.Output.Mean >= 1):
		return fmt.Errorf("%w: a closed loop needs the other requests' mean output length (>= 1 token), got %v", ErrModel, r.Prefill.Output.Mean)
	case r.Prefill.Budget < 0:
		return fmt.Errorf("%w: prefill token budget must not be negative, got %d", ErrModel, r.Prefill.Budget)
	case !share(r.MemoryUtilization):
		return fmt.Errorf("%w: memory utilization must be in (0, 1], got %v", ErrModel, r.MemoryUtilization)
	case r.Prefill.Chunked && r.Budget() <= r.Running():
		return fmt.Errorf("%w: chunked prefill token budget %d leaves no room beside a batch of %d", ErrModel, r.Budget(), r.Running())
	}
	if err := r.Prefill.Prompt.Validate(); err != nil {
		return fmt.Errorf("prefill prompt: %w", err)
	}
	if err := r.Prefill.Output.Validate(); err != nil {
		return fmt.Errorf("closed-loop output: %w", err)
	}
	if r.Prefill.ClosedLoop {
		// clients beyond what the KV cache holds wait in the queue
		if r.KVCapacity() < 1 {
			return fmt.Errorf("%w: %s in %s on %d x %s: the KV cache of one %.0f-token request does not fit beside the weights in %.0f%% of the memory",
				ErrModel, r.Model.Name, orName(r.Weights), r.gpus(), r.GPU.Name, r.othersPrompt().Mean+r.Prefill.Output.Mean,
				100*orDefault(r.MemoryUtilization, DefaultMemoryUtilization))
		}
	} else if mb := r.MaxBatch(); r.Batch > mb {
		return fmt.Errorf("%w: %s in %s with batch %d needs %.1f GB but %d x %s holds %.0f GB (largest batch that fits: %d)",
			ErrModel, r.Model.Name, orName(r.Weights), r.Batch, r.MemoryNeeded(r.Batch)/1e9, r.gpus(), r.GPU.Name,
			r.GPU.Memory*float64(r.gpus())/1e9, mb)
	}
	if l := r.Load(); l >= 1 {
		return fmt.Errorf("%w: prefill load %.2f >= 1: %.3g requests/s of %.0f-token prompts keep the GPU busier than it can be",
			ErrModel, l, r.Prefill.Rate, r.Prefill.Prompt.Mean)
	}
	return nil
}

func orName(dtype string) string {
	if dtype == "" {
		return DefaultDtype
	}
	return dtype
}

// With sets ParamBatch (in a closed loop, the number of clients),
// ParamRate (prefill arrivals per second) or ParamPrompt (the interfering
// prompts' mean length).
func (r Roofline) With(p Param, v float64) (Timing, error) {
	switch p {
	case ParamBatch:
		r.Batch = int(math.Round(v))
	case ParamRate:
		if r.Prefill.ClosedLoop {
			return nil, fmt.Errorf("%w: a closed loop derives its prefill rate from the concurrency (sweep batch instead)", ErrParam)
		}
		r.Prefill.Rate = v
	case ParamPrompt:
		r.Prefill.Prompt.Mean, r.Prefill.Prompt.prepared = v, false
	default:
		return nil, paramError(p, "roofline")
	}
	return r, nil
}

// String describes the timing.
func (r Roofline) String() string {
	s := fmt.Sprintf("roofline: %s in %s on %dx %s, batch %d, prompt %d, context %d, fixed cost %v per step",
		r.Model.Name, orName(r.Weights), r.gpus(), r.GPU.Name, r.Batch, r.PromptTokens(), r.OtherContext(),
		r.StepOverhead().Round(time.Microsecond))
	mode := "unchunked"
	if r.Prefill.Chunked {
		mode = fmt.Sprintf("chunked (budget %d)", r.Budget())
	}
	switch {
	case r.Prefill.ClosedLoop:
		prompt := r.othersPrompt()
		s += fmt.Sprintf("; closed loop of %d clients: %s-token prompts, %s-token answers (%.3g prefill tokens per step), %s",
			r.Batch, prompt.Dist, r.Prefill.Output.Dist, float64(r.Running()-1)*prompt.Mean/r.Prefill.Output.Mean, mode)
		if n := r.Running(); n < r.Batch {
			s += fmt.Sprintf("; the KV cache holds %d: the other %d wait in the queue, %v each",
				n, r.Batch-n, r.QueueWait().Round(time.Millisecond))
		}
	case r.Prefill.Rate > 0:
		s += fmt.Sprintf("; prefill load %.3g req/s x %s tokens, %s, load %.0f%%",
			r.Prefill.Rate, r.Prefill.Prompt.Dist, mode, 100*r.Load())
	}
	return s
}

// NewPacer returns the pacer.
func (r Roofline) NewPacer() Pacer {
	wb, _ := dtypeBytes(r.Weights)
	kb, _ := dtypeBytes(r.KVCache)
	bw := r.Bandwidth()
	kv := r.Model.KVBytesPerToken(kb)
	batch := r.Running()
	p := &rooflinePacer{
		memFixed:  (r.Model.WeightsRead(batch)*wb + kv*float64(batch-1)*float64(r.OtherContext())) / bw,
		memPerCtx: kv / bw,
		perToken:  2 * r.Model.Active / r.FLOPS(),
		overhead:  r.StepOverhead().Seconds(),
		model:     r.Model,
		weightBW:  wb / bw,
		batch:     batch,
		prompt:    r.PromptTokens(),
		rate:      r.Prefill.Rate,
		closed:    r.Prefill.ClosedLoop,
		chunked:   r.Prefill.Chunked,
		room:      r.Budget() - batch,
		lengths:   r.othersPrompt(),
		output:    r.Prefill.Output,
	}
	p.lengths.prepare()
	p.output.prepare()
	if p.closed {
		p.others = make(finishHeap, batch-1)
		if r.Batch > batch {
			p.wait = r.QueueWait().Seconds()
		}
	}
	return p
}

// QueueWait returns how long a closed loop's request waits in the
// server's queue for a place in the running batch: by Little's law, with
// N clients and B running (Running), each place serves (N - B) / B of the
// waiting requests ahead of ours, each for its prefill and its answer at
// the mean step time (memory at the mean context, compute with the mean
// prefill tokens per step, whichever is longer, plus the fixed cost).
func (r Roofline) QueueWait() time.Duration {
	n, b := r.Batch, r.Running()
	if !r.Prefill.ClosedLoop || n <= b {
		return 0
	}
	wb, _ := dtypeBytes(r.Weights)
	kb, _ := dtypeBytes(r.KVCache)
	out := r.Prefill.Output.Mean
	prompt := r.othersPrompt().Mean
	mem := (r.Model.WeightsRead(b)*wb + r.Model.KVBytesPerToken(kb)*float64(b)*(prompt+out/2)) / r.Bandwidth()
	comp := 2 * r.Model.Active * float64(b) * (1 + prompt/out) / r.FLOPS()
	service := r.PrefillTime(int(prompt)).Seconds() + out*(max(mem, comp)+r.StepOverhead().Seconds())
	return seconds(float64(n-b) / float64(b) * service)
}

type rooflinePacer struct {
	memFixed, memPerCtx float64 // seconds
	perToken            float64 // compute seconds per token
	overhead            float64 // fixed seconds of every step
	model               Model
	weightBW            float64 // seconds per parameter read
	batch, prompt       int
	rate                float64
	closed, chunked     bool
	room                int // prefill tokens per chunked step
	lengths, output     Lengths
	wait                float64 // closed loop: seconds in the server's queue before the prefill

	now     float64    // seconds since the turn's request
	arrival float64    // next open-loop request
	queue   int        // prefill tokens waiting (chunked)
	steps   int        // decode steps of the turn so far
	others  finishHeap // closed loop: the step at which each other request ends
}

// finishHeap is a min-heap of the decode steps at which the closed loop's
// other requests end; its size never changes (heap.Fix only), so it
// allocates nothing per step.
type finishHeap []int

func (h finishHeap) Len() int           { return len(h) }
func (h finishHeap) Less(i, j int) bool { return h[i] < h[j] }
func (h finishHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *finishHeap) Push(x any)        { *h = append(*h, x.(int)) }
func (h *finishHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// step returns a decode step over the batch with our context ctx and
// chunk prefill tokens riding along.
func (p *rooflinePacer) step(ctx, chunk int) float64 {
	mem := p.memFixed + p.memPerCtx*float64(ctx)
	comp := p.perToken * float64(p.batch+chunk)
	return max(mem, comp) + p.overhead
}

// prefill returns a prefill step of n tokens run on its own.
func (p *rooflinePacer) prefill(n int) float64 {
	return max(p.model.WeightsRead(n)*p.weightBW, p.perToken*float64(n)) + p.overhead
}

// drawOutput returns a closed-loop answer length (at least one token).
func (p *rooflinePacer) drawOutput(rng *rand.Rand) int {
	return max(1, p.output.Draw(rng))
}

func (p *rooflinePacer) Begin(rng *rand.Rand) time.Duration {
	p.queue, p.steps = 0, 0
	p.now = p.wait + p.prefill(p.prompt)
	p.arrival = math.Inf(1)
	if p.rate > 0 {
		// Poisson arrivals are memoryless: the load's phase is random
		p.arrival = rng.ExpFloat64() / p.rate
	}
	if p.closed {
		// each other request is somewhere in its answer: a random phase
		for i := range p.others {
			p.others[i] = 1 + rng.IntN(p.drawOutput(rng))
		}
		heap.Init(&p.others)
	}
	return seconds(p.now)
}

func (p *rooflinePacer) Step(rng *rand.Rand, _, generated int) time.Duration {
	ctx := p.prompt + generated
	p.steps++
	var d float64
	switch {
	case p.closed:
		// every other request that ended sends its next prompt
		for len(p.others) > 0 && p.others[0] <= p.steps {
			n := p.lengths.Draw(rng)
			if p.chunked {
				p.queue += n
			} else {
				d += p.prefill(n)
			}
			p.others[0] = p.steps + p.drawOutput(rng)
			heap.Fix(&p.others, 0)
		}
		chunk := min(p.queue, p.room)
		p.queue -= chunk
		d += p.step(ctx, chunk)
	case p.rate == 0:
		d = p.step(ctx, 0)
	case !p.chunked:
		// every prefill that arrived before the next step runs first,
		// and so does any that arrives while they run
		for p.arrival <= p.now+d {
			d += p.prefill(p.lengths.Draw(rng))
			p.arrival += rng.ExpFloat64() / p.rate
		}
		d += p.step(ctx, 0)
	default:
		for p.arrival <= p.now {
			p.queue += p.lengths.Draw(rng)
			p.arrival += rng.ExpFloat64() / p.rate
		}
		chunk := min(p.queue, p.room)
		p.queue -= chunk
		d = p.step(ctx, chunk)
	}
	p.now += d
	return seconds(d)
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// Defaults of the roofline model.
const (
	// DefaultBandwidthEfficiency is the share of the data-sheet memory
	// bandwidth a decode step achieves.
	DefaultBandwidthEfficiency = 0.8
	// DefaultComputeEfficiency is the share of the data-sheet tensor
	// throughput a prefill achieves (model FLOPs utilization).
	DefaultComputeEfficiency = 0.5
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
// memory bandwidth times BandwidthEfficiency, and computes 2 x active
// parameters FLOPs per token at the tensor throughput times
// ComputeEfficiency; the step takes the longer of the two, plus Overhead.
// The turn's own context grows from Prompt by one token per token; the
// other Batch-1 sequences hold Context tokens on average. The turn's TTFT
// is its own prefill: the longer of reading the weights and computing
// 2 x active parameters x Prompt FLOPs, plus Overhead (no queueing).
//
// Prefill interference: other requests arrive as a Poisson process. Their
// prefill is compute-bound (2 x active parameters x prompt tokens FLOPs).
// Without chunked prefill it runs as a step of its own and stalls every
// running decode for its whole length; with chunked prefill each step
// carries at most Budget tokens (decodes included), so a long prompt is
// spread over many slightly slower steps.
type Roofline struct {
	GPU   GPU
	Model Model
	// GPUs is the tensor-parallel degree (0 means 1): bandwidth, compute
	// and memory add up, communication is free.
	GPUs int
	// Weights and KVCache name the number formats (Dtypes; "" is bf16).
	Weights, KVCache string
	// Batch is the number of sequences decoding together (ours included).
	Batch int
	// Prompt is the turn's own prompt length (0: DefaultPrompt).
	Prompt int
	// Context is the mean context of the other sequences in the batch
	// (0: Prompt + 256).
	Context int
	// BandwidthEfficiency and ComputeEfficiency scale the data sheet (0:
	// the defaults).
	BandwidthEfficiency, ComputeEfficiency float64
	// Overhead is added to every step (scheduling, kernel launches).
	Overhead time.Duration
	// Prefill is the interfering load.
	Prefill Prefill
}

// Prefill is the load of other requests whose prefill interrupts decoding.
type Prefill struct {
	// Rate is the arrival rate in requests per second (0: no load).
	Rate float64
	// Prompt is the distribution of their prompt lengths in tokens.
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

// PromptTokens returns the turn's prompt length.
func (r Roofline) PromptTokens() int {
	if r.Prompt > 0 {
		return r.Prompt
	}
	return DefaultPrompt
}

// OtherContext returns the mean context of the other sequences.
func (r Roofline) OtherContext() int {
	if r.Context > 0 {
		return r.Context
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

// Bandwidth returns the achieved memory bandwidth, all GPUs together.
func (r Roofline) Bandwidth() float64 {
	return r.GPU.Bandwidth * float64(r.gpus()) * orDefault(r.BandwidthEfficiency, DefaultBandwidthEfficiency)
}

// FLOPS returns the achieved tensor throughput for the weights' format,
// all GPUs together.
func (r Roofline) FLOPS() float64 {
	f := r.GPU.FLOPS16
	if (r.Weights == "fp8" || r.Weights == "int8") && r.GPU.FLOPS8 > 0 {
		f = r.GPU.FLOPS8
	}
	return f * float64(r.gpus()) * orDefault(r.ComputeEfficiency, DefaultComputeEfficiency)
}

// MemoryNeeded returns the bytes the weights and the batch's KV cache
// occupy.
func (r Roofline) MemoryNeeded(batch int) float64 {
	wb, _ := dtypeBytes(r.Weights)
	kb, _ := dtypeBytes(r.KVCache)
	ctx := max(r.OtherContext(), r.PromptTokens())
	return r.Model.Params*wb + float64(batch*ctx)*r.Model.KVBytesPerToken(kb)
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
	return int(free / per)
}

// Load returns the share of time the GPU spends on the interfering
// prefills: arrival rate x mean prefill time. At 1 or above the queue
// grows without end.
func (r Roofline) Load() float64 {
	if r.Prefill.Rate == 0 {
		return 0
	}
	return r.Prefill.Rate * r.prefillTime(r.Prefill.Prompt.Mean)
}

func (r Roofline) prefillTime(tokens float64) float64 {
	return 2 * r.Model.Active * tokens / r.FLOPS()
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
	switch {
	case !(r.GPU.Bandwidth > 0) || !(r.GPU.FLOPS16 > 0) || !(r.GPU.Memory > 0):
		return fmt.Errorf("%w: gpu %q needs positive bandwidth, FLOPS and memory", ErrModel, r.GPU.Name)
	case r.GPUs < 0:
		return fmt.Errorf("%w: gpus must not be negative, got %d", ErrModel, r.GPUs)
	case r.Batch < 1:
		return fmt.Errorf("%w: batch must be at least 1, got %d", ErrModel, r.Batch)
	case r.Prompt < 0 || r.Context < 0:
		return fmt.Errorf("%w: prompt and context must not be negative", ErrModel)
	case !(r.BandwidthEfficiency >= 0 && r.BandwidthEfficiency <= 1):
		return fmt.Errorf("%w: bandwidth efficiency must be in (0, 1], got %v", ErrModel, r.BandwidthEfficiency)
	case !(r.ComputeEfficiency >= 0 && r.ComputeEfficiency <= 1):
		return fmt.Errorf("%w: compute efficiency must be in (0, 1], got %v", ErrModel, r.ComputeEfficiency)
	case r.Overhead < 0:
		return fmt.Errorf("%w: overhead must not be negative, got %v", ErrModel, r.Overhead)
	case !(r.Prefill.Rate >= 0) || math.IsInf(r.Prefill.Rate, 0):
		return fmt.Errorf("%w: prefill rate must be a number >= 0, got %v", ErrModel, r.Prefill.Rate)
	case r.Prefill.Budget < 0:
		return fmt.Errorf("%w: prefill token budget must not be negative, got %d", ErrModel, r.Prefill.Budget)
	case r.Prefill.Chunked && r.Budget() <= r.Batch:
		return fmt.Errorf("%w: chunked prefill token budget %d leaves no room beside a batch of %d", ErrModel, r.Budget(), r.Batch)
	}
	if err := r.Prefill.Prompt.Validate(); err != nil {
		return fmt.Errorf("prefill prompt: %w", err)
	}
	if mb := r.MaxBatch(); r.Batch > mb {
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

// With sets ParamBatch, ParamRate (prefill arrivals per second) or
// ParamPrompt (the interfering prompts' mean length).
func (r Roofline) With(p Param, v float64) (Timing, error) {
	switch p {
	case ParamBatch:
		r.Batch = int(math.Round(v))
	case ParamRate:
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
	s := fmt.Sprintf("roofline: %s in %s on %dx %s, batch %d, prompt %d, context %d",
		r.Model.Name, orName(r.Weights), r.gpus(), r.GPU.Name, r.Batch, r.PromptTokens(), r.OtherContext())
	if r.Prefill.Rate > 0 {
		mode := "unchunked"
		if r.Prefill.Chunked {
			mode = fmt.Sprintf("chunked (budget %d)", r.Budget())
		}
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
	p := &rooflinePacer{
		memFixed:   (r.Model.WeightsRead(r.Batch)*wb + kv*float64((r.Batch-1)*r.OtherContext())) / bw,
		memPerCtx:  kv / bw,
		weightTime: r.Model.WeightsRead(r.Batch) * wb / bw,
		perToken:   2 * r.Model.Active / r.FLOPS(),
		overhead:   r.Overhead.Seconds(),
		batch:      r.Batch,
		prompt:     r.PromptTokens(),
		rate:       r.Prefill.Rate,
		chunked:    r.Prefill.Chunked,
		room:       r.Budget() - r.Batch,
		lengths:    r.Prefill.Prompt,
	}
	p.lengths.prepare()
	return p
}

type rooflinePacer struct {
	memFixed, memPerCtx float64 // seconds
	weightTime          float64 // seconds to read the weights alone
	perToken            float64 // compute seconds per token
	overhead            float64
	batch, prompt       int
	rate                float64
	chunked             bool
	room                int // prefill tokens per chunked step
	lengths             Lengths

	now     float64 // seconds since the turn's request
	arrival float64 // next interfering request
	queue   int     // prefill tokens waiting (chunked)
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
	return max(p.weightTime, p.perToken*float64(n)) + p.overhead
}

func (p *rooflinePacer) Begin(rng *rand.Rand) time.Duration {
	p.queue = 0
	p.now = p.prefill(p.prompt)
	p.arrival = math.Inf(1)
	if p.rate > 0 {
		// Poisson arrivals are memoryless: the load's phase is random
		p.arrival = rng.ExpFloat64() / p.rate
	}
	return seconds(p.now)
}

func (p *rooflinePacer) Step(rng *rand.Rand, _, generated int) time.Duration {
	ctx := p.prompt + generated
	var d float64
	switch {
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

"""Writes the fixtures whose saved summaries must come from numpy itself.

Run with a Python that has numpy (Debian's /usr/bin/python3 has 1.24.2):

    /usr/bin/python3 testdata/gen_fixtures.py

The per-request numbers are made up here; the saved statistics are computed
with numpy the way each tool computes them (vLLM bench serve's
calculate_metrics, benchmark_serving.py of 2024), so the Go tests compare
underrun's figures with numpy's own arithmetic.
"""
import json
import random

import numpy as np


def stats(values, name, out, percentiles=(99,)):
    """vLLM's process_one_metric: np.mean(x or 0) * 1000 and so on."""
    v = values or 0
    out[f"mean_{name}_ms"] = float(np.mean(v) * 1000)
    out[f"median_{name}_ms"] = float(np.median(v) * 1000)
    out[f"std_{name}_ms"] = float(np.std(v) * 1000)
    for p in percentiles:
        out[f"p{p}_{name}_ms"] = float(np.percentile(v, p) * 1000)


def vllm_tight():
    """vllm bench serve (2026 layout) with a tight distribution: the TTFTs
    differ by tenths of a nanosecond, the ITLs by picoseconds, so whole
    nanoseconds would round the spread away."""
    rng = random.Random(17)
    n = 40
    ttfts, itls, lens, lats, texts, errors, starts = [], [], [], [], [], [], []
    for i in range(n):
        if i == 7:  # one failed request: left out of every statistic
            ttfts.append(0.0), itls.append([]), lens.append(0), lats.append(0.0)
            texts.append(""), errors.append("TimeoutError"), starts.append(1764669600.0 + i * 0.05)
            continue
        ttft = 0.1 + rng.randrange(1000) * 1e-13
        gaps = [0.02 + rng.randrange(1000) * 1e-15 for _ in range(rng.randrange(3, 9))]
        lat = ttft
        for g in gaps:
            lat += g
        lat += rng.randrange(100) * 1e-14  # time.perf_counter's own last stamp
        ttfts.append(ttft), itls.append(gaps), lats.append(lat)
        lens.append(len(gaps) + 1 + (i % 3 == 0))  # some chunks carry 2 tokens
        texts.append(" ".join(["word"] * (len(gaps) + 1)))
        errors.append("")
        starts.append(1764669600.0 + i * 0.05)
    ok = [i for i in range(n) if not errors[i]]
    out = {
        "date": "20261202-101500", "endpoint_type": "openai-chat", "backend": "openai-chat",
        "label": None, "model_id": "example/voice-8b", "tokenizer_id": "example/voice-8b",
        "num_prompts": n, "request_rate": "inf", "burstiness": 1.0, "max_concurrency": 4,
        "duration": 2.5, "completed": len(ok), "failed": n - len(ok),
        "total_input_tokens": 12 * n, "total_output_tokens": sum(lens),
        "request_throughput": len(ok) / 2.5,
    }
    # goodput with SLOs that cut through the tight TTFTs (ttft:100.00000005)
    slo = {"ttft": 100.00000005, "tpot": 20.0000000005, "e2el": 300.0}
    good = 0
    for i in ok:
        tpot = (lats[i] - ttfts[i]) / (lens[i] - 1) if lens[i] > 1 else 0.0
        if all(s / 1000 >= r for s, r in zip(slo.values(), (ttfts[i], tpot, lats[i]))):
            good += 1
    out["request_goodput"] = good / 2.5
    out.update({
        "output_throughput": sum(lens) / 2.5, "total_token_throughput": (12 * n + sum(lens)) / 2.5,
        "input_lens": [12] * n, "output_lens": lens, "ttfts": ttfts, "itls": itls,
        "latencies": lats, "start_times": starts, "queue_times": [0.0] * n,
        "generated_texts": texts, "errors": errors,
        "max_output_tokens_per_s": 160.0, "max_concurrent_requests": 4, "rtfx": 0.0,
    })
    tpots = [(lats[i] - ttfts[i]) / (lens[i] - 1) for i in ok if lens[i] > 1]
    pooled = [g for i in ok for g in itls[i]]
    stats([ttfts[i] for i in ok], "ttft", out)
    stats(tpots, "tpot", out)
    stats(pooled, "itl", out)
    stats([lats[i] for i in ok], "e2el", out)
    with open("testdata/vllm/tight/result.json", "w") as f:
        json.dump(out, f)
    with open("testdata/vllm/tight/goodput.json", "w") as f:
        json.dump({"slo_ms": slo, "good": good, "completed": len(ok), "requests": n}, f)


def vllm_2024():
    """benchmark_serving.py of 2024: best_of, use_beam_search, no
    start_times, and a request's latency taken at [DONE], after the last
    token (3 to 6 ms later here), which the file does not keep."""
    rng = random.Random(24)
    n = 12
    ttfts, itls, lens, texts, errors, lats = [], [], [], [], [], []
    for i in range(n):
        ttft = round(0.05 + rng.random() * 0.1, 6)
        gaps = [round(0.018 + rng.random() * 0.01, 6) for _ in range(rng.randrange(6, 14))]
        lat = ttft + sum(gaps) + 0.003 + rng.random() * 0.003
        ttfts.append(ttft), itls.append(gaps), lats.append(lat)
        lens.append(len(gaps) + 1), texts.append(" ".join(["word"] * (len(gaps) + 1))), errors.append("")
    out = {
        "date": "20240612-093000", "backend": "vllm", "model_id": "meta-llama/Llama-2-7b-hf",
        "tokenizer_id": "meta-llama/Llama-2-7b-hf", "best_of": 1, "use_beam_search": False,
        "num_prompts": n, "request_rate": "inf", "duration": 1.8, "completed": n,
        "total_input_tokens": 20 * n, "total_output_tokens": sum(lens),
        "request_throughput": n / 1.8, "input_throughput": 20 * n / 1.8, "output_throughput": sum(lens) / 1.8,
        "input_lens": [20] * n, "output_lens": lens, "ttfts": ttfts, "itls": itls,
        "generated_texts": texts, "errors": errors,
    }
    stats(ttfts, "ttft", out)
    stats([(lats[i] - ttfts[i]) / (lens[i] - 1) for i in range(n)], "tpot", out)
    stats([g for x in itls for g in x], "itl", out)
    stats(lats, "latency", out)
    with open("testdata/vllm/v2024/result.json", "w") as f:
        json.dump(out, f)


def aiperf_summary():
    """profile_export_aiperf.json beside testdata/aiperf/basic: AIPerf's
    MetricArray.to_result over the profiling records that succeeded, in
    nanoseconds (np.percentile, np.mean, np.std), then shown in ms."""
    scale = {"ms": 1e6, "s": 1e9, "ns": 1}
    ttft, lat, itl, icl, errors = [], [], [], [], []
    for line in open("testdata/aiperf/basic/profile_export.jsonl"):
        rec = json.loads(line)
        md, m = rec["metadata"], rec["metrics"]
        if (md.get("benchmark_phase") or md.get("credit_phase")) == "warmup":
            continue
        if rec["error"] is not None:
            errors.append(rec["error"])
            continue
        first = m.get("time_to_first_token") or m["ttft"]
        t = round(first["value"] * scale[first["unit"]])
        gaps = [round(g * scale[m["inter_chunk_latency"]["unit"]]) for g in m.get("inter_chunk_latency", {}).get("value", [])]
        end = t + sum(gaps)
        ttft.append(t), lat.append(end), icl.extend(gaps)
        osl = (m.get("output_sequence_length") or {}).get("value")
        if osl is None:
            osl = m["output_token_count"]["value"] + (m.get("reasoning_token_count") or {}).get("value", 0)
        if osl >= 2 and gaps:
            itl.append((end - t) / (osl - 1))

    def result(values, unit="ms"):
        a = np.array(values, dtype=float)
        ps = np.percentile(a, [1, 5, 10, 25, 50, 75, 90, 95, 99])
        out = {"unit": unit, "avg": float(np.mean(a)) / 1e6}
        out.update({f"p{p}": float(v) / 1e6 for p, v in zip([1, 5, 10, 25, 50, 75, 90, 95, 99], ps)})
        out.update({"min": float(np.min(a)) / 1e6, "max": float(np.max(a)) / 1e6, "std": float(np.std(a)) / 1e6})
        return out

    out = {
        "schema_version": "1.0", "aiperf_version": "0.4.0", "benchmark_id": "fixture",
        "request_throughput": {"unit": "requests/sec", "avg": 2.0},
        "request_latency": result(lat), "request_count": {"unit": "requests", "avg": len(ttft)},
        "time_to_first_token": result(ttft), "inter_token_latency": result(itl),
        "inter_chunk_latency": result(icl),
        "output_sequence_length": {"unit": "tokens", "avg": 4.0, "min": 1, "max": 6},
        "benchmark_duration": {"unit": "sec", "avg": 2.5},
        "error_request_count": {"unit": "requests", "avg": len(errors)},
        "input_config": {"endpoint": {"model_names": ["example/voice-8b"], "streaming": True}, "loadgen": {"concurrency": 2}},
        "was_cancelled": False, "error_summary": [],
    }
    # error_summary: AIPerf's ErrorDetailsCount, one per distinct error
    for e in errors:
        for s in out["error_summary"]:
            if s["error_details"] == e:
                s["count"] += 1
                break
        else:
            out["error_summary"].append({"error_details": e, "count": 1})
    with open("testdata/aiperf/basic/profile_export_aiperf.json", "w") as f:
        json.dump(out, f, indent=2)


def llmperf():
    """token_benchmark_ray.py's two files: the individual responses (the
    client's ttft, end-to-end latency and sum of chunk gaps, which the
    benchmark divides by the tokenizer's count of output tokens) and the
    summary of the requests without an error_code (metrics_summary: pandas
    quantiles, mean, min, max and std, which divides by n - 1: numpy with
    ddof=1 here), flattened with "_"."""
    rng = random.Random(7)
    rows = []
    for i in range(9):
        ttft = 0.2 + rng.random() * 0.3
        n = rng.randrange(40, 120)
        last = ttft + n * (0.02 + rng.random() * 0.01)
        e2e = last + 0.002 + rng.random() * 0.003
        row = {"error_code": None, "error_msg": "", "inter_token_latency_s": last / n, "ttft_s": ttft,
               "end_to_end_latency_s": e2e, "request_output_throughput_token_per_s": n / e2e,
               "number_total_tokens": 550 + n, "number_output_tokens": n, "number_input_tokens": 550}
        if i == 4:
            row.update({"error_code": 429, "error_msg": "Too Many Requests", "inter_token_latency_s": 0,
                        "ttft_s": 0, "number_output_tokens": 0, "number_total_tokens": 550})
        rows.append(row)
    name = "testdata/llmperf/basic/example-voice-8b_550_80"
    with open(name + "_individual_responses.json", "w") as f:
        json.dump(rows, f, indent=4)
    ok = [r for r in rows if r["error_code"] is None]
    results = {}
    for key in ["inter_token_latency_s", "ttft_s", "end_to_end_latency_s", "request_output_throughput_token_per_s",
                "number_input_tokens", "number_output_tokens"]:
        a = np.array([r[key] for r in ok], dtype=float)
        q = {f"p{int(p * 100)}": float(np.quantile(a, p)) for p in [0.25, 0.5, 0.75, 0.9, 0.95, 0.99]}
        results[key] = {"quantiles": q, "mean": float(np.mean(a)), "min": float(np.min(a)),
                        "max": float(np.max(a)), "stddev": float(np.std(a, ddof=1))}
    results.update({"num_requests_started": len(rows), "error_rate": 1 / len(rows), "number_errors": 1,
                    "error_code_frequency": "{429: 1}", "mean_output_throughput_token_per_s": 300.0,
                    "num_completed_requests": len(ok), "num_completed_requests_per_min": 60.0})
    summary = {"version": "2023-08-31", "name": "example-voice-8b_550_80_summary", "model": "example/voice-8b",
               "mean_input_tokens": 550, "stddev_input_tokens": 0, "mean_output_tokens": 80,
               "stddev_output_tokens": 10, "num_concurrent_requests": 2, "additional_sampling_params": {},
               "results": results, "timestamp": 1764669600}

    def flatten(d, parent=""):
        out = {}
        for k, v in d.items():
            key = f"{parent}_{k}" if parent else k
            out.update(flatten(v, key) if isinstance(v, dict) else {key: v})
        return out
    with open(name + "_summary.json", "w") as f:
        json.dump(flatten(summary), f, indent=4)


def guidellm():
    """GuideLLM's benchmarks.json (report version 2): requests by status
    with their timings and GuideLLM's computed per-request figures, and
    the metrics GuideLLM derives from them: DistributionSummary.from_values
    (equal values merged, zero weights dropped, probability by weight,
    weighted mean and variance, percentiles by np.searchsorted on the
    cumulative probability), TTFT and latency weighted 1, inter-token
    latency by output_tokens - 1, time per output token by output_tokens."""
    rng = random.Random(11)
    t0 = 1764670000.0

    def request(i, status):
        start = t0 + i * 0.5 + rng.random() * 0.01
        first = start + 0.1 + rng.random() * 0.2
        iters = rng.randrange(5, 30)
        tokens = iters + rng.randrange(0, 4)  # an iteration may bring several
        last = first + (iters - 1) * (0.02 + rng.random() * 0.01)
        end = last + 0.003
        words = " ".join(["word"] * (tokens // 2))
        timings = {"targeted_start": start - 0.001, "queued": start - 0.001, "dequeued": start - 0.0005,
                   "resolve_start": start - 0.0001, "request_start": start, "first_request_iteration": first,
                   "first_token_iteration": first, "first_output_token_iteration": first + (0.05 if i == 2 else 0),
                   "last_token_iteration": last, "last_request_iteration": last, "request_iterations": iters,
                   "token_iterations": iters, "request_end": end, "resolve_end": end + 0.0001, "finalized": end + 0.001}
        r = {"type_": "generative_request_stats", "request_id": f"req-{i}", "response_id": f"resp-{i}",
             "output": words, "info": {"timings": timings, "error": None},
             "input_metrics": {"text_words": 40, "total_tokens": 64},
             "output_metrics": {"text_words": tokens // 2, "total_tokens": tokens},
             "request_start_time": start, "request_end_time": end, "request_latency": end - start,
             "prompt_tokens": 64, "output_tokens": tokens, "total_tokens": 64 + tokens,
             "time_to_first_token_ms": 1000 * (first - start),
             "time_per_output_token_ms": 1000 * (last - start) / tokens,
             "inter_token_latency_ms": 1000 * (last - first) / (tokens - 1)}
        if status == "errored":
            r["info"]["error"] = "HTTP 500: Internal Server Error"
        return r

    ok = [request(i, "successful") for i in range(7)]
    errored = [request(7, "errored")]
    incomplete = [request(8, "incomplete")]

    def dist(pairs):
        values = np.array([v for v, _ in pairs], dtype=float)
        weights = np.array([w for _, w in pairs], dtype=float)
        count = round(np.sum(weights).item())
        order = np.argsort(values)
        uv, inv = np.unique(values[order], return_inverse=True)
        cw = np.zeros_like(uv)
        np.add.at(cw, inv, weights[order])
        keep = cw > 0
        uv, cw = uv[keep], cw[keep]
        probs = cw / np.sum(cw)
        cdf = np.cumsum(probs)
        pct = {k: float(uv[np.searchsorted(cdf, q, side="left")]) for k, q in
               {"p001": 0.001, "p01": 0.01, "p05": 0.05, "p10": 0.1, "p25": 0.25, "p50": 0.5, "p75": 0.75,
                "p90": 0.9, "p95": 0.95, "p99": 0.99, "p999": 0.999}.items()}
        mean = float(np.sum(uv * probs))
        var = float(np.sum((uv - mean) ** 2 * probs))
        return {"mean": mean, "median": pct["p50"], "mode": float(uv[np.argmax(probs)]), "variance": var,
                "std_dev": var ** 0.5, "min": float(uv[0]), "max": float(uv[-1]), "count": count,
                "total_sum": mean * count, "percentiles": pct, "pdf": None}

    def status_dist(f):
        return {"successful": dist([f(r) for r in ok]), "incomplete": dist([f(r) for r in incomplete]),
                "errored": dist([f(r) for r in errored]), "total": dist([f(r) for r in ok + incomplete + errored])}

    metrics = {
        "request_latency": status_dist(lambda r: (r["request_latency"], 1)),
        "time_to_first_token_ms": status_dist(lambda r: (r["time_to_first_token_ms"], 1)),
        "time_per_output_token_ms": status_dist(lambda r: (r["time_per_output_token_ms"], r["output_tokens"])),
        "inter_token_latency_ms": status_dist(lambda r: (r["inter_token_latency_ms"], r["output_tokens"] - 1)),
        "output_token_count": status_dist(lambda r: (r["output_tokens"], 1)),
    }
    bench = {"type_": "generative_benchmark", "id_": "bench-1", "config": {"profile": {"type_": "concurrent", "streams": [2]}},
             "scheduler_state": {}, "scheduler_metrics": {"measure_start_time": t0, "measure_end_time": t0 + 5},
             "metrics": metrics, "requests": {"successful": ok, "incomplete": incomplete, "errored": errored, "total": None},
             "start_time": t0, "end_time": t0 + 5, "duration": 5.0}
    report = {"metadata": {"version": 2, "guidellm_version": "0.5.0", "python_version": "3.11.7", "platform": "linux"},
              "config": {"target": "http://localhost:8000"}, "benchmarks": [bench]}
    with open("testdata/guidellm/basic/benchmarks.json", "w") as f:
        json.dump(report, f, indent=2)


vllm_tight()
vllm_2024()
aiperf_summary()
llmperf()
guidellm()

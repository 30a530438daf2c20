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
    ttft, lat, itl, icl = [], [], [], []
    for line in open("testdata/aiperf/basic/profile_export.jsonl"):
        rec = json.loads(line)
        md, m = rec["metadata"], rec["metrics"]
        if rec["error"] is not None or (md.get("benchmark_phase") or md.get("credit_phase")) == "warmup":
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
        "input_config": {"endpoint": {"model_names": ["example/voice-8b"], "streaming": True}, "loadgen": {"concurrency": 2}},
        "was_cancelled": False, "error_summary": [],
    }
    with open("testdata/aiperf/basic/profile_export_aiperf.json", "w") as f:
        json.dump(out, f, indent=2)


vllm_tight()
vllm_2024()
aiperf_summary()

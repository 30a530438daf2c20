"""Writes run1-flat/profile_export_aiperf.json: AIPerf's example summary
run1/profile_export_aiperf.json (the "records" layout) in the flat layout
AIPerf writes since ai-dynamo/aiperf commit 43b78902 (2025-10-10, "Match
GenAI-Perf format for json summary export", #343), by the rules of that
commit:

  - each metric moves from "records" to the top level, under its tag;
  - the tags ttft and ttst were renamed time_to_first_token and
    time_to_second_token;
  - MetricResult.to_json_result keeps only the unit and the STAT_KEYS
    (avg, min, max, p1 ... p99, std): tag, header and count go;
  - JsonMetricResult drops the statistics that are None (exclude_if_none);
  - model_dump_json(indent=2, exclude_unset=True) writes the declared
    metrics of JsonExportData in their declared order, then the extra ones,
    then input_config, was_cancelled, error_summary, start_time, end_time.

Run from pipeline/trace/testdata/aiperf: python3 flat_layout.py
"""
import json

DECLARED = [
    "request_throughput", "request_latency", "request_count", "time_to_first_token",
    "time_to_second_token", "inter_token_latency", "output_token_throughput",
    "output_token_throughput_per_user", "output_sequence_length", "input_sequence_length",
    "goodput", "good_request_count", "output_token_count", "reasoning_token_count",
    "min_request_timestamp", "max_response_timestamp", "inter_chunk_latency",
    "total_output_tokens", "total_reasoning_tokens", "benchmark_duration", "total_isl",
    "total_osl", "error_request_count", "error_isl", "total_error_isl",
]
STAT_KEYS = ["avg", "min", "max", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "std"]
RENAMED = {"ttft": "time_to_first_token", "ttst": "time_to_second_token"}
# JsonMetricResult's field order: unit, avg, p1 ... p99, min, max, std
ORDER = ["unit", "avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max", "std"]

old = json.load(open("run1/profile_export_aiperf.json"))
metrics = {}
for tag, m in old["records"].items():
    res = {"unit": m["unit"]}
    for k in STAT_KEYS:
        if m.get(k) is not None:
            res[k] = m[k]
    metrics[RENAMED.get(tag, tag)] = {k: res[k] for k in ORDER if k in res}
out = {k: metrics[k] for k in DECLARED if k in metrics}
out.update({k: v for k, v in metrics.items() if k not in DECLARED})
for k in ("input_config", "was_cancelled", "error_summary", "start_time", "end_time"):
    if k in old:
        out[k] = old[k]
with open("run1-flat/profile_export_aiperf.json", "w") as f:
    f.write(json.dumps(out, indent=2))

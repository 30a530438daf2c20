package trace

import (
	"bytes"
	"io"
)

// NewSGLangReader returns a reader of an SGLang bench_serving result file
// written with --output-details: JSON Lines, one benchmark run per line
// (the tool appends), each with its per-request arrays and saved summary.
// Turns of a file with several runs are named run<N>-<request>; Run tells
// which run a turn belongs to, and each run is compared with its own
// summary. See ColumnarReader.
func NewSGLangReader(r io.Reader, name string) (*ColumnarReader, error) {
	return &ColumnarReader{tool: ToolSGLang, name: name, input: r}, nil
}

// sniffSGLang recognizes an SGLang result line: a JSON object with the
// keys only SGLang writes.
func sniffSGLang(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) == 0 || head[0] != '{' {
		return false
	}
	line, _, _ := bytes.Cut(head, []byte("\n"))
	for _, k := range sglangKeys {
		if bytes.Contains(line, []byte(k)) {
			return true
		}
	}
	return false
}

// sglangKeys are the keys only SGLang writes, quoted as in the file.
var sglangKeys = []string{`"total_output_tokens_retokenized"`, `"mean_e2e_latency_ms"`, `"median_e2e_latency_ms"`}

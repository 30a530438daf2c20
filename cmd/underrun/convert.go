package main

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

func init() { commands = append(commands, newConvertCommand) }

const convertLong = `Read token traces or benchmark result files in any format underrun knows and
write them as one native underrun trace (JSON Lines: header, turn, chunk, end
records), so every other command works on every format.

Formats (told from the content, or named with --format):
%s
Chunk arrival times are rebuilt exactly as the tools measured them (the first
chunk at the TTFT, each next one an inter-token or inter-chunk latency later).
Where a file keeps the generated text only whole (vLLM, SGLang), the words are
spread over the chunks in order; where it keeps only counts (AIPerf), the
chunks are text-less tokens. Reasoning tokens are marked as reasoning, failed
and cancelled requests keep their status.

Reads the named files, or standard input when there are none or for "-".
-o FILE is written beside FILE and put in place when complete: on an error,
what was at FILE is left as it was (FILE may even be one of the inputs).
Exit codes: 0 done; 2 bad usage or bad input.`

const convertExample = `  underrun convert result.json -o trace.jsonl            # vLLM bench serve --save-detailed
  underrun convert profile_export.jsonl -o aiperf.jsonl   # AIPerf
  underrun convert --format sglang run.jsonl > trace.jsonl
  cat profile_export.json | underrun convert | underrun analyze`

type convertCommand struct {
	env    *env
	format string
	out    string
}

func newConvertCommand(e *env) *cobra.Command {
	c := &convertCommand{env: e}
	formats := ""
	for _, f := range trace.Formats {
		formats += fmt.Sprintf("  %-11s %s\n", f.Name, f.Describe)
	}
	cmd := newCommand("convert [FILE...]", "Write any supported trace or benchmark file as a native trace",
		fmt.Sprintf(convertLong, formats), convertExample, nil,
		func(cmd *cobra.Command, args []string) error { return c.run(cmd, args) })
	fs := cmd.Flags()
	bindFormat(fs, &c.format, "input")
	fs.StringVarP(&c.out, "output", "o", "-", "write the native trace to `FILE` (- for standard output)")
	return cmd
}

func (c *convertCommand) run(cmd *cobra.Command, args []string) (err error) {
	if len(args) == 0 {
		args = []string{"-"}
	}
	var out io.Writer = c.env.stdout
	if c.out != "-" && c.out != "" {
		// written beside, put in place when complete: an error leaves
		// what was at c.out as it was (it may even be an input)
		f, cerr := createOutput("--output", c.out)
		if cerr != nil {
			return cerr
		}
		defer func() {
			if err != nil {
				f.Abort()
			} else {
				err = f.Commit()
			}
		}()
		out = f
	}
	bw := bufio.NewWriterSize(out, 256<<10)
	w := trace.NewWriter(bw, "convert")
	if err := w.WriteHeader(); err != nil {
		return err
	}
	for _, name := range args {
		prefix := ""
		if len(args) > 1 { // keep the turns of different files apart
			prefix = filepath.Base(name) + "/"
		}
		if err := c.convertFile(cmd, w, name, prefix); err != nil {
			return err
		}
	}
	return bw.Flush()
}

func (c *convertCommand) convertFile(cmd *cobra.Command, w *trace.Writer, name, prefix string) error {
	in, dec, err := openDecoder(c.env, name, c.format)
	if err != nil {
		return err
	}
	defer in.Close()
	turns := 0
	err = in.each(cmd.Context(), dec, func(t *pipeline.Turn) error {
		if err := t.Validate(); err != nil {
			return usageError{fmt.Errorf("%s: %w", in.label, err)}
		}
		t.ID = prefix + t.ID
		turns++
		return w.WriteTurn(t)
	})
	if td, ok := dec.(trace.ToolDecoder); err == nil && turns == 0 && ok {
		// a summary only: nothing to convert, and the way to get it
		hint := "save the run with its per-request details"
		if s := td.ToolSummaries(); len(s) > 0 && s[0].Hint != "" {
			hint = s[0].Hint
		}
		return usagef("%s: %s's summary only, no requests to convert; %s", in.label, td.Tool().Title(), hint)
	}
	return err
}

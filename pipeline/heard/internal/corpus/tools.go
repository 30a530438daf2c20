package corpus

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
)

// Tool is an outside program a condition runs, with a file format it must
// have where that is a plug-in of its own.
type Tool struct {
	// Program is the program; Format a file format it must list (sox's
	// formats come in Debian packages of their own), or empty.
	Program, Format string
	// Install says what installs it.
	Install string
}

// The tools the conditions run: sox (its MP3 format, libmp3lame through
// libsox-fmt-mp3, is a package of its own; GSM 06.10 is in
// libsox-fmt-base, which sox depends on), and opus-tools' encoder and
// decoder.
var (
	SoxTool = Tool{Program: Sox, Install: "apt-get install sox"}
	SoxMP3  = Tool{Program: Sox, Format: "mp3", Install: "apt-get install libsox-fmt-mp3"}
	SoxGSM  = Tool{Program: Sox, Format: "gsm", Install: "apt-get install libsox-fmt-base"}
	OpusEnc = Tool{Program: "opusenc", Install: "apt-get install opus-tools"}
	OpusDec = Tool{Program: "opusdec", Install: "apt-get install opus-tools"}
)

var soxOnly = []Tool{SoxTool}

var toolsFound probes[Tool]

// Available reports whether the tool is here: nil, or an error wrapping
// ErrMissing that says what to install.
func (t Tool) Available(ctx context.Context) error {
	return toolsFound.once(t, func() error { return t.probe(ctx) })
}

// soxFormats finds the list of formats in sox's help.
var soxFormats = regexp.MustCompile(`(?m)^AUDIO FILE FORMATS:(.*)$`)

func (t Tool) probe(ctx context.Context) error {
	if _, err := exec.LookPath(t.Program); err != nil {
		return fmt.Errorf("%s %w (%s): %w", t.Program, ErrMissing, t.Install, err)
	}
	if t.Format == "" {
		return nil
	}
	// sox -h exits 0 and lists the formats its plug-ins give it
	out, err := exec.CommandContext(ctx, t.Program, "-h").Output()
	if err != nil {
		return fmt.Errorf("%s -h: %w", t.Program, err)
	}
	m := soxFormats.FindSubmatch(out)
	if m == nil || !slices.Contains(strings.Fields(string(m[1])), t.Format) {
		return fmt.Errorf("%s's %s format %w (%s)", t.Program, t.Format, ErrMissing, t.Install)
	}
	return nil
}

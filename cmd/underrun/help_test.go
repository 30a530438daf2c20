package main

import (
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagName is what a flag name means across every command: its value's
// types (pflag's), the value name its help shows, its shorthand, and its
// meaning in words.
type flagName struct {
	types, value, short, meaning string
}

// flagNames is the table every command's flags are held to: one meaning
// per name. A new flag takes a name from here with the meaning it has, or
// adds a name with its meaning; a name used with another type or value
// name fails TestFlagNames.
var flagNames = map[string]flagName{
	"aligned":           {"bool", "", "", "keep every load session's turns in step"},
	"allow-host":        {"stringSlice", "HOST", "", "a Host name a server answers besides loopback ones"},
	"api":               {"string", "string", "", "the endpoint of --url: chat or completions"},
	"api-key-env":       {"string", "string", "", "the environment variable holding --url's API key"},
	"audio-engine":      {"string", "ENGINE", "", "the speech engine that speaks --wav and --play, or that voice calibrate measures"},
	"burst":             {"int", "int", "", "messages an ingest connection may send at once above --max-rate"},
	"channel":           {"string", "CHANNEL", "", "the channel of a recording to hear"},
	"check":             {"bool", "", "", "fail when what was heard differs from the prediction"},
	"chunk-rate":        {"float64", "float", "", "chunks per second per load session"},
	"chunking":          {"string", "POLICY", "", "the chunking policy of the speech model"},
	"chunks":            {"bool", "", "", "list every speech chunk in the report"},
	"clock":             {"string", "string", "", "how a chunk from --url is timed: kernel or read"},
	"concurrency":       {"int", "int", "", "requests in flight"},
	"duration":          {"duration", "duration", "", "how long the load runs"},
	"espeak-voice":      {"string", "VOICE", "", "espeak-ng's voice (-v)"},
	"espeak-wpm":        {"int", "int", "", "espeak-ng's speaking rate in words per minute (-s)"},
	"events":            {"string", "FILE", "", "the zerolog JSON event log's file (- for stderr)"},
	"filler":            {"string", "string", "", "what the app plays in a tool call's silence"},
	"find":              {"stringArray", "PARAM", "", "a parameter whose limit sim finds"},
	"force":             {"bool", "", "", "replace an existing recording or event log"},
	"format":            {"string", "FORMAT", "", "the input trace's format"},
	"gc-memory":         {"int", "MiB", "", "the heap the monitor lets grow between collections"},
	"goodput":           {"stringArray", "KEY:MS", "", "request goodput SLOs, as vLLM bench serve counts them"},
	"goodput-min":       {"float64", "float", "", "the fraction of requests that must meet --goodput"},
	"goodput-target":    {"float64", "float", "", "the speech goodput --find and --sweep answers keep"},
	"grace":             {"duration", "duration", "", "time sessions get to close on shutdown"},
	"help":              {"bool", "", "h", "this command's help"},
	"help-all":          {"bool", "", "", "the command's help with every flag and the details"},
	"idle-timeout":      {"duration", "duration", "", "how long a stream from --url may send nothing"},
	"in-process":        {"bool", "", "", "run monitor load's targets in its own process"},
	"interruption":      {"duration", "duration", "", "the shortest underrun counted as an interruption"},
	"list":              {"int", "N", "", "how many underruns the text report lists"},
	"listen":            {"string|stringArray", "HOST:PORT", "", "the address a server listens on"},
	"load-model":        {"bool", "", "", "the monitor speaks as monitor load expects"},
	"mark-gaps":         {"bool", "", "", "mark each underrun in --wav with a tone"},
	"match-within":      {"duration", "duration", "", "how close a heard gap and a predicted one must be to match"},
	"max-message":       {"int64", "BYTES", "", "the largest ingest message"},
	"max-pages":         {"int", "int", "", "live pages open at once"},
	"max-rate":          {"float64", "float", "", "messages per second an ingest connection may send"},
	"max-sessions":      {"int", "int", "", "ingest connections open at once"},
	"max-subscribers":   {"int", "int", "", "/events subscribers open at once"},
	"max-tokens":        {"int", "int", "", "max_tokens of each request to --url"},
	"max-tpot":          {"bool", "", "", "find each turn's largest constant TPOT with no interruption"},
	"measured":          {"string", "FILE", "", "a speak --record recording whose synthesizer timings to use"},
	"metrics":           {"bool", "", "", "list the metrics an expectation may name"},
	"min-silence":       {"duration", "duration", "", "the shortest silence heard looks at"},
	"model":             {"string", "MODEL", "", "the LLM's model name"},
	"monitor":           {"string", "URL", "", "a running monitor to feed, drive or watch"},
	"monte-carlo":       {"int", "int", "", "turns in the Monte Carlo run"},
	"network":           {"string", "NETWORK", "", "how monitor load reaches its targets: unix or tcp"},
	"nice":              {"int", "int", "", "the nice value to run at"},
	"no-echo":           {"bool", "", "", "skip the echo-server ceiling"},
	"no-usage":          {"bool", "", "", "do not ask --url for the usage chunk"},
	"offset":            {"duration", "duration", "", "where the trace's first request lies in the recording"},
	"origin":            {"stringSlice", "ORIGIN", "", "a browser origin the monitor allows"},
	"otlp":              {"string", "URL", "", "the OTLP/HTTP endpoint turns and metrics go to"},
	"output":            {"string", "FILE", "o", "the file the command writes as its product"},
	"pause":             {"duration", "duration", "", "idle time between turns"},
	"per-turn":          {"bool", "", "", "a line per turn in the report"},
	"period":            {"duration", "duration", "", "how often the paced player drains its buffer"},
	"play":              {"bool", "", "", "play through the sound card"},
	"play-buffer":       {"duration", "duration", "", "the sound card's buffer"},
	"plot":              {"string", "FILE", "", "the file the run is drawn into"},
	"plot-kind":         {"string", "KIND", "", "what plot, or --plot, draws"},
	"preroll":           {"duration", "duration", "", "audio the player buffers before it starts"},
	"priority":          {"string", "PRIORITY", "", "the priority of monitor load's senders"},
	"progress":          {"string", "string", "", "when to show a progress bar"},
	"prompts":           {"string", "FILE", "", "the prompts sent to --url"},
	"queue":             {"int", "int", "", "messages a subscriber may fall behind before it is dropped"},
	"rate":              {"float64", "float", "", "requests started per second (Poisson arrivals)"},
	"record":            {"string", "FILE", "", "the native trace a live run is recorded to"},
	"report":            {"string", "FORMAT", "", "the report's format on stdout: text or json"},
	"requests":          {"int", "int", "", "how many requests to send"},
	"rtf":               {"float64", "float", "", "the synthesizer's real-time factor"},
	"runs":              {"int", "N", "", "how many times each text is synthesized"},
	"scenario":          {"string", "SCENARIO", "", "a scenario whose turns to take"},
	"seed":              {"uint64", "uint", "", "the random seed"},
	"session":           {"string", "NAME", "", "the session name of turns that carry none"},
	"session-header":    {"string", "HEADER", "", "the request header naming a turn's session"},
	"sessions":          {"int", "int", "", "concurrent load sessions"},
	"share-cpus":        {"bool", "", "", "let monitor load's targets and load share every CPU"},
	"speed":             {"float64", "FACTOR", "", "the replay's pace factor"},
	"sse":               {"string", "FILE", "", "the raw SSE capture's file"},
	"stack":             {"string", "STACK", "", "a named framework + TTS stack"},
	"stall":             {"duration", "duration", "", "the length of each load turn's stall"},
	"stall-after":       {"int", "int", "", "chunks before each load turn's stall"},
	"stall-factor":      {"float64", "float", "", "how many median ITLs make a stall"},
	"sweep":             {"string", "PARAM=FROM:TO:STEP", "", "the parameter range sim sweeps"},
	"token":             {"string", "TOKEN", "", "the monitor's bearer token"},
	"token-audio":       {"duration", "duration", "", "the audio every token speaks"},
	"tool-wait":         {"duration", "duration", "", "how long a tool call's turn waits for its results"},
	"tpot-slo":          {"duration", "duration", "", "the TPOT every turn must stay within, where set (else no TPOT SLO)"},
	"ttft-slo":          {"duration", "duration", "", "the TTFT every turn must stay within, where set (else no TTFT SLO)"},
	"trace":             {"string", "FILE", "", "the trace whose turns mock streams"},
	"transport":         {"string", "TRANSPORT", "", "the output transport between player and listener"},
	"tts":               {"bool", "", "", "mock also serves /v1/audio/speech"},
	"tts-api-key-env":   {"string", "string", "", "the environment variable holding --tts-url's API key"},
	"tts-continuation":  {"duration", "duration", "", "the synthesizer's first-audio time of a turn's later chunks"},
	"tts-format":        {"string", "string", "", "--tts-url's response_format"},
	"tts-latency":       {"duration", "duration", "", "the synthesizer's time to first audio"},
	"tts-mode":          {"string", "MODE", "", "how the synthesizer is driven"},
	"tts-model":         {"string", "MODEL", "", "--tts-url's model"},
	"tts-rate":          {"int", "int", "", "--tts-url's PCM sample rate"},
	"tts-speed":         {"float64", "float", "", "--tts-url's speed"},
	"tts-stream-format": {"string", "string", "", "--tts-url's stream_format"},
	"tts-url":           {"string", "URL", "", "an OpenAI-compatible /v1/audio/speech server"},
	"tts-voice":         {"string", "VOICE", "", "--tts-url's voice"},
	"turn":              {"string", "ID", "", "the turn to render or draw"},
	"turn-chunks":       {"int", "int", "", "chunks per load turn"},
	"turn-texts":        {"int", "int", "", "texts sent to --tts-url as one turn"},
	"turns":             {"int", "int", "", "how many of the scenario's turns to play"},
	"url":               {"string", "URL", "", "the LLM server"},
	"voice":             {"string", "FILE", "", "a voice profile from voice calibrate"},
	"warn-tolerance":    {"duration", "duration", "", "the stall tolerance that raises a stall warning"},
	"wav":               {"string", "FILE", "", "the WAV of what the listener hears"},
	"workers":           {"int", "int", "", "goroutines of the Monte Carlo run"},
	"wpm":               {"float64", "float", "", "the voice model's speaking rate in words per minute"},
}

// renamedFlags are the deprecated names kept for one release, by command:
// old name -> the name that replaced it.
var renamedFlags = map[string]map[string]string{
	"":                {"output": "report"},
	"analyze":         {"output": "report"},
	"heard":           {"output": "report"},
	"replay":          {"output": "report", "warn": "warn-tolerance", "to": "monitor"},
	"scenarios":       {"output": "report"},
	"sim":             {"output": "report"},
	"speak":           {"output": "report", "wav-out": "wav", "speed": "espeak-wpm", "warn": "warn-tolerance", "tolerance": "match-within"},
	"stacks":          {"output": "report"},
	"transports":      {"output": "report"},
	"mock":            {"speed": "espeak-wpm"},
	"voice calibrate": {"speed": "espeak-wpm", "engine": "audio-engine"},
	"plot":            {"kind": "plot-kind"},
	"proxy":           {"upstream": "url"},
	"monitor":         {"rate": "max-rate"},
	"monitor feed":    {"to": "monitor"},
	"monitor load":    {"to": "monitor", "rate": "chunk-rate"},
	"monitor watch":   {"to": "monitor"},
}

// TestFlagNames holds every flag of every command to flagNames, and every
// deprecated name to renamedFlags.
func TestFlagNames(t *testing.T) {
	t.Parallel()
	used := map[string]bool{}
	eachCommand(newRootCommand(&env{}), func(path []string, c *cobra.Command) {
		c.InitDefaultHelpFlag()
		where := strings.Join(path, " ")
		renamed := map[string]string{}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if to := f.Annotations[renamedTo]; len(to) == 1 {
				renamed[f.Name] = to[0]
				return
			}
			used[f.Name] = true
			want, ok := flagNames[f.Name]
			if !ok {
				t.Errorf("%q --%s: not in flagNames; reuse a name with its meaning there, or add this one with its meaning", where, f.Name)
				return
			}
			value, _ := pflag.UnquoteUsage(f)
			if !slices.Contains(strings.Split(want.types, "|"), f.Value.Type()) || value != want.value || f.Shorthand != want.short {
				t.Errorf("%q --%s: type %s, value name %q, shorthand %q; flagNames has %s %q %q (%s)",
					where, f.Name, f.Value.Type(), value, f.Shorthand, want.types, want.value, want.short, want.meaning)
			}
		})
		if want := renamedFlags[where]; len(renamed) > 0 || len(want) > 0 {
			if !mapsEqual(renamed, want) {
				t.Errorf("%q: deprecated names %v, renamedFlags has %v", where, renamed, want)
			}
		}
	})
	for name := range flagNames {
		if !used[name] {
			t.Errorf("flagNames has --%s, which no command has", name)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// valueName is a flag's value name in help: one word, a placeholder in
// capitals (FILE, KEY:MS) or pflag's name for the type.
var valueName = regexp.MustCompile(`^([A-Z][A-Za-z0-9]*([:=,._-][A-Z][A-Z0-9]*)*|string|int|int64|uint|float|duration|strings|stringArray)?$`)

// TestFlagValueNames checks that no usage text makes pflag show words of
// it as the value name (`--stack underrun stacks` came of backquotes), and
// that no usage text runs past two hundred characters.
func TestFlagValueNames(t *testing.T) {
	t.Parallel()
	eachCommand(newRootCommand(&env{}), func(path []string, c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			name, usage := pflag.UnquoteUsage(f)
			if !valueName.MatchString(name) {
				t.Errorf("%v --%s: value name %q; want one word in capitals (backquotes in the usage text name it)", path, f.Name, name)
			}
			if strings.Contains(usage, "`") {
				t.Errorf("%v --%s: usage %q has backquotes left: pflag takes only the first pair as the value name", path, f.Name, usage)
			}
			if n := utf8.RuneCountInString(usage); n > 200 {
				t.Errorf("%v --%s: usage text of %d characters; say it in 200 and put the rest in the docs", path, f.Name, n)
			}
		})
	})
}

// displayLines is how many lines text takes on a terminal helpWidth wide.
func displayLines(text string) int {
	n := 0
	for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		n += max(1, (utf8.RuneCountInString(line)+helpWidth-1)/helpWidth)
	}
	return n
}

// flagsListed returns the flag names a help text lists, in order.
func flagsListed(help string) []string {
	var names []string
	_, flags, _ := strings.Cut(help, "\nFlags:\n")
	for _, line := range strings.Split(flags, "\n") {
		if m := flagLine.FindStringSubmatch(line); m != nil {
			names = append(names, m[1])
		}
	}
	return names
}

var flagLine = regexp.MustCompile(`^  (?:-[a-zA-Z], |    )--([a-z0-9-]+)`)

// TestHelpFitsScreen runs --help and --help-all on every command: --help
// takes at most maxHelpLines lines and lists only the command's main
// flags, saying how many more --help-all shows; --help-all lists every
// visible flag.
func TestHelpFitsScreen(t *testing.T) {
	t.Parallel()
	for _, path := range commandPaths() {
		c := findCommand(t, &env{}, path)
		var visible []string
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && f.Name != "help" {
				visible = append(visible, f.Name)
			}
		})
		main, rest := helpFlags(c)
		code, help, errOut := runCLI(t, "", append(slices.Clone(path), "--help")...)
		if code != exitOK || errOut != "" {
			t.Errorf("%v --help: exit %d, stderr %q", path, code, errOut)
		}
		if n := displayLines(help); n > maxHelpLines {
			t.Errorf("%v --help: %d lines of %d columns; at most %d", path, n, helpWidth, maxHelpLines)
		}
		listed := flagsListed(help)
		for _, name := range listed {
			if !slices.ContainsFunc(main, func(f *pflag.Flag) bool { return f.Name == name }) {
				t.Errorf("%v --help lists --%s, not one of its main flags", path, name)
			}
		}
		if len(listed) != len(main) {
			t.Errorf("%v --help lists %v, want its %d main flags", path, listed, len(main))
		}
		if len(rest) > 0 && !strings.Contains(help, "--help-all") {
			t.Errorf("%v --help hides %d flags without naming --help-all", path, len(rest))
		}
		code, all, _ := runCLI(t, "", append(slices.Clone(path), "--help-all")...)
		if code != exitOK {
			t.Errorf("%v --help-all: exit %d", path, code)
		}
		got := flagsListed(all)
		sort.Strings(got)
		want := slices.DeleteFunc(slices.Clone(visible), func(n string) bool { return n == helpAllFlag })
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("%v --help-all lists %v, want every visible flag %v", path, got, want)
		}
		if len(all) <= len(help) && (len(rest) > 0) {
			t.Errorf("%v --help-all is no longer than --help", path)
		}
	}
}

// TestRootHelp checks the entry point: the commands a newcomer needs come
// first, and no flag's text fills the screen.
func TestRootHelp(t *testing.T) {
	t.Parallel()
	code, help, _ := runCLI(t, "", "--help")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	start := strings.Index(help, "Start here:\n  analyze")
	if start < 0 || !strings.Contains(help[start:], "  sim ") || !strings.Contains(help[start:], "  speak ") {
		t.Errorf("root help does not begin its commands with analyze, sim and speak:\n%s", help)
	}
	for _, line := range strings.Split(help, "\n") {
		if strings.Contains(line, "--chunking") && len(line) > helpWidth {
			t.Errorf("root help carries --chunking's text: %q", line)
		}
	}
	if flagsListed(help) != nil {
		t.Errorf("root help lists flags %v; they are analyze's", flagsListed(help))
	}
	// --help-all after "--" is an argument, not a request for help
	if got := withHelpAll([]string{"analyze", "--", "--help-all"}); len(got) != 3 {
		t.Errorf("withHelpAll took --help-all after --: %q", got)
	}
}

// TestOnlyFlagsThatMeanSomething checks that commands do not take flags
// that would do nothing there.
func TestOnlyFlagsThatMeanSomething(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path []string
		not  []string
	}{
		// what the listener hears is analyze's, from the recorded trace
		{[]string{"capture"}, wavFlagNames},
		{[]string{"proxy"}, wavFlagNames},
		// the model's outputs are not what the recording holds
		{[]string{"heard"}, append(slices.Clone(wavFlagNames), "plot-kind", "events", "chunks")},
		// the default run reads no input
		{nil, []string{"format"}},
	} {
		fs := findCommand(t, &env{}, tc.path).Flags()
		for _, name := range tc.not {
			if fs.Lookup(name) != nil {
				t.Errorf("%v has --%s, which does nothing there", tc.path, name)
			}
		}
	}
}

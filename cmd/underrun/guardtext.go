package main

import (
	"fmt"

	"github.com/speech-pipeline/underrun/pipeline"
)

// guardEventText words a live guard event as replay and speak print it
// while they run; ok is false for the kinds they do not print (speech,
// turn).
func guardEventText(e pipeline.Event) (text string, ok bool) {
	switch e.Kind {
	case pipeline.EventDrain:
		if e.Underrun.Cause == pipeline.CauseTool {
			return fmt.Sprintf("silence started: the player ran dry after token %d arrived, while a tool call runs", e.LastToken), true
		}
		return fmt.Sprintf("underrun started: the player ran dry after token %d arrived", e.LastToken), true
	case pipeline.EventUnderrun:
		u := e.Underrun
		if u.Cause == pipeline.CauseTool {
			return fmt.Sprintf("tool-call silence: %.1f ms before token %d (no underrun)", pipeline.Millis(u.Duration), u.Token), true
		}
		return fmt.Sprintf("underrun: %.1f ms %s, %s, token %d (ITL %.1f ms), %s",
			pipeline.Millis(u.Duration), u.Class, u.Cause, u.Token, pipeline.Millis(u.ITL), u.Position), true
	case pipeline.EventStall:
		return fmt.Sprintf("stall warning: %.1f ms of tolerance left after token %d", pipeline.Millis(e.Tolerance), e.LastToken), true
	}
	return "", false
}

// turnEndedText words a guard's turn summary (EventTurn) as replay prints
// it live and proxy logs it, one line a turn.
func turnEndedText(e pipeline.Event) string {
	tally := pipeline.TallyUnderruns(e.Playout.Underruns)
	tools := ""
	if tally.ToolSilences > 0 {
		tools = fmt.Sprintf("; %d tool-call %s, %.0f ms", tally.ToolSilences,
			noun(tally.ToolSilences, "silence", "silences"), pipeline.Millis(tally.ToolSilence))
	}
	return fmt.Sprintf("turn ended (%s): %d %s, %d %s, %.0f ms of silence%s",
		e.Record.Status, tally.Interruptions, noun(tally.Interruptions, "interruption", "interruptions"),
		tally.Glitches, noun(tally.Glitches, "glitch", "glitches"), pipeline.Millis(tally.Silence), tools)
}

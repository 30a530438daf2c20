package tts_test

import "testing"

// livekitPyDiffers names the replies where a real livekit-agents 1.8.9
// (Python) pipeline releases text otherwise than the livekit preset, each
// with its class: none (a reply that comes to differ fails the test).
var livekitPyDiffers = map[string]string{}

// TestPresetsAgainstLiveKitPython holds the livekit preset (LiveKit
// Python's default tokenizer: blingfire sentences, a minimum length, the
// last sentence held) to the release points recorded from a real
// livekit-agents 1.8.9 pipeline (testdata/chunking/expect/livekit-agents-py.jsonl,
// written by cmd/underrun's TestLiveKitPythonReleasePoints): alike except
// on the replies of livekitPyDiffers.
func TestPresetsAgainstLiveKitPython(t *testing.T) {
	t.Parallel()
	agree, classes := againstRecording(t, "livekit", "livekit-agents-py", "LiveKit Python 1.8.9", livekitPyDiffers)
	t.Logf("livekit against a livekit-agents 1.8.9 pipeline: %d of %d replies released exactly alike; the others by class %v",
		agree, len(loadReplies(t)), classes)
}

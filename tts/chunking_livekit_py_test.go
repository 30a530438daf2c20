package tts_test

import "testing"

// liveKitPyDiffers names the replies where a real livekit-agents 1.8.9
// pipeline releases text otherwise than the livekit preset, each with its
// class.
var liveKitPyDiffers = map[string]string{}

// TestPresetsAgainstLiveKitPy holds the livekit preset to the release
// points recorded from a real livekit-agents 1.8.9 pipeline
// (testdata/chunking/expect/livekit-agents-py.jsonl, written by
// cmd/underrun's TestLiveKitPyReleasePoints: openai.LLM streaming each reply
// token by token, LiveKit's StreamAdapter and blingfire sentence tokenizer
// before openai.TTS): the preset releases alike, in text and in the chunk
// that released it, except on the replies of liveKitPyDiffers.
func TestPresetsAgainstLiveKitPy(t *testing.T) {
	t.Parallel()
	agree, classes := againstRecording(t, "livekit", "livekit-agents-py", "livekit-agents 1.8.9", liveKitPyDiffers)
	t.Logf("livekit against a livekit-agents 1.8.9 pipeline: %d of %d replies released exactly alike; the others by class %v",
		agree, len(loadReplies(t)), classes)
}

package monitor

import (
	"encoding/json"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// TypeSpeechChunk is the subscriber message for a speech chunk handed to
// the synthesizer (not the ingest's chunk, a streamed delta), sent only to
// /events subscribers that asked with ?chunks=1.
const TypeSpeechChunk Type = "speech_chunk"

// chunkMessage is a TypeSpeechChunk message: the chunk as pipeline.ChunkReport
// gives it (turn, index, text, release_ms, released_by, token,
// synth_start_ms, first_audio_ms, play_start_ms, play_end_ms, audio_ms),
// with the session, the wall-clock moment of its release and when the
// message was sent.
type chunkMessage struct {
	Type Type `json:"type"`
	pipeline.ChunkReport
	UnixNs     int64  `json:"unix_ns"`
	SentUnixNs int64  `json:"sent_unix_ns"`
	Seq        uint64 `json:"seq"`
}

// publishChunk sends a speech chunk to the subscribers that asked for
// chunks; nothing is encoded when none did.
func (s *Server) publishChunk(e pipeline.Event, session string, begin time.Time) {
	if s.hub.chunkSubs.Load() == 0 {
		return
	}
	c := e.ChunkReport()
	c.Session = session
	b, err := json.Marshal(chunkMessage{Type: TypeSpeechChunk, ChunkReport: c, UnixNs: begin.Add(e.Speech.Release).UnixNano(),
		SentUnixNs: time.Now().UnixNano(), Seq: s.seq.Add(1)})
	if err != nil {
		return
	}
	s.hub.publishChunks(b)
}

// publishChunks sends msg to every subscriber that asked for chunks.
func (h *hub) publishChunks(msg []byte) {
	var failed []*subscriber
	h.mu.RLock()
	for s := range h.subs {
		if s.chunks && !h.write(s, msg) {
			failed = append(failed, s)
		}
	}
	h.mu.RUnlock()
	for _, s := range failed {
		h.drop(s, !s.bc.broken())
	}
}

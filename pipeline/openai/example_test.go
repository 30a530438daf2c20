package openai_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/openai"
)

// A mock server streams a recorded turn; the client records it again,
// each chunk timed as it arrives.
func Example() {
	turn := &pipeline.Turn{ID: "hello", Status: pipeline.StatusOK, Chunks: []pipeline.Chunk{
		{At: 20 * time.Millisecond, Text: "Hello", Tokens: 1},
		{At: 40 * time.Millisecond, Text: " there.", Tokens: 1},
	}}
	srv := httptest.NewServer(&openai.Mock{Turns: []*pipeline.Turn{turn}})
	defer srv.Close()

	c := &openai.Client{BaseURL: srv.URL}
	s, err := c.Stream(context.Background(), "t1", "", openai.Request{Model: "m", Prompt: openai.Prompt{Text: "Hi!"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: %q in %d chunks, %d tokens by usage; role-only chunks %d, [DONE] %v\n",
		s.Turn.Status, s.Turn.Text(), len(s.Turn.Chunks), s.Turn.OutputTokens, s.Stats.RoleOnly, s.Stats.Done)
	fmt.Println("first chunk no earlier than it was sent:", s.Turn.Chunks[0].At >= 20*time.Millisecond)
	// Output:
	// ok: "Hello there." in 2 chunks, 2 tokens by usage; role-only chunks 1, [DONE] true
	// first chunk no earlier than it was sent: true
}

package trace

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// Usage is the token accounting a server reports, in the usage chunk that
// "stream_options": {"include_usage": true} asks for, or in every chunk
// when a server streams usage continuously.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	// ReasoningTokens is completion_tokens_details.reasoning_tokens, when
	// the server reports it.
	ReasoningTokens int `json:"-"`
}

// Delta is what one streamed chunk of a completion carries for the first
// choice (index 0).
type Delta struct {
	// Role is the delta's role ("assistant" on the first chat chunk).
	Role string
	// Content is the spoken text: the chat delta's content, or the
	// completion's text.
	Content string
	// Reasoning is the thought text: reasoning_content or reasoning.
	Reasoning string
	// FinishReason is set on the chunk that ends the choice.
	FinishReason string
	// HasChoice is false for a chunk without a choice 0 (the usage chunk).
	HasChoice bool
	// ToolCalls is true when the delta carries tool calls (not spoken).
	ToolCalls bool
	// OtherChoices counts choices with an index other than 0.
	OtherChoices int
	// Usage is the chunk's usage, or nil.
	Usage *Usage
	// Error is the message of an error object in the stream, or "".
	Error string
}

type wireUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
	Details          *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

type wireChunk struct {
	Object  string `json:"object"`
	Message string `json:"message"`
	Choices []struct {
		Index int `json:"index"`
		Delta *struct {
			Role             string          `json:"role"`
			Content          *string         `json:"content"`
			ReasoningContent *string         `json:"reasoning_content"`
			Reasoning        *string         `json:"reasoning"`
			ToolCalls        json.RawMessage `json:"tool_calls"`
		} `json:"delta"`
		Text         *string `json:"text"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *wireUsage      `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// ParseDelta decodes the data of one streamed chunk. An error object in
// the stream ({"error": {...}} or {"object": "error", ...}) is returned in
// Delta.Error, not as an error: the error return is for data that is not
// a chunk at all.
func ParseDelta(data []byte) (Delta, error) {
	var d Delta
	var w wireChunk
	if err := json.Unmarshal(data, &w); err != nil {
		return d, fmt.Errorf("chunk is not a JSON object: %w", err)
	}
	if len(w.Error) > 0 && !bytes.Equal(w.Error, []byte("null")) {
		d.Error = ErrorMessage(w.Error)
	} else if w.Object == "error" {
		d.Error = w.Message
		if d.Error == "" {
			d.Error = "error object without a message"
		}
	}
	if w.Usage != nil {
		d.Usage = &Usage{PromptTokens: w.Usage.PromptTokens, CompletionTokens: w.Usage.CompletionTokens, TotalTokens: w.Usage.TotalTokens}
		if w.Usage.Details != nil {
			d.Usage.ReasoningTokens = w.Usage.Details.ReasoningTokens
		}
	}
	for _, c := range w.Choices {
		if c.Index != 0 {
			d.OtherChoices++
			continue
		}
		d.HasChoice = true
		if c.FinishReason != nil {
			d.FinishReason = *c.FinishReason
		}
		if c.Text != nil {
			d.Content += *c.Text
		}
		if c.Delta == nil {
			continue
		}
		d.Role = c.Delta.Role
		if c.Delta.Content != nil {
			d.Content += *c.Delta.Content
		}
		switch {
		case c.Delta.ReasoningContent != nil:
			d.Reasoning += *c.Delta.ReasoningContent
		case c.Delta.Reasoning != nil:
			d.Reasoning += *c.Delta.Reasoning
		}
		if len(c.Delta.ToolCalls) > 0 && !bytes.Equal(c.Delta.ToolCalls, []byte("null")) {
			d.ToolCalls = true
		}
	}
	return d, nil
}

// ErrorMessage digs the message out of an error value: a string, or an
// object with "message" (and maybe "type" and "code").
func ErrorMessage(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var e struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    any    `json:"code"`
	}
	if json.Unmarshal(raw, &e) == nil && e.Message != "" {
		var b strings.Builder
		b.WriteString(e.Message)
		if e.Type != "" {
			b.WriteString(" (" + e.Type + ")")
		}
		return b.String()
	}
	return strings.TrimSpace(string(raw))
}

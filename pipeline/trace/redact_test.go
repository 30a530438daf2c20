package trace

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

const splitKey = "sk-proj-SPLIT-abcdef0123456789"

// capturedBody is the body a capture recorded, its reads joined, and how
// many reads it recorded.
func capturedBody(t *testing.T, capture []byte) ([]byte, int) {
	t.Helper()
	var body []byte
	reads := 0
	sc := bufio.NewScanner(bytes.NewReader(capture))
	for sc.Scan() {
		var rec captureRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		switch {
		case rec.Data != nil:
			body = append(body, *rec.Data...)
			reads++
		case rec.DataB64 != nil:
			b, err := base64.StdEncoding.DecodeString(*rec.DataB64)
			if err != nil {
				t.Fatal(err)
			}
			body = append(body, b...)
			reads++
		}
	}
	return body, reads
}

// captureReads records body through a capture in the reads cut at cuts
// (ascending offsets), with the request's secrets, and returns the
// capture.
func captureReads(t *testing.T, body []byte, cuts []int, secrets ...string) []byte {
	t.Helper()
	var buf bytes.Buffer
	s, err := NewCaptureWriter(&buf, "test").Begin(CaptureRequest{Stream: "a", Start: time.Unix(0, 1), Method: "POST", Path: "/v1/chat/completions", Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Response(401, "application/json", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	from := 0
	for i, cut := range append(cuts, len(body)) {
		if err := s.Read(body[from:cut], time.Duration(i+2)*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		from = cut
	}
	if err := s.Close(time.Duration(len(cuts)+3)*time.Millisecond, nil, false); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestRedactSplitKey (issue 45): a server's echo of the request's key is
// redacted wherever the reads cut it, at every offset into the key and at
// every pair of offsets, in the capture (the bytes of each read) and in the
// turn's error (the reads joined); the bytes around it are recorded as
// they came. The secrets are an Authorization header's: the bearer token
// and the whole value.
func TestRedactSplitKey(t *testing.T) {
	t.Parallel()
	body := []byte(`{"error":{"message":"Incorrect API key provided: ` + splitKey + `. Check it.","type":"invalid_request_error"}}`)
	want := bytes.ReplaceAll(body, []byte(splitKey), []byte("[redacted]"))
	at := bytes.Index(body, []byte(splitKey))
	secrets := []string{"Bearer " + splitKey, splitKey}
	check := func(cuts []int) {
		t.Helper()
		got, _ := capturedBody(t, captureReads(t, body, cuts, secrets...))
		if !bytes.Equal(got, want) {
			t.Errorf("reads cut at %v: the capture recorded\n%s\nwant\n%s", cuts, got, want)
		}
		s := NewStream("a", "", time.Unix(0, 1))
		s.Secrets = secrets
		s.Response(401, "application/json", time.Millisecond)
		from := 0
		for _, cut := range append(cuts, len(body)) {
			s.Read(body[from:cut], time.Millisecond)
			from = cut
		}
		s.Close(time.Second, nil, false)
		if s.Turn.Status != pipeline.StatusError || s.Turn.Error != "HTTP 401: Incorrect API key provided: [redacted]. Check it. (invalid_request_error)" {
			t.Errorf("reads cut at %v: turn %s %q", cuts, s.Turn.Status, s.Turn.Error)
		}
	}
	for i := at; i <= at+len(splitKey); i++ {
		check([]int{i})
		for j := i + 1; j <= at+len(splitKey); j++ {
			check([]int{i, j})
		}
	}
	// a read a byte: each recorded alone but for the key's, and the few
	// that could begin it ("s" of "request") recorded with the next
	var every []int
	for i := 1; i < len(body); i++ {
		every = append(every, i)
	}
	check(every)
	if _, reads := capturedBody(t, captureReads(t, body, every, secrets...)); reads < len(body)-2*len(splitKey) {
		t.Errorf("%d reads of a byte recorded as %d", len(body), reads)
	}
	// no secret: every read recorded as it came
	plain := []byte(`{"error":{"message":"Incorrect API key provided: s`)
	if got, reads := capturedBody(t, captureReads(t, plain, []int{10, len(plain) - 1}, secrets...)); !bytes.Equal(got, plain) || reads != 3 {
		t.Errorf("a body without the key: %d reads of\n%s", reads, got)
	}
}

// TestRedactBeforeCut: an error body too long to quote whole is redacted
// before it is cut, so no cut leaves the start of a key in the turn's error
// (a body that is not JSON is quoted to 300 bytes).
func TestRedactBeforeCut(t *testing.T) {
	t.Parallel()
	for pad := 280; pad < 300; pad++ {
		body := strings.Repeat("x", pad) + " " + splitKey + " and more"
		got := HTTPErrorText(401, []byte(body), splitKey)
		if strings.Contains(got, splitKey[:4]) {
			t.Errorf("key at %d: %q", pad, got)
		}
	}
}

// border reports whether a proper start of s is also its end (then
// overlapping echoes of it may be redacted differently read by read).
func border(s string) bool {
	for n := 1; n < len(s); n++ {
		if s[:n] == s[len(s)-n:] {
			return true
		}
	}
	return false
}

// FuzzRedactor holds the redactor to its contract for any body, secret
// and cut of the reads: no secret in what goes out, nothing held back
// longer than a secret less a byte, the body unchanged when it holds no
// secret, and, for a secret no start of which is also its end, the same
// bytes as redacting the whole body at once.
func FuzzRedactor(f *testing.F) {
	f.Add([]byte(`{"error":{"message":"Incorrect API key provided: `+splitKey+`. Check it."}}`), splitKey, []byte{50, 10, 3})
	f.Add([]byte("Bearer "+splitKey+splitKey+" sk-proj-SPL"), splitKey, []byte{1, 1, 1, 1, 1, 1, 1, 9})
	f.Add([]byte("aaaaaaaaaaaaaaaaaaaaaaaaa"), "aaaaaaaa", []byte{7, 7, 7})
	f.Add([]byte("abcabcabcabcabcabx"), "abcabcab", []byte{5, 1, 8})
	f.Fuzz(func(t *testing.T, body []byte, secret string, cuts []byte) {
		if len(secret) < minSecret || len(secret) > 256 || strings.ContainsAny(secret, "[]") || strings.Contains(redacted, secret) {
			return // too short to redact, or able to meet "[redacted]" itself
		}
		r := newRedactor([]string{secret})
		var out []byte
		from := 0
		for _, c := range cuts {
			to := min(len(body), from+int(c))
			out = append(out, r.next(body[from:to])...)
			if len(r.held) >= len(secret) {
				t.Fatalf("held back %d bytes of a %d-byte secret", len(r.held), len(secret))
			}
			from = to
		}
		out = append(out, r.next(body[from:])...)
		out = append(out, r.rest()...)
		if bytes.Contains(out, []byte(secret)) {
			t.Fatalf("the secret went out: %q", out)
		}
		if !bytes.Contains(body, []byte(secret)) && !bytes.Equal(out, body) {
			t.Fatalf("a body without the secret went out as %q, want %q", out, body)
		}
		if whole := Redact(string(body), secret); !border(secret) && string(out) != whole {
			t.Fatalf("read by read %q, whole %q", out, whole)
		}
	})
}

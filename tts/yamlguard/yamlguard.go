// Package yamlguard bounds what a YAML document may cost before
// goccy/go-yaml decodes it.
//
// goccy/go-yaml has no option to limit aliases, nesting or size: its
// decoder expands every alias (a 550-byte "billion laughs" document
// becomes gigabytes), its parser costs memory quadratic in the nesting
// depth (80 KB of brackets: 2.4 GB), and its only bound, a decode depth of
// 10,000, comes far too late. Limits.Check measures a document in three
// passes, each bounded by the one before: its size; its nesting and token
// count, from the lexer (linear in the size); and the number of values it
// holds with every alias expanded, from the parsed tree (linear once the
// depth is bounded). Only then is it decoded.
package yamlguard

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// ErrLimit reports a document over one of the limits.
var ErrLimit = errors.New("over a limit")

// Limits bound a YAML document.
type Limits struct {
	// MaxBytes is the largest document, in bytes.
	MaxBytes int
	// MaxDepth is the deepest nesting of mappings and sequences, aliases
	// expanded.
	MaxDepth int
	// MaxValues is the most values (scalars, mappings, sequences) the
	// document may hold with every alias expanded; the lexer may see at
	// most 4 tokens per value.
	MaxValues int
}

// Default are limits far above any scenario file or voice profile
// underrun reads, and low enough that decoding stays within tens of MB:
// 256 KiB, 64 levels, 50,000 values.
var Default = Limits{MaxBytes: 256 << 10, MaxDepth: 64, MaxValues: 50_000}

// ReadAll reads a whole document from r, refusing one over MaxBytes
// without reading more than one byte past it.
func (l Limits) ReadAll(r io.Reader) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, int64(l.MaxBytes)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > l.MaxBytes {
		return nil, fmt.Errorf("%w: the document is larger than %d bytes", ErrLimit, l.MaxBytes)
	}
	return b, nil
}

// Unmarshal checks data against the limits and decodes it into v.
func (l Limits) Unmarshal(data []byte, v any, opts ...yaml.DecodeOption) error {
	if err := l.Check(data); err != nil {
		return err
	}
	return yaml.UnmarshalWithOptions(data, v, opts...)
}

// Check reports the first limit data goes over, naming the line (and the
// field, for an alias) where it does; a document that does not parse is
// left for the decoder to report.
func (l Limits) Check(data []byte) error {
	if len(data) > l.MaxBytes {
		return fmt.Errorf("%w: the document is %d bytes, more than %d", ErrLimit, len(data), l.MaxBytes)
	}
	if err := l.checkTokens(data); err != nil {
		return err
	}
	file, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil // the decoder says what is wrong, and where
	}
	c := counter{limits: l, anchors: map[string]expansion{}}
	for _, doc := range file.Docs {
		if _, err := c.walk(doc.Body, 0); err != nil {
			return err
		}
	}
	return nil
}

// checkTokens bounds the nesting and the token count from the lexer's
// tokens, before the parser (whose cost grows with the square of the
// depth) sees them. Flow collections nest by their brackets; block ones by
// indentation, so every deeper column a line starts at (or a "-" or "?"
// entry inside a line) is a level.
func (l Limits) checkTokens(data []byte) error {
	tokens := lexer.Tokenize(string(data))
	if len(tokens) > 4*l.MaxValues {
		return fmt.Errorf("%w: more than %d tokens (at most %d values)", ErrLimit, 4*l.MaxValues, l.MaxValues)
	}
	var columns []int // the block levels open, by column
	flow, line := 0, 0
	for _, tok := range tokens {
		if tok.Position == nil || tok.Type == token.CommentType {
			continue
		}
		switch tok.Type {
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			flow = max(flow-1, 0)
		}
		first := tok.Position.Line != line
		line = tok.Position.Line
		entry := tok.Type == token.SequenceEntryType || tok.Type == token.MappingKeyType
		if flow == 0 && (first || entry) {
			col := tok.Position.Column
			for len(columns) > 0 && columns[len(columns)-1] > col {
				columns = columns[:len(columns)-1]
			}
			if len(columns) == 0 || columns[len(columns)-1] < col {
				columns = append(columns, col)
			}
		}
		if depth := len(columns) + flow; depth > l.MaxDepth {
			return fmt.Errorf("%w: line %d: nested more than %d levels deep", ErrLimit, tok.Position.Line, l.MaxDepth)
		}
	}
	return nil
}

// expansion is what an anchored value stands for wherever it is aliased.
type expansion struct {
	values, depth int
}

// counter counts the values of a parsed document, aliases expanded.
type counter struct {
	limits  Limits
	anchors map[string]expansion
	values  int
}

// walk counts node and what it holds, at the given depth, and returns its
// expansion; it stops at the first limit passed.
func (c *counter) walk(node ast.Node, depth int) (expansion, error) {
	if node == nil {
		return expansion{}, nil
	}
	if depth > c.limits.MaxDepth {
		return expansion{}, c.over(node, fmt.Sprintf("nested more than %d levels deep", c.limits.MaxDepth))
	}
	var own expansion
	add := func(n ast.Node, d int) error {
		e, err := c.walk(n, d)
		own.values += e.values
		own.depth = max(own.depth, e.depth)
		return err
	}
	switch n := node.(type) {
	case *ast.AliasNode:
		name := ""
		if n.Value != nil {
			name = n.Value.GetToken().Value
		}
		e := c.anchors[name] // unknown (or itself): left to the decoder
		c.values += e.values
		if c.values > c.limits.MaxValues {
			return e, c.over(node, fmt.Sprintf("alias *%s expands the document past %d values", name, c.limits.MaxValues))
		}
		if depth+e.depth > c.limits.MaxDepth {
			return e, c.over(node, fmt.Sprintf("alias *%s nests the document more than %d levels deep", name, c.limits.MaxDepth))
		}
		return e, nil
	case *ast.AnchorNode:
		e, err := c.walk(n.Value, depth)
		if n.Name != nil {
			c.anchors[n.Name.GetToken().Value] = e
		}
		return e, err
	case *ast.TagNode:
		return c.walk(n.Value, depth)
	case *ast.MappingNode:
		// its pairs are the level (a mapping of one pair may be parsed
		// as the pair alone)
		for _, v := range n.Values {
			if err := add(v, depth); err != nil {
				return own, err
			}
		}
		return own, nil
	case *ast.MappingValueNode:
		if err := add(n.Key, depth+1); err != nil {
			return own, err
		}
		if err := add(n.Value, depth+1); err != nil {
			return own, err
		}
	case *ast.MappingKeyNode:
		return c.walk(n.Value, depth)
	case *ast.SequenceNode:
		for _, v := range n.Values {
			if err := add(v, depth+1); err != nil {
				return own, err
			}
		}
	}
	own.values++
	own.depth++
	c.values++
	if c.values > c.limits.MaxValues {
		return own, c.over(node, fmt.Sprintf("more than %d values", c.limits.MaxValues))
	}
	return own, nil
}

// over reports a limit passed at node: its line and field.
func (c *counter) over(node ast.Node, what string) error {
	where := ""
	if tok := node.GetToken(); tok != nil && tok.Position != nil {
		where = fmt.Sprintf("line %d: ", tok.Position.Line)
	}
	if p := strings.TrimPrefix(node.GetPath(), "$."); p != "" && p != "$" {
		if len(p) > 60 {
			p = p[:60] + "..."
		}
		where += p + ": "
	}
	return fmt.Errorf("%w: %s%s", ErrLimit, where, what)
}

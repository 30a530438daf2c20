package trace

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
)

// decodeAny reads any value with the scanner into the shapes
// encoding/json gives, so the two can be compared.
func decodeAny(s *scanner) (any, error) {
	c, err := s.peek()
	if err != nil {
		return nil, s.ioError(err)
	}
	switch c {
	case '{':
		m := map[string]any{}
		err := s.object(func(k string) error {
			v, err := decodeAny(s)
			m[k] = v
			return err
		})
		return m, err
	case '[':
		a := []any{}
		err := s.array(func(int) error {
			v, err := decodeAny(s)
			a = append(a, v)
			return err
		})
		return a, err
	case '"':
		return s.str()
	case 't', 'f':
		return s.boolean()
	case 'n':
		_, err := s.null()
		return nil, err
	}
	return s.number()
}

// TestScannerSmallBuffers reads values through a buffer of a few bytes,
// fed one byte at a time, so every value crosses buffer refills, and
// compares with encoding/json.
func TestScannerSmallBuffers(t *testing.T) {
	t.Parallel()
	inputs := []string{
		`{"a": [1, 2.5, -3e-7, 12345678901234567], "b": "x\"y\\z\u00e9\n", "c": {"d": [[], {}, null, true, false]}}`,
		`["` + strings.Repeat("long string ", 40) + `", 0.000001234, "\\\\", "tab\tin"]`,
		`  [ 1 ,2,  3 ]  `,
		`12.5`, // a number that ends the input
		`{"":0}`,
	}
	for _, in := range inputs {
		var want any
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		for _, size := range []int{1, 2, 3, 7, 64} {
			s := newScanner(iotest.OneByteReader(strings.NewReader(in)), "in", 0, size)
			got, err := decodeAny(s)
			if err != nil {
				t.Fatalf("size %d: %v", size, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("size %d: got %#v\nwant %#v", size, got, want)
			}
			s = newScanner(iotest.HalfReader(strings.NewReader(in)), "in", 0, size)
			if _, err := s.skip(); err != nil {
				t.Errorf("size %d: skip: %v", size, err)
			}
			if _, err := s.peek(); err == nil {
				t.Errorf("size %d: skip left input behind", size)
			}
		}
	}
	s := newScanner(strings.NewReader(`[NaN, Infinity, -Infinity]`), "in", 0, 4)
	v, err := s.numbers(nil)
	if err == nil {
		t.Errorf("numbers accepted %v; want finite numbers only", v)
	}
	s = newScanner(strings.NewReader(`NaN -Infinity`), "in", 0, 4)
	if x, _ := s.number(); !math.IsNaN(x) {
		t.Errorf("NaN read as %v", x)
	}
	if x, _ := s.number(); !math.IsInf(x, -1) {
		t.Errorf("-Infinity read as %v", x)
	}
}

// TestScannerNumbers: the fast path for arrays of numbers accepts what
// JSON allows and nothing else.
func TestScannerNumbers(t *testing.T) {
	t.Parallel()
	good := map[string][]float64{
		`[]`: {}, `[ ]`: {}, `[1]`: {1}, `[1,2]`: {1, 2}, `[ 1 , -2.5e-3 ,3]`: {1, -2.5e-3, 3},
		"[1,\n2]": {1, 2}, `null`: {},
	}
	for in, want := range good {
		for _, size := range []int{1, 3, 64} {
			s := newScanner(strings.NewReader(in+" "), "in", 0, size)
			got, err := s.numbers(nil)
			if err != nil || len(got) != len(want) || (len(want) > 0 && !reflect.DeepEqual(got, want)) {
				t.Errorf("%q (buffer %d): %v, %v; want %v", in, size, got, err, want)
			}
		}
	}
	for _, in := range []string{`[1 2]`, `[1,,2]`, `[,1]`, `[1,]`, `[1`, `[1,"2"]`, `[1,NaN]`, `[1e999]`, `[--1]`, `{}`} {
		for _, size := range []int{1, 3, 64} {
			s := newScanner(strings.NewReader(in+" "), "in", 0, size)
			if got, err := s.numbers(nil); err == nil {
				t.Errorf("%q (buffer %d) read as %v; want an error", in, size, got)
			}
		}
	}
}

// TestParseDecimal checks the exact decimal reading against strconv: the
// scaled value is the rounded product (within the float's own rounding),
// and two shortest decimals are equal exactly when their floats are.
func TestParseDecimal(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		f := math.Float64frombits(rng.Uint64()>>2) * float64(1-2*rng.IntN(2))
		if rng.IntN(2) == 0 {
			f = float64(rng.IntN(1e9)) / math.Pow10(rng.IntN(12))
		}
		if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e9 {
			continue
		}
		str := strconv.FormatFloat(f, 'g', -1, 64)
		d, ok := parseDecimal([]byte(str))
		if !ok {
			continue // more than 19 digits: strconv reads those
		}
		if v, exact := d.float(); exact && v != f {
			t.Fatalf("%s: float %v, strconv gives %v", str, v, f)
		}
		got, ok := d.scaled(9)
		if !ok {
			t.Fatalf("%s: out of range", str)
		}
		want := math.Round(f * 1e9)
		if diff := math.Abs(float64(got) - want); diff > 1 && diff > math.Abs(want)*1e-15 {
			t.Fatalf("%s × 1e9: got %d, strconv gives %v", str, got, want)
		}
		g := strconv.FormatFloat(math.Nextafter(f, math.Inf(1)), 'g', -1, 64)
		if d2, ok := parseDecimal([]byte(g)); ok && d2 == d {
			t.Fatalf("%s and %s read as the same decimal", str, g)
		}
		if d3, _ := parseDecimal([]byte(strings.Replace(str, "e", "0e", 1) + "")); strings.Contains(str, "e") && strings.Contains(str, ".") && d3 != d {
			t.Fatalf("%s with a trailing zero reads differently", str)
		}
	}
	for in, want := range map[string]int64{"0.025170875000000004": 25170875, "1e-05": 10000, "-0.5e-9": -1, "0.4e-9": 0, "12": 12000000000, "0": 0, "0.0000000005": 1} {
		d, ok := parseDecimal([]byte(in))
		got, ok2 := d.scaled(9)
		if !ok || !ok2 || got != want {
			t.Errorf("%s: %d (%v %v), want %d", in, got, ok, ok2, want)
		}
	}
	for _, in := range []string{"", "-", "e5", "1e", "1e+", "1x", "1.2.3", "12345678901234567890123"} {
		if _, ok := parseDecimal([]byte(in)); ok {
			t.Errorf("%q read as a decimal", in)
		}
	}
}

// TestScannerSkipCounts: skipping an array counts its elements, whatever
// they hold, across buffer refills.
func TestScannerSkipCounts(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]int{
		`[]`: 0, `[ ]`: 0, `[[]]`: 1, `[1]`: 1, `[1, 2, 3]`: 3,
		`[[1,2],{"a":"]"},"x\"]",[],3]`: 5,
		`[{"[": "{"}, "\\", ["]"]]`:     3,
	} {
		for _, size := range []int{1, 2, 5, 64} {
			s := newScanner(iotest.OneByteReader(strings.NewReader(in+"\n")), "in", 0, size)
			got, err := s.skip()
			if err != nil || got != want {
				t.Errorf("%s (buffer %d): %d, %v; want %d", in, size, got, err, want)
			}
		}
	}
}

// TestDecimalQuotient checks the one-division conversion against strconv
// on decimals of up to 19 significant digits, the 17 of Python's repr of
// a float among them, and on the ties it must break to even.
func TestDecimalQuotient(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 5))
	check := func(text string) {
		d, ok := parseDecimal([]byte(text))
		if !ok {
			return // over 19 digits: the readers use strconv
		}
		want, err := strconv.ParseFloat(text, 64)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.toFloat(); got != want {
			t.Errorf("%s: %v (%x), strconv %v (%x)", text, got, math.Float64bits(got), want, math.Float64bits(want))
		}
	}
	for range 200000 {
		f := rng.Float64() * math.Pow(10, float64(rng.IntN(30)-15))
		check(strconv.FormatFloat(f, 'f', -1, 64))
		check(strconv.FormatFloat(f, 'g', 17, 64))
		digits := 1 + rng.IntN(19)
		mant := rng.Uint64() % pow10u64[digits]
		check(fmt.Sprintf("%d.%0*d", rng.IntN(3), digits, mant))
	}
	// halfway between two floats: 2^53+1 over a power of ten, and more
	for _, text := range []string{"9007199254740993", "0.9007199254740993", "900719925474099.3", "0.09007199254740993",
		"0.1", "0.30000000000000004", "0.9999999999999999", "0.9999999999999999999", "0.0000000000000000001",
		"1234567890123456789", "-123456789012345678.9", "1.2345678901234567e-21", "-0.30000000000000004"} {
		check(text)
	}
}

package concept_test

import (
	"math"
	"slices"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/concept"
)

func TestCosine(t *testing.T) {
	tests := []struct {
		name string
		a, b []float32
		want float64
	}{
		{"same direction", []float32{1, 2, 3}, []float32{2, 4, 6}, 1},
		{"opposite", []float32{1, 0}, []float32{-1, 0}, -1},
		{"orthogonal", []float32{1, 0}, []float32{0, 1}, 0},
		{"zero vector", []float32{0, 0}, []float32{1, 0}, 0},
		{"different lengths", []float32{1, 0}, []float32{1, 0, 0}, 0},
		{"empty", nil, nil, 0},
		{"NaN", []float32{float32(math.NaN()), 1}, []float32{1, 1}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.True(math.Abs(concept.Cosine(tt.a, tt.b)-tt.want) < 1e-9)
		})
	}
}

func TestNgramEmbed(t *testing.T) {
	is := is.New(t)
	v := concept.NgramEmbed("International Business Machines Corp.", concept.NgramDims)
	is.Equal(len(v), concept.NgramDims)
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	is.True(math.Abs(norm-1) < 1e-5)                                                      // L2-normalized
	is.Equal(v, concept.NgramEmbed("  international  business machines corp. (NY)", 384)) // of the normalized text
	is.Equal(concept.NgramEmbed("(n/a)", 8), make([]float32, 8))                          // nothing to embed: zero
	is.Equal(concept.NgramEmbed("x", 0), []float32(nil))
	is.Equal(len(concept.NgramEmbed("a", 1)), 1)
}

// TestNgramSimilarity checks the built-in embedding's sense of distance:
// spelling variants are near, unrelated names far, and synonyms are not
// its business (aliases link them).
func TestNgramSimilarity(t *testing.T) {
	emb := func(s string) []float32 { return concept.NgramEmbed(s, concept.NgramDims) }
	sim := func(a, b string) float64 { return concept.Cosine(emb(a), emb(b)) }
	pairs := []struct {
		a, b     string
		lo, hi   float64
		describe string
	}{
		{"IBM", "IBM", 1 - 1e-6, 1 + 1e-6, "identical"},
		{"IBM", "ibm (US)", 1 - 1e-6, 1 + 1e-6, "same once normalized"},
		{"IBM", "International Business Machines Corp.", -0.2, 0.2, "an abbreviation is not a spelling variant"},
		{"IBM", "Apple Inc.", -0.2, 0.2, "unrelated"},
		{"International Business Machines Corp.", "Apple Inc.", -0.2, 0.3, "unrelated"},
		{"International Business Machines Corp.", "International Business Machines Corporation", 0.8, 0.99, "a suffix spelled out"},
		{"Acme Corp", "Acme Corporation", 0.4, 0.9, "short names weigh their suffix more"},
		{"Microsoft", "Mircosoft", 0.3, 0.8, "a typo"},
	}
	for _, p := range pairs {
		t.Run(p.a+" ~ "+p.b, func(t *testing.T) {
			s := sim(p.a, p.b)
			t.Logf("cosine(%q, %q) = %.4f (%s)", p.a, p.b, s, p.describe)
			if s < p.lo || s > p.hi {
				t.Fatalf("cosine %.4f outside [%v, %v]: %s", s, p.lo, p.hi, p.describe)
			}
		})
	}
}

func FuzzNgramEmbed(f *testing.F) {
	for _, s := range []string{"IBM", "", "(x)", "東京", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := concept.NgramEmbed(s, 64)
		if len(v) != 64 {
			t.Fatal("wrong length")
		}
		if !slices.Equal(v, concept.NgramEmbed(concept.Normalize(s), 64)) {
			t.Fatalf("%q: embedding of the normalized text differs", s)
		}
		var norm float64
		for _, x := range v {
			norm += float64(x) * float64(x)
		}
		if norm != 0 && math.Abs(norm-1) > 1e-5 {
			t.Fatalf("%q: norm %v: neither normalized nor zero", s, norm)
		}
	})
}

// TestCosineDotOfNonZeroProducts checks what an inverted index relies on:
// CosineDot of the sum of only the non-zero products, in order, is
// CosineNormed to the last bit, -0 values and cancelling sums included.
func TestCosineDotOfNonZeroProducts(t *testing.T) {
	negZero := float32(math.Copysign(0, -1))
	tests := []struct {
		name string
		a, b []float32
	}{
		{"sparse", []float32{0, 1, 0, -2, 0}, []float32{3, 0.5, 0, 0.25, 7}},
		{"negative zeros", []float32{negZero, -1, negZero}, []float32{-1, negZero, 2}},
		{"cancelling", []float32{1, 1, 0}, []float32{1, -1, 5}},
		{"order matters", []float32{1e-30, 1, 1, 0}, []float32{1, 1e30, -1e30, 3}},
		{"tiny", []float32{1e-38, 0}, []float32{-1e-38, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var dot float64
			for i, x := range tt.a {
				if x != 0 && tt.b[i] != 0 {
					dot += float64(x) * float64(tt.b[i])
				}
			}
			na, nb := concept.SquaredNorm(tt.a), concept.SquaredNorm(tt.b)
			is.Equal(math.Float64bits(concept.CosineDot(dot, na, nb)), math.Float64bits(concept.CosineNormed(tt.a, tt.b, na, nb)))
		})
	}
}

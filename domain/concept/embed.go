package concept

import (
	"hash/fnv"
	"math"
	"strings"
)

// NgramDims is the size of the built-in embedding's vectors.
const NgramDims = 384

// Cosine is the cosine similarity of a and b, in [-1, 1]. Vectors of
// different lengths, empty ones and zero ones have nothing in common:
// their similarity is 0, never NaN.
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	return CosineNormed(a, b, SquaredNorm(a), SquaredNorm(b))
}

// SquaredNorm is the sum of v's squares, summed in float64 in v's order:
// the norm Cosine takes the square root of. An index keeps it beside a
// vector so that a lookup does not sum it again.
func SquaredNorm(v []float32) float64 {
	var n float64
	for _, x := range v {
		y := float64(x)
		n += y * y
	}
	return n
}

// CosineNormed is Cosine(a, b) given na = SquaredNorm(a) and
// nb = SquaredNorm(b), to the last bit: the same sums in the same order.
func CosineNormed(a, b []float32, na, nb float64) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot float64
	b = b[:len(a)]
	for i, x := range a {
		dot += float64(x) * float64(b[i])
	}
	return CosineDot(dot, na, nb)
}

// CosineDot is CosineNormed's last step: the cosine of two vectors of
// squared norms na and nb whose dot product, summed in float64 in the
// vectors' order from +0, is dot. An index that sums the dot product
// another way (only the non-zero products: adding an exact zero to a sum
// that started at +0 leaves it as it was) ends with it to the last bit.
func CosineDot(dot, na, nb float64) float64 {
	if na == 0 || nb == 0 || math.IsNaN(dot) || math.IsInf(dot, 0) || math.IsNaN(na) || math.IsNaN(nb) {
		return 0
	}
	c := dot / (math.Sqrt(na) * math.Sqrt(nb))
	return max(-1, min(1, c))
}

// NgramEmbed is the built-in deterministic embedding: it needs no model
// and no network, so a vocabulary works out of the box and tests are
// reproducible. Each word of Normalize(text), framed by a boundary mark
// on both sides, is cut into character 3-grams; each 3-gram is hashed
// (FNV-1a, 64 bits) into one of dims buckets, adding +1 or -1 by another
// bit of the hash so that collisions cancel out rather than pile up. The
// vector is L2-normalized, so a dot product is a cosine. Texts sharing
// spelling are near ("acme corp" and "acme corporation"); synonyms and
// abbreviations are not ("ibm" and "international business machines"):
// aliases and the judge link those.
//
// A text that normalizes to nothing has the zero vector, and so, rarely,
// has a very short text whose few 3-grams cancel out in their buckets;
// a zero vector is similar to nothing (Cosine), so the ladder mints.
// dims below 1 gives nil.
func NgramEmbed(text string, dims int) []float32 {
	if dims < 1 {
		return nil
	}
	v := make([]float64, dims)
	h := fnv.New64a()
	for _, word := range strings.Fields(Normalize(text)) {
		w := []rune(boundary + word + boundary)
		for i := 0; i+3 <= len(w); i++ {
			h.Reset()
			_, _ = h.Write([]byte(string(w[i : i+3])))
			sum := h.Sum64()
			sign := 1.0
			if sum>>63 == 1 {
				sign = -1
			}
			v[(sum&(1<<63-1))%uint64(dims)] += sign
		}
	}
	var norm float64
	for _, x := range v {
		norm += x * x
	}
	out := make([]float32, dims)
	if norm == 0 {
		return out
	}
	norm = math.Sqrt(norm)
	for i, x := range v {
		out[i] = float32(x / norm)
	}
	return out
}

// boundary frames each word, so that 3-grams tell a word's start and end
// from its middle. Normalize never leaves a control character in a text,
// so it cannot collide with one.
const boundary = "\x02"

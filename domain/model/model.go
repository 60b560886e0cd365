// Package model names LLM models by composite key (<provider>::<model>) and
// prices their calls in integer micro-credits.
package model

import (
	"errors"
	"fmt"
	"strings"
)

// Separator joins provider and model in a composite key.
const Separator = "::"

// Auto is the literal that asks the server to choose the model.
const Auto = "auto"

// ErrInvalidKey is returned for a string that is not <provider>::<model>.
var ErrInvalidKey = errors.New("invalid model key")

// Key is a composite model key.
type Key struct {
	Provider string
	Model    string
}

// ParseKey parses "<provider>::<model>".
func ParseKey(s string) (Key, error) {
	p, m, ok := strings.Cut(s, Separator)
	if !ok || p == "" || m == "" || strings.ContainsAny(p, " \t\n") {
		return Key{}, fmt.Errorf("%w %q: want <provider>::<model>", ErrInvalidKey, s)
	}
	return Key{Provider: p, Model: m}, nil
}

func (k Key) String() string { return k.Provider + Separator + k.Model }

// Price is what a model charges, in micro-credits per million tokens, and
// per web search its provider's tool makes.
type Price struct {
	InputPerMTok  int64
	OutputPerMTok int64
	PerSearch     int64
}

// CallCost is Cost plus the searches a call made (a web search tool bills
// each), in micro-credits.
func (p Price) CallCost(inputTokens, outputTokens, searches int) int64 {
	return p.Cost(inputTokens, outputTokens) + int64(searches)*p.PerSearch
}

// Cost returns the micro-credits of one call, rounded up so that no call is
// free unless the price is zero.
func (p Price) Cost(inputTokens, outputTokens int) int64 {
	n := int64(inputTokens)*p.InputPerMTok + int64(outputTokens)*p.OutputPerMTok
	return (n + 999_999) / 1_000_000
}

// Info describes a model available to enrichment.
type Info struct {
	Key         Key
	DisplayName string
	Price       Price
	// Sandbox marks the built-in deterministic provider.
	Sandbox bool
	// WebSearch says the provider offers a web search tool for the model
	// (the catalog's web_search); WebSearchTool says enrich can call its
	// provider type's tool. A model searches only with both
	// (modelsel.CanSearch).
	WebSearch     bool
	WebSearchTool bool
	Vision        bool
	PDFInput      bool
	ContextLength int
	// Further capabilities, as the provider registry knows them.
	ResponseSchema bool // native JSON-schema response channel
	StrictOutput   bool // strict (constrained) decoding on it
	Reasoning      bool
	ToolCalls      bool
	AudioInput     bool
	VideoInput     bool
	// Dims is the vector size of an embedding model; 0 for a chat model.
	Dims int
}

// MicroCreditsPerUSD is the exchange rate of costs and prices: one credit is
// one US dollar, so a micro-credit is a millionth of a dollar. The reference
// product reports LLM money in USD (cost_usd); we keep integer micro-credits
// and answer with both.
const MicroCreditsPerUSD = 1_000_000

// USD converts micro-credits to US dollars.
func USD(microCredits int64) float64 { return float64(microCredits) / MicroCreditsPerUSD }

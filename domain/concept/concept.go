package concept

import (
	"errors"
	"time"
)

// Origin says how an alias came to be.
type Origin string

// The origins of an alias.
const (
	// OriginManual is an alias a person created (create, alias_of).
	OriginManual Origin = "manual"
	// OriginEnrichment is the text of an enrichment that minted or
	// matched the concept.
	OriginEnrichment Origin = "enrichment"
	// OriginImport is a row of an import.
	OriginImport Origin = "import"
	// OriginMerge is an alias moved from a merged (losing) concept.
	OriginMerge Origin = "merge"
)

// Alias is one text of a concept. Exactly one alias of a concept is
// canonical; its text is the concept's CanonicalText.
type Alias struct {
	ID string
	// Text is the alias as it was given; NormalizedText is Normalize(Text),
	// the form exact matching compares.
	Text           string
	NormalizedText string
	IsCanonical    bool
	// RefCount counts the record links that resolved through this alias.
	RefCount  int
	Origin    Origin
	CreatedAt time.Time
}

// Concept is a typed vocabulary entry: a stable id for the texts that name
// one thing ("IBM", "International Business Machines Corp."). A concept
// belongs to one slice (its type and the embedding model its vectors come
// from); its embedding is stored beside it by the vector index.
type Concept struct {
	ID    string
	OrgID string
	// Type is the concept type (semantic_concept_type: "company").
	Type           string
	CanonicalText  string
	NormalizedText string
	Aliases        []Alias
	// RefCount counts the record links that resolved to the concept.
	RefCount       int
	EmbeddingModel string
	Dims           int
	CreatedAt      time.Time
}

// Slice is the unit of comparison: concepts are only compared, and their
// vectors only mean something, within one concept type and one embedding
// model.
type Slice struct {
	Type           string
	EmbeddingModel string
}

// Slice is the slice c belongs to.
func (c Concept) Slice() Slice { return Slice{Type: c.Type, EmbeddingModel: c.EmbeddingModel} }

// Errors of the alias rules.
var (
	// ErrAliasNotFound names an alias the concept does not have.
	ErrAliasNotFound = errors.New("the concept has no such alias")
	// ErrLastAlias refuses to remove a concept's only alias: a concept
	// always has a text.
	ErrLastAlias = errors.New("the last alias of a concept cannot be removed")
)

// Canonical is c's canonical alias, and false when none is marked.
func (c Concept) Canonical() (Alias, bool) {
	for _, a := range c.Aliases {
		if a.IsCanonical {
			return a, true
		}
	}
	return Alias{}, false
}

// AliasByText is c's alias whose normalized text is normalized (a value
// of Normalize), and false when none is.
func (c Concept) AliasByText(normalized string) (Alias, bool) {
	for _, a := range c.Aliases {
		if a.NormalizedText == normalized {
			return a, true
		}
	}
	return Alias{}, false
}

// Alias is c's alias id, and false when c has none by that id.
func (c Concept) Alias(id string) (Alias, bool) {
	if i := c.aliasIndex(id); i >= 0 {
		return c.Aliases[i], true
	}
	return Alias{}, false
}

func (c Concept) aliasIndex(id string) int {
	for i, a := range c.Aliases {
		if a.ID == id {
			return i
		}
	}
	return -1
}

// RemoveAlias returns c without the alias id. The last alias is never
// removed (ErrLastAlias); removing the canonical alias promotes the
// oldest remaining one (the first in c.Aliases order when equally old),
// so the concept keeps a canonical text.
func RemoveAlias(c Concept, id string) (Concept, error) {
	i := c.aliasIndex(id)
	if i < 0 {
		return c, ErrAliasNotFound
	}
	if len(c.Aliases) == 1 {
		return c, ErrLastAlias
	}
	removed := c.Aliases[i]
	out := make([]Alias, 0, len(c.Aliases)-1)
	out = append(out, c.Aliases[:i]...)
	c.Aliases = append(out, c.Aliases[i+1:]...)
	if removed.IsCanonical {
		oldest := 0
		for j, a := range c.Aliases {
			if a.CreatedAt.Before(c.Aliases[oldest].CreatedAt) {
				oldest = j
			}
		}
		return PromoteAlias(c, c.Aliases[oldest].ID)
	}
	return c, nil
}

// PromoteAlias returns c with the alias id canonical: its text becomes
// the concept's canonical text, and the previous canonical alias stays an
// alias.
func PromoteAlias(c Concept, id string) (Concept, error) {
	i := c.aliasIndex(id)
	if i < 0 {
		return c, ErrAliasNotFound
	}
	c.Aliases = append([]Alias(nil), c.Aliases...)
	for j := range c.Aliases {
		c.Aliases[j].IsCanonical = j == i
	}
	c.CanonicalText = c.Aliases[i].Text
	c.NormalizedText = c.Aliases[i].NormalizedText
	return c, nil
}

package ports

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/text"
)

// NewConcept is what CreateConcept stores: the concept, its canonical
// alias (made from Text) and its embedding in the slice (Type,
// EmbeddingModel).
type NewConcept struct {
	ID      string
	OrgID   string
	Type    string
	AliasID string
	// Text is the canonical text as given; the store keeps
	// concept.Normalize(Text) beside it for exact matching.
	Text   string
	Origin concept.Origin
	// EmbeddingModel and Vector are the concept's embedding; an empty
	// Vector stores none (Dims 0), for a concept whose embedder did not
	// answer.
	EmbeddingModel string
	Vector         []float32
	CreatedAt      time.Time
}

// NewAlias is an alias AddAlias stores.
type NewAlias struct {
	ID        string
	Text      string
	Origin    concept.Origin
	CreatedAt time.Time
}

// ConceptSort is the order of a concept listing.
type ConceptSort string

// The orders of a concept listing; ties are broken by id.
const (
	SortConceptCreated  ConceptSort = "created_at"
	SortConceptRefCount ConceptSort = "ref_count"
	// SortConceptText orders by the normalized canonical text, byte-wise.
	SortConceptText ConceptSort = "canonical_text"
)

// ConceptFilter narrows and orders a concept listing; zero fields match
// everything.
type ConceptFilter struct {
	Types []string
	// Search keeps the concepts one of whose texts (canonical or alias)
	// contains concept.Normalize(Search).
	Search      string
	MinRefCount int
	// CreatedAfter (exclusive) and CreatedBefore (exclusive) bound the
	// creation time when set.
	CreatedAfter, CreatedBefore *time.Time
	// Sort defaults to SortConceptCreated.
	Sort       ConceptSort
	Descending bool
	// Limit defaults to page.DefaultSize and is capped at page.MaxSize.
	Limit, Offset int
}

// ConceptSelection names the concepts DeleteConcepts removes: those among
// IDs (when set) of the types Types (when set), only the unreferenced
// ones with UnusedOnly. At least one of IDs and Types must be set.
type ConceptSelection struct {
	IDs        []string
	Types      []string
	UnusedOnly bool
}

// RefBump adds Delta to a concept's reference count and, when AliasID is
// set, to that alias's (the one the link resolved through). The deltas of
// one call add up per concept and per alias (SumRefBumps), and the sum is
// applied with a floor at 0.
type RefBump struct {
	ConceptID string
	AliasID   string
	Delta     int
}

// ConceptTypeInfo is one slice of an organization's vocabulary (WIRE.md
// §12 SemanticConceptTypeInfo): its concepts, the unreferenced ones among
// them, and the dimensions of their vectors.
type ConceptTypeInfo struct {
	Type           string
	EmbeddingModel string
	Dims           int
	ConceptCount   int
	UnusedCount    int
}

// ConceptStore keeps the semantic concept vocabulary (issue 30): concepts,
// their aliases and reference counts. Every read and write is scoped to
// one organization: another organization's concept is ErrNotFound. A
// normalized text names at most one alias among an organization's
// concepts of one type (ErrConflict). Returned concepts carry their
// aliases, oldest first (ties by id).
type ConceptStore interface {
	// CreateConcept stores the concept, its canonical alias and its
	// embedding in one step. A text that normalizes to nothing or holds
	// what text cannot (NUL, bytes that are not UTF-8), or a vector with a
	// value that is not a finite number, is ErrInvalid; a normalized text
	// the type already holds is ErrConflict.
	CreateConcept(ctx context.Context, c NewConcept) (*concept.Concept, error)
	GetConcept(ctx context.Context, orgID, id string) (*concept.Concept, error)
	// FindExact is the concept one of whose texts normalizes as text does,
	// among the organization's concepts of the type, as the ladder's exact
	// neighbour (Similarity 1, the alias that matched); ErrNotFound when
	// none does.
	FindExact(ctx context.Context, orgID, conceptType, text string) (*concept.Neighbor, error)
	// ListConcepts returns a page of concepts and how many match f.
	ListConcepts(ctx context.Context, orgID string, f ConceptFilter) ([]*concept.Concept, int, error)
	// AddAlias adds an alias to the concept (ErrInvalid and ErrConflict as
	// CreateConcept's text).
	AddAlias(ctx context.Context, orgID, conceptID string, a NewAlias) (*concept.Concept, error)
	// RemoveAlias and PromoteAlias apply concept.RemoveAlias and
	// concept.PromoteAlias: the last alias is never removed
	// (concept.ErrLastAlias), an alias the concept lacks is
	// concept.ErrAliasNotFound (wrapping ErrNotFound).
	RemoveAlias(ctx context.Context, orgID, conceptID, aliasID string) (*concept.Concept, error)
	PromoteAlias(ctx context.Context, orgID, conceptID, aliasID string) (*concept.Concept, error)
	// BumpRefCounts applies the bumps; concepts and aliases the
	// organization does not hold are skipped.
	BumpRefCounts(ctx context.Context, orgID string, bumps []RefBump) error
	// ConceptTypes lists one facet per slice (type, embedding model),
	// ordered by type then model.
	ConceptTypes(ctx context.Context, orgID string) ([]ConceptTypeInfo, error)
	// DeleteConcepts removes the selected concepts with their aliases and
	// vectors, and returns their ids, sorted. An empty selection is
	// ErrInvalid.
	DeleteConcepts(ctx context.Context, orgID string, sel ConceptSelection) ([]string, error)
	// MergeConcepts merges loser into winner in one step (concept.Merge):
	// the loser's aliases move to the winner (origin merge; one whose
	// normalized text the winner holds is dropped), its reference count
	// adds to the winner's, and the loser goes with its vectors. Both
	// must be the organization's (ErrNotFound); a concept merged into
	// itself is ErrInvalid, two types ErrConflict (wrapping
	// concept.ErrMergeSelf, concept.ErrMergeTypes).
	MergeConcepts(ctx context.Context, orgID, winnerID, loserID string) (MergedConcept, error)
	// SliceConcepts returns up to limit concepts of the slice (those whose
	// embedding model is the slice's) with ids above after, by id: the
	// pages an embedding-model migration re-embeds.
	SliceConcepts(ctx context.Context, orgID string, s concept.Slice, after string, limit int) ([]SliceConcept, error)
	// CutOver moves the slice's concepts that hold a vector in model to
	// into model to, in one step: their embedding model becomes to, their
	// Dims that vector's, and their vectors in the slice's model are
	// removed. Concepts with no vector in to stay in the slice. It returns
	// how many moved.
	CutOver(ctx context.Context, orgID string, s concept.Slice, to string) (int, error)
}

// MergedConcept is what MergeConcepts did: the winner as it is now and
// the aliases it took from the loser.
type MergedConcept struct {
	Winner       *concept.Concept
	AliasesMoved int
}

// MergeErr wraps a concept.Merge refusal in the port's error.
func MergeErr(err error) error {
	switch err {
	case nil:
		return nil
	case concept.ErrMergeSelf:
		return fmt.Errorf("%w: %w", ErrInvalid, err)
	case concept.ErrMergeTypes:
		return fmt.Errorf("%w: %w", ErrConflict, err)
	}
	return err
}

// VectorIndex finds concepts by embedding, within one slice (type and
// embedding model) of one organization. A concept has at most one vector
// per embedding model, the embedding of its canonical text, so a neighbour
// names no alias (AliasID "", IsCanonical true).
type VectorIndex interface {
	// Upsert stores vector as the concept's in the slice's model, over any
	// it had; in the concept's own model it sets the concept's Dims (and
	// Delete there sets 0). The concept must be the organization's and of the slice's
	// type (ErrNotFound); an empty vector or one holding a value that is
	// not finite is ErrInvalid.
	Upsert(ctx context.Context, orgID string, s concept.Slice, conceptID string, vector []float32) error
	// Nearest returns up to k concepts of the slice whose vectors have the
	// length of vector, with their concept.Cosine, in concept.Nearest's
	// order (most similar first, then most referenced, then by id). An
	// exact index returns the k nearest; an approximate one (pgvector's
	// HNSW) may miss some of them, but ranks what it finds the same way.
	// k below 1 returns none.
	Nearest(ctx context.Context, orgID string, s concept.Slice, vector []float32, k int) ([]concept.Neighbor, error)
	// Delete removes the concept's vector in the slice's model; a missing
	// one is not an error.
	Delete(ctx context.Context, orgID string, s concept.Slice, conceptID string) error
}

// ConceptText checks an alias text for a ConceptStore: it returns its
// normalized form, or ErrInvalid naming why it cannot be stored.
func ConceptText(s string) (string, error) {
	if r, ok := text.CheckString(s); !ok {
		return "", fmt.Errorf("%w: text holds %s", ErrInvalid, r)
	}
	n := concept.Normalize(s)
	if n == "" {
		return "", fmt.Errorf("%w: text is blank once normalized", ErrInvalid)
	}
	return n, nil
}

// CheckVector reports why v cannot be stored as an embedding: it is
// empty, or a value is NaN or infinite.
func CheckVector(v []float32) error {
	if len(v) == 0 {
		return fmt.Errorf("%w: vector is empty", ErrInvalid)
	}
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return fmt.Errorf("%w: vector[%d] is not a finite number", ErrInvalid, i)
		}
	}
	return nil
}

// SumRefBumps adds up bumps per concept and per (concept, alias), the
// way a ConceptStore applies them: a call's bumps add up before the floor
// at 0. Bumps whose deltas cancel out are left out.
func SumRefBumps(bumps []RefBump) (concepts map[string]int, aliases map[[2]string]int) {
	concepts, aliases = map[string]int{}, map[[2]string]int{}
	for _, b := range bumps {
		concepts[b.ConceptID] += b.Delta
		if b.AliasID != "" {
			aliases[[2]string{b.ConceptID, b.AliasID}] += b.Delta
		}
	}
	for id, d := range concepts {
		if d == 0 {
			delete(concepts, id)
		}
	}
	for k, d := range aliases {
		if d == 0 {
			delete(aliases, k)
		}
	}
	return concepts, aliases
}

// ConceptReview is a pair of concepts left to a person (SPEC.md's review
// list): A is the concept the ladder minted or met, B the candidate it
// could not tell apart from A.
type ConceptReview struct {
	ID             string
	OrgID          string
	Type           string
	EmbeddingModel string
	AID, BID       string
	Similarity     float64
	// Reason says why a person must look: ReviewEscalated,
	// ReviewSeparated.
	Reason    string
	Detail    string
	CreatedAt time.Time
}

// The reasons of a review pair.
const (
	// ReviewEscalated: gray-band candidates with no judge, an unsure or a
	// failed one; the ladder minted.
	ReviewEscalated = "escalated"
	// ReviewSeparated: the judge said different at a similarity worth
	// confirming.
	ReviewSeparated = "separated"
)

// ReviewFilter narrows a review listing.
type ReviewFilter struct {
	Types         []string
	Limit, Offset int
}

// ConceptReviews keeps the review list. A pair is kept once per
// organization, whichever order its concepts come in.
type ConceptReviews interface {
	// FileReviews adds pairs; a pair already filed keeps its first filing.
	FileReviews(ctx context.Context, pairs []ConceptReview) error
	// ListReviews returns a page of pairs, most similar first, and how
	// many match.
	ListReviews(ctx context.Context, orgID string, f ReviewFilter) ([]ConceptReview, int, error)
	// DropReviews removes the pairs naming any of the concepts (a merge, a
	// delete, a person's decision) and returns how many.
	DropReviews(ctx context.Context, orgID string, conceptIDs []string) (int, error)
}

// ConceptLink is a record's use of a concept: the value at JSONPath of the
// record's output resolved to ConceptID (through AliasID), with the
// similarity that decided it (nil for an exact or a kept id).
type ConceptLink struct {
	OrgID     string
	ConceptID string
	AliasID   string
	RecordID  string
	SchemaID  string
	JSONPath  string
	Cosine    *float64
	CreatedAt time.Time
}

// ConceptWrites are what storing records that resolved concepts writes
// besides them: their links, and the reference counts the links add (one
// per link, to the concept and the alias it resolved through).
type ConceptWrites struct {
	Links []ConceptLink
	Bumps []RefBump
}

// ConceptWritesOf are the concept writes of records: a link per
// resolved semantic concept (SemanticConcepts), and one reference each.
func ConceptWritesOf(records []*enrichment.Record) ConceptWrites {
	var w ConceptWrites
	for _, r := range records {
		for _, c := range r.SemanticConcepts {
			w.Links = append(w.Links, ConceptLink{OrgID: r.OrgID, ConceptID: c.ConceptID, AliasID: c.AliasID, RecordID: r.ID,
				SchemaID: r.SchemaID, JSONPath: c.JSONPath, Cosine: c.Cosine, CreatedAt: r.CreatedAt})
			w.Bumps = append(w.Bumps, RefBump{ConceptID: c.ConceptID, AliasID: c.AliasID, Delta: 1})
		}
	}
	return w
}

// Empty reports whether there is nothing to write.
func (w ConceptWrites) Empty() bool { return len(w.Links) == 0 && len(w.Bumps) == 0 }

// ConceptUse counts what refers to a set of concepts: the record links,
// and the schemas those records belong to.
type ConceptUse struct {
	RecordLinks int
	SchemaIDs   []string
}

// ConceptLinks keeps the links between records and concepts.
type ConceptLinks interface {
	// AddLinks stores links; a link already stored (record, path) is
	// replaced.
	AddLinks(ctx context.Context, links []ConceptLink) error
	// LinksOf returns up to limit links of the concept, newest first.
	LinksOf(ctx context.Context, orgID, conceptID string, limit int) ([]ConceptLink, error)
	// UseOf counts the links of the concepts.
	UseOf(ctx context.Context, orgID string, conceptIDs []string) (ConceptUse, error)
	// RepointLinks moves the links of concept from to concept to and
	// returns how many moved.
	RepointLinks(ctx context.Context, orgID, from, to string) (int, error)
	// DeleteLinks removes the links of the concepts and returns how many.
	DeleteLinks(ctx context.Context, orgID string, conceptIDs []string) (int, error)
}

// EmbeddingSettings keeps each organization's embedding-model setting
// (the reference's /api/org-keys/embedding-model).
type EmbeddingSettings interface {
	// EmbeddingModel returns the organization's setting; set is false when
	// the organization never set one (the server's default applies), and
	// model is "" with set true when it was cleared (semantic ids off).
	EmbeddingModel(ctx context.Context, orgID string) (model string, set bool, err error)
	// SetEmbeddingModel stores the setting; "" clears it.
	SetEmbeddingModel(ctx context.Context, orgID, model string) error
}

package concept

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Defaults of the ladder.
const (
	// DefaultAccept is the similarity at or above which the nearest
	// concept is reused (REFERENCE.md §7: 0.92, per property through
	// semantic_threshold).
	DefaultAccept = 0.92
	// DefaultJudgeFloor is the bottom of the gray band that goes to the
	// identity judge. The reference names judge_floor without a figure.
	// 0.80 keeps the band narrow enough that the judge sees plausible
	// variants (abbreviations, legal suffixes, word order) rather than
	// every text sharing a word, so its calls stay few.
	DefaultJudgeFloor = 0.80
	// DefaultNeighbors is how many neighbours a lookup or a probe returns
	// when the request names no number (WIRE.md §12).
	DefaultNeighbors = 10
)

// Thresholds are the ladder's two similarity bounds: Accept reuses the
// nearest concept, [JudgeFloor, Accept) is the gray band left to the
// identity judge, and below JudgeFloor a new id is minted.
type Thresholds struct {
	Accept     float64
	JudgeFloor float64
}

// DefaultThresholds are DefaultAccept and DefaultJudgeFloor.
func DefaultThresholds() Thresholds {
	return Thresholds{Accept: DefaultAccept, JudgeFloor: DefaultJudgeFloor}
}

// ErrThreshold is the kind of a threshold out of range.
var ErrThreshold = errors.New("invalid threshold")

// CheckThreshold reports why t cannot be a similarity threshold: it must
// be a number in (0, 1].
func CheckThreshold(t float64) error {
	if math.IsNaN(t) || t <= 0 || t > 1 {
		return fmt.Errorf("%w: %v: want a number greater than 0 and at most 1", ErrThreshold, t)
	}
	return nil
}

// Check reports whether both bounds are thresholds and the floor is not
// above the accept threshold.
func (t Thresholds) Check() error {
	if err := CheckThreshold(t.Accept); err != nil {
		return fmt.Errorf("accept: %w", err)
	}
	if err := CheckThreshold(t.JudgeFloor); err != nil {
		return fmt.Errorf("judge floor: %w", err)
	}
	if t.JudgeFloor > t.Accept {
		return fmt.Errorf("%w: the judge floor %v is above the accept threshold %v", ErrThreshold, t.JudgeFloor, t.Accept)
	}
	return nil
}

// WithAccept is t with a property's or a request's accept threshold
// (semantic_threshold, probe and import threshold); nil keeps t's. A floor
// above the new threshold comes down to it, which leaves no gray band:
// asking for a lower bar than the judge's floor means reuse without a
// judge.
func (t Thresholds) WithAccept(accept *float64) Thresholds {
	if accept == nil {
		return t
	}
	t.Accept = *accept
	t.JudgeFloor = min(t.JudgeFloor, t.Accept)
	return t
}

// Neighbor is a concept found near an identity text, in the same slice.
type Neighbor struct {
	ConceptID string
	// AliasID is the alias whose vector was near ("" when the index
	// keeps one vector per concept); Text is that alias's text.
	AliasID       string
	Text          string
	CanonicalText string
	IsCanonical   bool
	RefCount      int
	// Similarity is the cosine of the two vectors (1 for an exact match).
	Similarity float64
}

// Decision is what the identity judge says of a text and its gray-band
// candidates.
type Decision string

// The judge's decisions.
const (
	// Same: the text names Verdict.ConceptID.
	Same Decision = "same"
	// Different: the text names none of the candidates.
	Different Decision = "different"
	// Unsure: a person must decide (the review list).
	Unsure Decision = "unsure"
)

// Verdict is the identity judge's answer.
type Verdict struct {
	Decision Decision
	// ConceptID is the candidate the text names, with Same.
	ConceptID string
	// Reason is the judge's explanation, for the review list.
	Reason string
}

// Judge asks the identity judge whether text (normalized) names one of
// candidates (the gray band, nearest first). The caller closes over its
// context and its model; nil means no judge model is set.
type Judge func(text string, candidates []Neighbor) (Verdict, error)

// Input is what the stores found for one identity text.
type Input struct {
	// InputID is a concept id the object already carries; it is kept.
	InputID string
	// Text is the identity text, normalized or not (Resolve normalizes).
	Text string
	// Exact is the concept whose text or alias equals the normalized
	// text in the slice, nil when none does.
	Exact *Neighbor
	// Neighbors are the nearest concepts in the slice, in any order.
	Neighbors []Neighbor
	// Thresholds bound the gray band; the zero value means
	// DefaultThresholds, so that a forgotten field never reuses any
	// neighbour at all.
	Thresholds Thresholds
	// Judge decides the gray band; nil sends it to the review list.
	Judge Judge
}

// Kind is the rung of the ladder that decided.
type Kind string

// The outcomes of the ladder.
const (
	// KeptInputID: the object carried an id, which is kept.
	KeptInputID Kind = "kept_input_id"
	// Skipped: the text normalizes to nothing; there is nothing to
	// resolve and nothing is minted.
	Skipped Kind = "skipped"
	// ExactHit: the normalized text equals a concept's text or alias.
	ExactHit Kind = "exact_hit"
	// Match: the nearest neighbour is at or above the accept threshold.
	Match Kind = "match"
	// JudgedMatch: the judge named a gray-band candidate.
	JudgedMatch Kind = "judged_match"
	// Escalated: gray-band candidates with no judge, an unsure judge or a
	// failed one. A new id is minted and the candidates go to the review
	// list. Minting is the safe side: two concepts for one thing are
	// repaired by a merge, one concept for two things by nothing (there
	// is no split).
	Escalated Kind = "escalated"
	// Mint: nothing near enough, or the judge said different; a new id.
	Mint Kind = "mint"
)

// Outcome is the ladder's decision for one identity text.
type Outcome struct {
	Kind Kind
	// NormalizedText is Normalize(Input.Text).
	NormalizedText string
	// ConceptID is the id to use: the kept, matched or judged concept;
	// "" when the caller mints one (Mints).
	ConceptID string
	// Matched is the neighbour reused (exact, match, judged match).
	Matched *Neighbor
	// Similarity is the matched neighbour's, or the nearest one's when
	// none matched (0 with no neighbour).
	Similarity float64
	// Candidates are the gray-band neighbours that went to the judge or
	// to the review list, nearest first.
	Candidates []Neighbor
	// Reason is the judge's explanation, when it spoke.
	Reason string
}

// Mints reports whether the caller must mint a new concept.
func (o Outcome) Mints() bool { return o.Kind == Mint || o.Kind == Escalated }

// Review reports whether the outcome leaves pairs for a person: escalated
// ones, and candidates the judge separated at high similarity (the
// reference's review view).
func (o Outcome) Review() bool { return len(o.Candidates) > 0 && o.Kind != JudgedMatch }

// ErrVerdict is a verdict Resolve cannot use.
var ErrVerdict = errors.New("invalid identity verdict")

// Resolve runs the ladder on what the stores found. It only decides:
// minting, bumping reference counts and filing review pairs are the
// caller's, by the outcome. A judge error (or an unusable verdict) gives
// the escalated outcome, what no judge would have given, together with
// the error, so the caller can fail or carry on.
func Resolve(in Input) (Outcome, error) {
	if in.InputID != "" {
		return Outcome{Kind: KeptInputID, NormalizedText: Normalize(in.Text), ConceptID: in.InputID}, nil
	}
	out := Outcome{NormalizedText: Normalize(in.Text)}
	if out.NormalizedText == "" {
		out.Kind = Skipped
		return out, nil
	}
	if in.Exact != nil {
		m := *in.Exact
		out.Kind, out.ConceptID, out.Matched, out.Similarity = ExactHit, m.ConceptID, &m, 1
		return out, nil
	}
	near := Nearest(in.Neighbors)
	if len(near) == 0 {
		out.Kind = Mint
		return out, nil
	}
	best := near[0]
	out.Similarity = best.Similarity
	th := in.Thresholds
	if th == (Thresholds{}) {
		th = DefaultThresholds()
	}
	if best.Similarity >= th.Accept {
		out.Kind, out.ConceptID, out.Matched = Match, best.ConceptID, &best
		return out, nil
	}
	for _, n := range near {
		if n.Similarity >= th.JudgeFloor {
			out.Candidates = append(out.Candidates, n)
		}
	}
	switch {
	case len(out.Candidates) == 0:
		out.Kind = Mint
		return out, nil
	case in.Judge == nil:
		out.Kind = Escalated
		return out, nil
	}
	return judged(out, in.Judge)
}

// judged applies the judge's verdict on out's candidates.
func judged(out Outcome, judge Judge) (Outcome, error) {
	v, err := judge(out.NormalizedText, slices.Clone(out.Candidates))
	if err != nil {
		out.Kind = Escalated
		return out, fmt.Errorf("identity judge: %w", err)
	}
	out.Reason = v.Reason
	switch v.Decision {
	case Same:
		for _, c := range out.Candidates {
			if c.ConceptID == v.ConceptID {
				out.Kind, out.ConceptID, out.Matched, out.Similarity = JudgedMatch, c.ConceptID, &c, c.Similarity
				return out, nil
			}
		}
		out.Kind = Escalated
		return out, fmt.Errorf("%w: %q is not a candidate", ErrVerdict, v.ConceptID)
	case Different:
		out.Kind = Mint
	case Unsure:
		out.Kind = Escalated
	default:
		out.Kind = Escalated
		return out, fmt.Errorf("%w: decision %q", ErrVerdict, v.Decision)
	}
	return out, nil
}

// Nearest is ns with one entry per concept (its most similar alias),
// nearest first; ties go to the concept referenced most, then to the
// smaller id, so the order is stable. Entries with a NaN similarity are
// dropped.
func Nearest(ns []Neighbor) []Neighbor {
	best := map[string]int{}
	out := make([]Neighbor, 0, len(ns))
	for _, n := range ns {
		if math.IsNaN(n.Similarity) {
			continue
		}
		i, seen := best[n.ConceptID]
		switch {
		case !seen:
			best[n.ConceptID] = len(out)
			out = append(out, n)
		case n.Similarity > out[i].Similarity:
			out[i] = n
		}
	}
	slices.SortFunc(out, CompareNeighbors)
	return out
}

// CompareNeighbors is Nearest's order: negative when a comes before b
// (more similar, then referenced more, then the smaller id), 0 when
// neither does. Neither similarity may be NaN.
func CompareNeighbors(a, b Neighbor) int {
	return compareRank(a.Similarity, a.RefCount, a.ConceptID, b.Similarity, b.RefCount, b.ConceptID)
}

func compareRank(simA float64, refsA int, idA string, simB float64, refsB int, idB string) int {
	switch {
	case simA != simB:
		if simA > simB {
			return -1
		}
		return 1
	case refsA != refsB:
		if refsA > refsB {
			return -1
		}
		return 1
	}
	return strings.Compare(idA, idB)
}

// ProbeOutcome is the probe's outcome for a ladder outcome (WIRE.md §12:
// exact_hit, match or no_match; unavailable is the caller's, when no
// embedder answers).
func ProbeOutcome(k Kind) string {
	switch k {
	case ExactHit, KeptInputID:
		return "exact_hit"
	case Match, JudgedMatch:
		return "match"
	}
	return "no_match"
}

// ImportOutcome is an import row's outcome for a ladder outcome (WIRE.md
// §12): exact, matched, minted when the import mints, would_mint when it
// only reports, skipped for a text that normalizes to nothing.
func ImportOutcome(k Kind, mint bool) string {
	switch k {
	case ExactHit, KeptInputID:
		return "exact"
	case Match, JudgedMatch:
		return "matched"
	case Skipped:
		return "skipped"
	}
	if mint {
		return "minted"
	}
	return "would_mint"
}

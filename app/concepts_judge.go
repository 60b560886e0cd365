package app

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

// TaskIdentityJudge is the ledger task of the identity judge's calls.
const TaskIdentityJudge = "identity_judge"

// LLMConceptJudge is the identity judge on a chat model
// (ENRICH_CONCEPT_JUDGE_MODEL): one structured call per gray-band text,
// paid with the organization's key and charged to the usage ledger.
type LLMConceptJudge struct {
	LLM ports.LLM
	// Model is the judging model, with its price.
	Model model.Info
	Keys  *KeyRing
	// Usage is the ledger the calls are charged to (nil: not recorded).
	Usage ports.UsageLedger
	Clock ports.Clock
	IDs   ports.IDs
	Log   *slog.Logger
}

var _ ConceptJudge = (*LLMConceptJudge)(nil)

// judgeSchema is the judge's answer: a decision, the candidate it names
// with "same", and a reason for the review list.
var judgeSchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"decision":   map[string]any{"type": "string", "enum": []any{string(concept.Same), string(concept.Different), string(concept.Unsure)}},
		"concept_id": map[string]any{"type": []any{"string", "null"}, "description": "the candidate's id when decision is same, else null"},
		"reason":     map[string]any{"type": "string"},
	},
	"required":             []any{"decision", "concept_id", "reason"},
	"additionalProperties": false,
}

const judgeSystem = `You decide whether a text names the same real-world thing as one of a few candidate concepts of a vocabulary.
Answer "same" with the candidate's id only when you are confident they denote the same thing (a spelling variant, an abbreviation, a translation, a former name).
Answer "different" when the text names none of them (a related but distinct thing is different).
Answer "unsure" when a person should decide. Answer with JSON only.`

// judgeMessages is the judge's prompt: the text, its concept type and the
// candidates, nearest first, with their similarity.
func judgeMessages(conceptType, text string, candidates []concept.Neighbor) []enrichment.Message {
	var b strings.Builder
	fmt.Fprintf(&b, "Concept type: %s\nText: %q\n\nCandidates:\n", conceptType, text)
	for _, n := range candidates {
		line, _ := json.Marshal(map[string]any{"id": n.ConceptID, "canonical_text": n.CanonicalText, "matched_text": n.Text,
			"similarity": n.Similarity})
		b.Write(line)
		b.WriteByte('\n')
	}
	schema, _ := json.Marshal(judgeSchema)
	fmt.Fprintf(&b, "\nJSON Schema:\n%s\n", schema)
	return []enrichment.Message{{Role: "system", Content: judgeSystem}, {Role: "user", Content: b.String()}}
}

// Judge asks the model about text and its gray-band candidates, with the
// resilience of the app's other calls: a key the provider refuses leaves
// rotation and a rate-limited one rests, and the call moves on to the next
// usable key; an answer that is not the schema's is asked again once. A
// call that still fails, or a second malformed answer, is an error (the
// ladder escalates: the pair goes to review); an answer naming an id that
// is not a candidate is refused by the ladder (concept.ErrVerdict).
func (j *LLMConceptJudge) Judge(ctx context.Context, orgID, conceptType, text string, candidates []concept.Neighbor) (concept.Verdict, error) {
	var cred *ports.Credential
	if j.Keys != nil {
		c, err := j.Keys.Pick(ctx, orgID, j.Model.Key.Provider, "", nil)
		if err != nil {
			return concept.Verdict{}, err
		}
		cred = c
	}
	req := ports.LLMRequest{Model: j.Model.Key, Messages: judgeMessages(conceptType, text, candidates),
		Schema: judgeSchema, SchemaName: "identity_verdict", ResponseSchema: true, OrgID: orgID}
	var tried []string
	for switches, malformed := 0, 0; ; {
		req.Credential = cred
		t0 := time.Now()
		resp, err := j.LLM.Generate(ctx, req)
		j.charge(ctx, orgID, cred, resp, err, time.Since(t0))
		if err == nil {
			v, perr := parseVerdict(resp.Text)
			if perr == nil || malformed >= judgeRetries || ctx.Err() != nil {
				return v, perr
			}
			malformed++
			j.Log.WarnContext(ctx, "identity judge: a malformed answer, asked again", "model", j.Model.Key.String(), "err", perr)
			continue
		}
		if !rotateAfter(ctx, j.Keys, j.Log, orgID, cred, err) || switches >= maxKeySwitches {
			return concept.Verdict{}, fmt.Errorf("identity judge %s: %w", j.Model.Key, err)
		}
		switches++
		tried = append(tried, cred.KeyID)
		next, perr := j.Keys.Pick(ctx, orgID, j.Model.Key.Provider, "", tried)
		if perr != nil || next == nil {
			return concept.Verdict{}, fmt.Errorf("identity judge %s: %w", j.Model.Key, err)
		}
		cred = next
	}
}

// judgeRetries is how many times a malformed verdict is asked again.
const judgeRetries = 1

// parseVerdict reads the judge's answer.
func parseVerdict(text string) (concept.Verdict, error) {
	obj, err := enrichment.ParseAnswer(text)
	if err != nil {
		return concept.Verdict{}, fmt.Errorf("%w: %v", concept.ErrVerdict, err)
	}
	var a struct {
		Decision  string  `json:"decision"`
		ConceptID *string `json:"concept_id"`
		Reason    string  `json:"reason"`
	}
	if err := remarshal(obj, &a); err != nil {
		return concept.Verdict{}, fmt.Errorf("%w: %v", concept.ErrVerdict, err)
	}
	v := concept.Verdict{Decision: concept.Decision(a.Decision), Reason: a.Reason}
	if a.ConceptID != nil {
		v.ConceptID = *a.ConceptID
	}
	return v, nil
}

// charge records the judge's call in the ledger.
func (j *LLMConceptJudge) charge(ctx context.Context, orgID string, cred *ports.Credential, resp ports.LLMResponse, err error, took time.Duration) {
	if j.Usage == nil {
		return
	}
	recordUsage(ctx, j.Usage, j.Log, usage.Entry{ID: j.IDs.NewID(), OrgID: orgID, Task: TaskIdentityJudge, Model: j.Model.Key.String(),
		InputTokens: resp.InputTokens, OutputTokens: resp.OutputTokens, Cost: j.Model.Price.Cost(resp.InputTokens, resp.OutputTokens),
		LatencyMS: took.Milliseconds(), Outcome: usage.OK, CreatedAt: j.Clock.Now()}, cred, err)
}

package app_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// filedReviews keeps the review pairs filed (ports.ConceptReviews).
type filedReviews struct {
	ports.ConceptReviews
	mu    sync.Mutex
	pairs []ports.ConceptReview
}

func (f *filedReviews) FileReviews(_ context.Context, rs []ports.ConceptReview) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pairs = append(f.pairs, rs...)
	return nil
}

func TestLLMConceptJudge(t *testing.T) {
	tests := []struct {
		name   string
		answer func(acme string) string
		want   concept.Kind
		mints  bool
		review bool
		calls  int // the judge's calls charged
	}{
		{"same reuses the concept", func(id string) string {
			return fmt.Sprintf(`{"decision":"same","concept_id":%q,"reason":"abbreviation"}`, id)
		}, concept.JudgedMatch, false, false, 1},
		{"different mints", func(string) string { return `{"decision":"different","concept_id":null,"reason":"another firm"}` },
			concept.Mint, true, true, 1},
		{"unsure escalates", func(string) string { return `{"decision":"unsure","concept_id":null,"reason":"?"}` },
			concept.Escalated, true, true, 1},
		{"an id not among the candidates escalates", func(string) string {
			return `{"decision":"same","concept_id":"c-elsewhere","reason":"x"}`
		}, concept.Escalated, true, true, 1},
		// A malformed answer is asked again once before it escalates.
		{"garbage twice escalates", func(string) string { return `not json at all` }, concept.Escalated, true, true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ctx := context.Background()
			r := newConceptRig(t, "sk-good-key-0001", "sk-good-key-0001")
			reviews := &filedReviews{}
			r.svc.Reviews = reviews
			info, err := r.reg.Model(model.Key{Provider: "oa", Model: "judge-model"})
			is.NoErr(err)
			r.svc.Judge = &app.LLMConceptJudge{LLM: r.reg, Model: info, Keys: r.ring, Usage: r.ledger, Clock: r.svc.Clock, IDs: r.svc.IDs,
				Log: r.svc.Log}
			th := concept.Thresholds{Accept: 0.9999, JudgeFloor: 0.05} // everything near is gray
			first, err := r.svc.Resolve(ctx, rigOrg, app.ResolveRequest{Type: "company", Text: "Acme Corporation", Thresholds: th,
				Mode: app.ResolveWrite, Origin: concept.OriginManual})
			is.NoErr(err)
			is.True(first.Minted)
			acme := first.Concept.ID
			r.fake.SetResponder(func(req fakeopenai.ChatRequest) (string, int) { return tt.answer(acme), 0 })

			res, err := r.svc.Resolve(ctx, rigOrg, app.ResolveRequest{Type: "company", Text: "Acme Corp", Thresholds: th,
				Mode: app.ResolveWrite, Origin: concept.OriginManual})
			is.NoErr(err)
			is.Equal(res.Outcome.Kind, tt.want)
			is.Equal(res.Minted, tt.mints)
			if !tt.mints {
				is.Equal(res.Concept.ID, acme)
			}
			is.Equal(len(reviews.pairs) > 0, tt.review)
			if tt.review {
				is.Equal(reviews.pairs[0].BID, acme)
			}
			es := r.usage(t) // the judge's call is charged
			is.Equal(len(es), tt.calls)
			is.Equal(es[0].Task, app.TaskIdentityJudge)
			is.True(es[0].InputTokens > 0 && es[0].Cost > 0)
		})
	}
}

// judgeRig is a concept rig with the LLM judge on oa::judge-model, Acme
// Corporation minted, and every near text in the gray band.
func judgeRig(t *testing.T, good string, secrets ...string) (*conceptRig, *filedReviews, string) {
	t.Helper()
	r := newConceptRig(t, good, secrets...)
	reviews := &filedReviews{}
	r.svc.Reviews = reviews
	info, err := r.reg.Model(model.Key{Provider: "oa", Model: "judge-model"})
	if err != nil {
		t.Fatal(err)
	}
	r.svc.Judge = &app.LLMConceptJudge{LLM: r.reg, Model: info, Keys: r.ring, Usage: r.ledger, Clock: r.svc.Clock, IDs: r.svc.IDs, Log: r.svc.Log}
	first, err := r.svc.Resolve(context.Background(), rigOrg, app.ResolveRequest{Type: "company", Text: "Acme Corporation",
		Thresholds: judgeGray, Mode: app.ResolveWrite, Origin: concept.OriginManual})
	if err != nil {
		t.Fatal(err)
	}
	return r, reviews, first.Concept.ID
}

var judgeGray = concept.Thresholds{Accept: 0.9999, JudgeFloor: 0.05}

// TestLLMConceptJudgeResilience: the judge's call moves past a
// rate-limited key to the next one, and a malformed answer is asked again
// once; either way the verdict stands and nothing goes to review.
func TestLLMConceptJudgeResilience(t *testing.T) {
	tests := []struct {
		name    string
		garbage int      // malformed answers before the verdict
		fail    int      // 429s before the verdict
		keys    []string // the charged calls' keys, in order
		outcome []string
	}{
		{"429 then the next key", 0, 1,
			[]string{"pk-sk-good-key-0001", "pk-sk-good-key-0002"}, []string{"rate_limited", "ok"}},
		{"garbage then a verdict", 1, 0,
			[]string{"pk-sk-good-key-0001", "pk-sk-good-key-0001"}, []string{"ok", "ok"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			r, reviews, acme := judgeRig(t, "sk-good-key-0001,sk-good-key-0002", "sk-good-key-0001", "sk-good-key-0002")
			var mu sync.Mutex
			garbage := tt.garbage
			r.fake.SetResponder(func(fakeopenai.ChatRequest) (string, int) {
				mu.Lock()
				defer mu.Unlock()
				if garbage > 0 {
					garbage--
					return "Sure! Here is the verdict, but not as JSON.", 0
				}
				return fmt.Sprintf(`{"decision":"same","concept_id":%q,"reason":"abbreviation"}`, acme), 0
			})
			r.fake.FailNext(tt.fail, 429)
			res, err := r.svc.Resolve(context.Background(), rigOrg, app.ResolveRequest{Type: "company", Text: "Acme Corp", Thresholds: judgeGray,
				Mode: app.ResolveWrite, Origin: concept.OriginManual})
			is.NoErr(err)
			is.Equal(res.Outcome.Kind, concept.JudgedMatch)
			is.Equal(res.Concept.ID, acme)
			is.Equal(len(reviews.pairs), 0)
			var keys, outcomes []string
			for _, e := range r.usage(t) {
				if e.Task == app.TaskIdentityJudge {
					keys, outcomes = append(keys, e.KeyID), append(outcomes, string(e.Outcome))
				}
			}
			is.Equal(keys, tt.keys)
			is.Equal(outcomes, tt.outcome)
		})
	}
}

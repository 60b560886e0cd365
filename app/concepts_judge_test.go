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
	}{
		{"same reuses the concept", func(id string) string {
			return fmt.Sprintf(`{"decision":"same","concept_id":%q,"reason":"abbreviation"}`, id)
		}, concept.JudgedMatch, false, false},
		{"different mints", func(string) string { return `{"decision":"different","concept_id":null,"reason":"another firm"}` },
			concept.Mint, true, true},
		{"unsure escalates", func(string) string { return `{"decision":"unsure","concept_id":null,"reason":"?"}` },
			concept.Escalated, true, true},
		{"an id not among the candidates escalates", func(string) string {
			return `{"decision":"same","concept_id":"c-elsewhere","reason":"x"}`
		}, concept.Escalated, true, true},
		{"garbage escalates", func(string) string { return `not json at all` }, concept.Escalated, true, true},
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
			is.Equal(len(es), 1)
			is.Equal(es[0].Task, app.TaskIdentityJudge)
			is.True(es[0].InputTokens > 0 && es[0].Cost > 0)
		})
	}
}

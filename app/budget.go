package app

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

// DefaultMaxCallsPerJob bounds the LLM calls of one job (of one entity, in
// a batch) unless configured otherwise (ENRICH_MAX_CALLS_PER_JOB). A job at
// the domain cap (16) with 3 models plans 48 expertise calls, plus a
// classification and an arbitration: 50; every expertise call retried to
// the last of its 5 attempts makes 242. 256 lets that job finish, and
// admits at submit the largest request there is (10 models at the domain
// cap: 162 planned calls). Web search adds searches to a call, not calls.
const DefaultMaxCallsPerJob = 256

// CodeTooManyCalls is the code of a request whose planned LLM calls exceed
// the per-job cap (400), and of a job that reached the cap while it ran.
const CodeTooManyCalls = string(job.CodeTooManyCalls)

// maxDomains is the expertise domain cap (enrichment.Group).
func (s *Enricher) maxDomains() int {
	return cmpInt(s.MaxDomains, enrichment.DefaultMaxDomains)
}

// maxCalls is the per-job call cap.
func (s *Calls) maxCalls() int {
	return cmpInt(s.MaxPerJob, DefaultMaxCallsPerJob)
}

// plannedCalls is how many LLM calls one entity of pl makes when nothing
// is retried: every model's expertise calls, the classification, and the
// one arbitration call a fusion of several models may make.
func plannedCalls(pl *plan) int {
	n := len(pl.models) * len(pl.calls)
	if pl.classifier != nil {
		n++
	}
	if len(pl.models) >= 2 {
		n++
	}
	return n
}

// checkPlannedCalls refuses, before anything is spent, a request that
// could never finish within the call cap (400 too_many_calls).
func (s *Enricher) checkPlannedCalls(pl *plan) error {
	n, max := plannedCalls(pl), s.Calls.maxCalls()
	if n <= max {
		return nil
	}
	return coded(ports.ErrInvalid, CodeTooManyCalls,
		"models: the request plans %d LLM calls per entity (%d models × %d expertise calls, plus classification and arbitration), more than the limit of %d calls per job; name fewer models",
		n, len(pl.models), len(pl.calls), max).(*Error).at("models")
}

// callBudget counts the LLM calls of one job (one entity of a batch)
// against the cap: the runtime's guard behind the check at submit, for
// the calls no plan counts (retries, key switches).
type callBudget struct {
	max  int64
	made atomic.Int64
}

type budgetKey struct{}

// withBudget gives the calls made under ctx a budget of their own: a job's
// run, or one entity of a batch. The Calls of the run share it.
func (s *Calls) withBudget(ctx context.Context) context.Context {
	return context.WithValue(ctx, budgetKey{}, &callBudget{max: int64(s.maxCalls())})
}

// errTooManyCalls is a call the budget refused: it is never made.
type errTooManyCalls struct{ max int64 }

func (e *errTooManyCalls) Error() string {
	return fmt.Sprintf("the job reached its limit of %d LLM calls; the call was not made", e.max)
}

// take counts one call of ctx's budget, or refuses it past the cap (no
// budget: a call outside a job run, not counted).
func takeCall(ctx context.Context) error {
	b, _ := ctx.Value(budgetKey{}).(*callBudget)
	if b == nil {
		return nil
	}
	if b.made.Add(1) > b.max {
		return &errTooManyCalls{max: b.max}
	}
	return nil
}

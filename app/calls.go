package app

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

// Calls makes the paid LLM calls of every job: it picks the run's provider
// keys, moves a call to the next key when the provider refuses or
// rate-limits one, and records every call for the usage ledger. The
// enrichment, sample, schema and merge runners share it, so that every job
// pays and rotates keys alike.
type Calls struct {
	LLM ports.LLM
	// Keys chooses the provider key of each run; nil runs every call on
	// the providers' own configuration (environment keys, keyless).
	Keys  *KeyRing
	Clock ports.Clock
	IDs   ports.IDs
	Log   *slog.Logger
	// Guard is asked before a run starts and before each call (nil:
	// everything is allowed): the operator's quotas, later billing.
	Guard *SpendGuard
	// MaxPerJob bounds the calls of one job, or of one entity of a batch
	// (default DefaultMaxCallsPerJob; app/budget.go).
	MaxPerJob int
}

// CallsConfig tunes Calls.
type CallsConfig struct {
	// MaxPerJob: see Calls (0: the default).
	MaxPerJob int
}

// NewCalls makes calls through llm with the keys of keys (nil: the
// providers' own configuration), guarded by guard (nil: no guard).
func NewCalls(llm ports.LLM, keys *KeyRing, guard *SpendGuard, clock ports.Clock, ids ports.IDs, log *slog.Logger, cfg CallsConfig) *Calls {
	return &Calls{LLM: llm, Keys: keys, Guard: guard, Clock: clock, IDs: ids, Log: log, MaxPerJob: cfg.MaxPerJob}
}

// pickKeys chooses the key of every provider the run calls, so that a run
// with no usable key is refused before it starts; the run then sticks to
// these keys while they work. The guard then decides whether the run may
// spend through them (a quota used up refuses it: 429).
func (s *Calls) pickKeys(ctx context.Context, orgID string, models []model.Info) (map[string]*runKey, error) {
	if s.Keys == nil {
		return nil, s.Guard.Check(ctx, Spend{OrgID: orgID})
	}
	keys := map[string]*runKey{}
	spend := Spend{OrgID: orgID}
	for _, m := range models {
		p := m.Key.Provider
		if _, done := keys[p]; done {
			continue
		}
		c, err := s.Keys.Pick(ctx, orgID, p, "", nil)
		if err != nil {
			return nil, err
		}
		keys[p] = &runKey{orgID: orgID, provider: p, cred: c}
		spend.Operator = spend.Operator || SpendOf(orgID, c).Operator
	}
	if err := s.Guard.Check(ctx, spend); err != nil {
		return nil, err
	}
	return keys, nil
}

// allow decides, before it is made, whether a call with credential cred
// may go: within the run's call budget, and allowed by the guard.
func (s *Calls) allow(ctx context.Context, orgID string, cred *ports.Credential) error {
	if err := takeCall(ctx); err != nil {
		return err
	}
	return s.Guard.Check(ctx, SpendOf(orgID, cred))
}

// generate makes one call with the run's key for the provider. When the
// provider refuses the key (it leaves rotation) or rate-limits it (it rests
// for the Retry-After), the call moves to the next usable key at once: a
// key switch is not one of the job's validated-retry attempts (see
// docs/providers.md, "Keys and rotation"). With no other key the provider's
// error stands.
func (s *Calls) generate(ctx context.Context, pl *plan, m model.Info, req ports.LLMRequest) (ports.LLMResponse, error) {
	rk := pl.keys[m.Key.Provider]
	for switches := 0; ; switches++ {
		cred := rk.current()
		req.Credential = cred
		if err := s.allow(ctx, pl.usage.orgID, cred); err != nil {
			return ports.LLMResponse{}, err // never made: nothing to record
		}
		t0 := time.Now()
		resp, err := s.LLM.Generate(ctx, req)
		s.recordCall(pl, m, cred, req.Task, resp, err, time.Since(t0))
		if err == nil || cred == nil || ctx.Err() != nil || switches >= maxKeySwitches {
			return resp, err
		}
		var rl *ports.RateLimitError
		switch {
		case errors.Is(err, ports.ErrLLMAuth):
			s.Log.WarnContext(ctx, "provider refused a key: out of rotation", "provider", req.Model.Provider, "key_id", cred.KeyID, "source", cred.Source)
			s.Keys.Refused(ctx, rk.orgID, cred)
		case errors.As(err, &rl):
			s.Keys.Rest(ctx, rk.orgID, cred, rl.RetryAfter)
		default:
			return resp, err
		}
		if !rk.moveOn(ctx, s.Keys, cred) {
			return resp, err
		}
	}
}

// recordCall adds one call to the run's ledger entries.
func (s *Calls) recordCall(pl *plan, m model.Info, cred *ports.Credential, task ports.LLMTask, resp ports.LLMResponse, err error, took time.Duration) {
	if errors.Is(err, ports.ErrUnknownModel) || errors.Is(err, rotation.ErrNoUsableKey) {
		return // no request left the process
	}
	e := usage.Entry{ID: s.IDs.NewID(), Model: m.Key.String(), InputTokens: resp.InputTokens, OutputTokens: resp.OutputTokens,
		WebSearchCalls: resp.Searches, Cost: m.Price.CallCost(resp.InputTokens, resp.OutputTokens, resp.Searches), LatencyMS: took.Milliseconds(), Outcome: usage.OK, CreatedAt: s.Clock.Now()}
	if cred != nil {
		e.KeySource, e.KeyID = string(cred.Source), cred.KeyID
	}
	if task == ports.TaskClassification {
		e.Task = string(task) // the job's type otherwise (the engine stamps it)
	}
	if err != nil {
		switch {
		case errors.Is(err, context.Canceled):
			e.Outcome = "cancelled"
		case errors.Is(err, ports.ErrLLMAuth):
			e.Outcome = "key_refused"
		default:
			e.Outcome = string(classify(err))
		}
	}
	pl.usage.add(e)
}

// permanent reports whether retrying the same call cannot help.
func permanent(err error) bool {
	var cap *errTooManyCalls
	return errors.Is(err, ports.ErrUnknownModel) || errors.Is(err, ports.ErrLLMAuth) || errors.Is(err, ports.ErrContextLength) ||
		errors.Is(err, ports.ErrModelRetired) || errors.Is(err, rotation.ErrNoUsableKey) || errors.Is(err, ErrQuotaExceeded) ||
		errors.As(err, &cap)
}

// classify maps an LLM failure to its typed error code.
func classify(err error) job.ErrorCode {
	var cap *errTooManyCalls
	if c := quotaCode(err); c != "" {
		return job.ErrorCode(c)
	}
	switch {
	case errors.As(err, &cap):
		return job.CodeTooManyCalls
	case errors.Is(err, ports.ErrLLMAuth), errors.Is(err, rotation.ErrNoUsableKey):
		return job.CodeNoUsableKey
	case errors.Is(err, ports.ErrContextLength):
		return job.CodeContextLength
	case errors.Is(err, ports.ErrModelRetired):
		return job.CodeModelRetired
	case errors.Is(err, ports.ErrLLMTimeout), errors.Is(err, context.DeadlineExceeded):
		return job.CodeProviderTimeout
	case errors.Is(err, ports.ErrRateLimited):
		return job.CodeRateLimited
	case errors.Is(err, ports.ErrUnknownModel):
		return job.CodeModelRetired
	default:
		return job.CodeLLMUnavailable
	}
}

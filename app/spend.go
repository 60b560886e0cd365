package app

import (
	"context"
	"errors"
	"time"

	"github.com/entityenrich/enrich/domain/quota"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

// Spend is a spend about to happen: an organization's LLM call (or a
// request that will make some), and whose key pays for it.
type Spend struct {
	OrgID string
	// Operator: the operator's keys pay (a global stored key, or the key
	// of the server's environment); false for the organization's own
	// keys and endpoints, and for keyless providers.
	Operator bool
}

// SpendOf is the spend of orgID's call with credential c.
func SpendOf(orgID string, c *ports.Credential) Spend {
	return Spend{OrgID: orgID, Operator: c != nil && c.Source == rotation.Global}
}

// SpendCheck is one rule of the SpendGuard: nil lets the spend go on, an
// error (an *Error, which the caller sees as it is) refuses it.
type SpendCheck interface {
	CheckSpend(ctx context.Context, s Spend) error
}

// SpendGuard decides whether a spend may go on, before anything is spent:
// at submit (every door that makes LLM calls: enrichment, batch, samples,
// schema generation and edit, ambiguity analysis), and again before each
// call a running job makes. Its checks run in order and the first refusal
// stands. The operator's quotas (OperatorQuota: 429) are one check;
// billing's plan limits (402) become another, beside it.
type SpendGuard struct {
	Checks []SpendCheck
}

// NewSpendGuard guards with checks, in order (nil ones are left out).
func NewSpendGuard(checks ...SpendCheck) *SpendGuard {
	g := &SpendGuard{}
	for _, c := range checks {
		if c != nil {
			g.Checks = append(g.Checks, c)
		}
	}
	return g
}

// Check runs the checks on s (a nil guard allows everything).
func (g *SpendGuard) Check(ctx context.Context, s Spend) error {
	if g == nil {
		return nil
	}
	for _, c := range g.Checks {
		if err := c.CheckSpend(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// ErrQuotaExceeded is the kind of an operator quota's refusal: 429 with
// Retry-After, its code naming the quota (quota.CodeCallsPerDay,
// quota.CodeTokensPerDay).
var ErrQuotaExceeded = errors.New("quota exceeded")

// DefaultQuotaFreshness is how long OperatorQuota reuses what it read of
// an organization's spend: a submit or a call reads the ledger at most
// once a second per organization. The quota may be overrun by what the
// organization spends within it (and by the calls in flight when it is
// reached).
const DefaultQuotaFreshness = time.Second

// QuotaConfig sets the operator's quotas (zero fields: no limit).
type QuotaConfig struct {
	Limits quota.Limits
	// Freshness: see DefaultQuotaFreshness (0: the default).
	Freshness time.Duration
}

// OperatorQuota limits each organization's spend through the operator's
// keys per UTC day (domain/quota), counted from the usage ledger. Spends
// on the organization's own keys pass.
type OperatorQuota struct {
	Limits quota.Limits
	Ledger ports.UsageLedger
	Clock  ports.Clock
	// Spent keeps the counts read, by organization and freshness tick
	// (nil: the ledger is read every time).
	Spent     ports.Memo[SpentKey, quota.Spent]
	Freshness time.Duration
}

// SpentKey names one read of an organization's spend: the tick of
// Freshness it was read in.
type SpentKey struct {
	OrgID string
	Tick  int64
}

// NewOperatorQuota checks cfg's quotas against ledger; spent may be nil.
func NewOperatorQuota(cfg QuotaConfig, ledger ports.UsageLedger, clock ports.Clock, spent ports.Memo[SpentKey, quota.Spent]) *OperatorQuota {
	return &OperatorQuota{Limits: cfg.Limits, Ledger: ledger, Clock: clock, Spent: spent, Freshness: cfg.Freshness}
}

// CheckSpend refuses an operator-paid spend past a quota (SpendCheck).
func (q *OperatorQuota) CheckSpend(ctx context.Context, s Spend) error {
	if q == nil || !s.Operator || q.Limits.Unlimited() {
		return nil
	}
	now := q.Clock.Now()
	fresh := cmpDuration(q.Freshness, DefaultQuotaFreshness)
	spent, err := memo(ctx, q.Spent, SpentKey{OrgID: s.OrgID, Tick: now.UnixNano() / int64(fresh)},
		func(ctx context.Context, k SpentKey) (quota.Spent, error) {
			from, to := quota.Window(now)
			c, err := q.Ledger.CountUsage(ctx, usage.Scope{OrgID: k.OrgID, From: from, To: to, KeySource: string(rotation.Global)})
			return quota.Spent{Calls: c.Calls, Tokens: c.Tokens}, err
		})
	if err != nil {
		return err
	}
	if ex := quota.Check(q.Limits, spent, now); ex != nil {
		return &Error{Kind: ErrQuotaExceeded, Code: ex.Code, Detail: ex.Error(), RetryAfter: ex.RetryAfter}
	}
	return nil
}

// quotaCode is the job error code of a quota's refusal ("" for another
// error).
func quotaCode(err error) string {
	if e, ok := AsError(err); ok && errors.Is(err, ErrQuotaExceeded) {
		return e.Code
	}
	return ""
}

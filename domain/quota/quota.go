// Package quota decides whether an organization may still spend through the
// operator's provider keys (the global keys and the keys of the server's
// environment) today: calls and tokens per UTC day, counted from the usage
// ledger. An organization's own keys are never limited here. It is one of
// the checks of the app's SpendGuard; billing's plan limits are another.
package quota

import (
	"fmt"
	"time"
)

// The codes of a refusal, one per quota: the HTTP answer's code (429) and a
// job's error code when a running job's call is refused.
const (
	CodeCallsPerDay  = "quota_calls_per_day_exceeded"
	CodeTokensPerDay = "quota_tokens_per_day_exceeded"
)

// Defaults of the quotas (ENRICH_QUOTA_CALLS_PER_DAY,
// ENRICH_QUOTA_TOKENS_PER_DAY; 0 there means unlimited). Registration is
// open by default and runs fall back to the operator's keys, so a new
// organization must not be able to spend without bound: 1,000 calls are
// about 60 enrichments of a schema of 16 domains (or 200 of a typical
// schema), and 1,000,000 tokens cost a few US dollars at today's prices of
// the larger models. An operator who trusts its organizations raises them
// or sets 0.
const (
	DefaultCallsPerDay  = 1_000
	DefaultTokensPerDay = 1_000_000
)

// Limits are the operator's quotas per organization and UTC day; zero is
// no limit.
type Limits struct {
	CallsPerDay  int64
	TokensPerDay int64
}

// Unlimited reports whether no quota is set: nothing needs counting.
func (l Limits) Unlimited() bool { return l.CallsPerDay <= 0 && l.TokensPerDay <= 0 }

// Spent is what an organization spent through the operator's keys in the
// current window: calls (answered or failed: each was sent) and tokens
// (input plus output).
type Spent struct {
	Calls  int64
	Tokens int64
}

// Window is the quota window that holds now: the UTC day.
func Window(now time.Time) (from, to time.Time) {
	now = now.UTC()
	from = time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	return from, from.AddDate(0, 0, 1)
}

// Exceeded is a refusal: which quota, its limit, and how long until the
// window frees (the next UTC midnight).
type Exceeded struct {
	Code       string
	Limit      int64
	RetryAfter time.Duration
}

func (e *Exceeded) Error() string {
	what := "calls"
	if e.Code == CodeTokensPerDay {
		what = "tokens"
	}
	return fmt.Sprintf("the organization has used its daily quota of %d %s through the operator's provider keys; "+
		"it renews at 00:00 UTC (add the organization's own provider key to go on now)", e.Limit, what)
}

// Check decides whether one more call may be made through the operator's
// keys at now, given what was spent in now's window: nil, or the first
// quota reached (calls before tokens). A quota is reached when the spend is
// at or past it, so the call that would go beyond it is refused.
func Check(l Limits, s Spent, now time.Time) *Exceeded {
	_, to := Window(now)
	wait := to.Sub(now)
	switch {
	case l.CallsPerDay > 0 && s.Calls >= l.CallsPerDay:
		return &Exceeded{Code: CodeCallsPerDay, Limit: l.CallsPerDay, RetryAfter: wait}
	case l.TokensPerDay > 0 && s.Tokens >= l.TokensPerDay:
		return &Exceeded{Code: CodeTokensPerDay, Limit: l.TokensPerDay, RetryAfter: wait}
	}
	return nil
}

// Package llmlimit bounds the concurrent LLM calls of this process per
// provider, overall and per organization: a ports.LLM around another.
package llmlimit

import (
	"context"
	"sync"

	"github.com/entityenrich/enrich/ports"
)

// Limits bound the concurrent LLM calls of this process per
// provider: overall, and per organization. Zero means no bound.
type Limits struct {
	// Overall bounds the calls in flight to one provider.
	Overall int
	// PerOrg bounds one organization's calls in flight to one provider, so
	// that one tenant's batch cannot take every slot.
	PerOrg int
	// Providers overrides Overall for the providers it names.
	Providers map[string]int
	// Exempt providers are never bounded (the sandbox: no network, no
	// rate limit).
	Exempt []string
}

// LLM is a ports.LLM whose calls wait for a slot of their provider (and of
// their organization at that provider) before they go out. A call that has
// to wait says so once through its request's Queued callback, so that the
// job can show it. Slots are held for the call's duration only.
type LLM struct {
	Next   ports.LLM
	Limits Limits

	mu   sync.Mutex
	sems map[string]chan struct{}
}

var _ ports.LLM = (*LLM)(nil)

// New bounds next's calls by limits.
func New(next ports.LLM, limits Limits) *LLM {
	return &LLM{Next: next, Limits: limits, sems: map[string]chan struct{}{}}
}

// sem returns the semaphore named key of size n (nil for no bound).
func (l *LLM) sem(key string, n int) chan struct{} {
	if n <= 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	s, ok := l.sems[key]
	if !ok {
		s = make(chan struct{}, n)
		l.sems[key] = s
	}
	return s
}

// slots are the semaphores a call to provider p for organization org takes,
// in the order it takes them.
func (l *LLM) slots(org, p string) []chan struct{} {
	for _, ex := range l.Limits.Exempt {
		if ex == p {
			return nil
		}
	}
	overall := l.Limits.Overall
	if n, ok := l.Limits.Providers[p]; ok {
		overall = n
	}
	var out []chan struct{}
	for _, s := range []chan struct{}{l.sem("org\x00"+org+"\x00"+p, l.Limits.PerOrg), l.sem("all\x00"+p, overall)} {
		if s != nil {
			out = append(out, s)
		}
	}
	return out
}

// Generate waits for the organization's slot at the provider, then the
// provider's, makes the call and frees both. The order is always the same,
// so two calls never hold each other's slot.
func (l *LLM) Generate(ctx context.Context, req ports.LLMRequest) (ports.LLMResponse, error) {
	slots := l.slots(req.OrgID, req.Model.Provider)
	taken := 0
	defer func() {
		for _, s := range slots[:taken] {
			<-s
		}
	}()
	queued := false
	for _, s := range slots {
		select {
		case s <- struct{}{}:
		default:
			if !queued && req.Queued != nil {
				queued = true
				req.Queued()
			}
			select {
			case s <- struct{}{}:
			case <-ctx.Done():
				return ports.LLMResponse{}, ctx.Err()
			}
		}
		taken++
	}
	return l.Next.Generate(ctx, req)
}

package memory

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.UsageLedger = (*UsageLedger)(nil)

// UsageLedger keeps the LLM call ledger in memory.
type UsageLedger struct {
	mu      sync.Mutex
	ids     map[string]bool
	entries []usage.Entry
}

// NewUsageLedger returns an empty ledger.
func NewUsageLedger() *UsageLedger { return &UsageLedger{ids: map[string]bool{}} }

// AppendUsage adds the entries whose ids it does not hold.
func (l *UsageLedger) AppendUsage(_ context.Context, entries []usage.Entry) error {
	l.add(entries)
	return nil
}

// add adds the entries whose ids it does not hold and returns the ids it
// added.
func (l *UsageLedger) add(entries []usage.Entry) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var added []string
	for _, e := range entries {
		if l.ids[e.ID] {
			continue
		}
		e.CreatedAt = ts(e.CreatedAt)
		l.ids[e.ID] = true
		l.entries = append(l.entries, e)
		added = append(added, e.ID)
	}
	return added
}

// ListUsage returns orgID's entries in [from, to), oldest first.
func (l *UsageLedger) ListUsage(_ context.Context, orgID string, from, to time.Time) ([]usage.Entry, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []usage.Entry
	for _, e := range l.entries {
		if e.OrgID == orgID && !e.CreatedAt.Before(from) && e.CreatedAt.Before(to) {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return oldestFirst(out[i].CreatedAt, out[i].ID, out[j].CreatedAt, out[j].ID) })
	return out, nil
}

// AggregateUsage totals the entries in sc by g (usage.Aggregate).
func (l *UsageLedger) AggregateUsage(_ context.Context, sc usage.Scope, g usage.Group) ([]usage.Total, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return usage.Aggregate(l.entries, sc, g), nil
}

// CountUsage counts the entries in sc (usage.CountOf).
func (l *UsageLedger) CountUsage(_ context.Context, sc usage.Scope) (usage.Count, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return usage.CountOf(l.entries, sc), nil
}

// remove takes entries back out (a unit of work's rollback).
func (l *UsageLedger) remove(ids []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	drop := map[string]bool{}
	for _, id := range ids {
		drop[id] = true
		delete(l.ids, id)
	}
	kept := l.entries[:0]
	for _, e := range l.entries {
		if !drop[e.ID] {
			kept = append(kept, e)
		}
	}
	l.entries = kept
}

type txUsage struct {
	*UsageLedger
	u *undoLog
}

func (t txUsage) AppendUsage(_ context.Context, entries []usage.Entry) error {
	ids := t.add(entries) // a rollback removes only what this unit added
	t.u.add(func() { t.remove(ids) })
	return nil
}

// WithUsage makes the unit of work write the LLM call ledger l (Repos.Usage).
func (w *UnitOfWork) WithUsage(l *UsageLedger) *UnitOfWork {
	w.usage = l
	return w
}

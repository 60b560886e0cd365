package memory

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/entityenrich/enrich/ports"
)

var _ ports.LinkWebhookStore = (*LinkWebhooks)(nil)

// LinkWebhooks keeps the links' delta webhooks (on the SyncStore's links)
// and their notification state, under the SyncStore's lock.
type LinkWebhooks struct {
	s     *SyncStore
	state map[linkKey]*noticeState
}

type linkKey struct{ DatabaseID, SchemaID string }

// noticeState is a link's notification state.
type noticeState struct {
	notifiedUpTo int64
	attempts     int
	next         time.Time // zero: no retry pending
	leaseUntil   time.Time
}

// NewLinkWebhooks returns the link webhooks of s.
func NewLinkWebhooks(s *SyncStore) *LinkWebhooks {
	return &LinkWebhooks{s: s, state: map[linkKey]*noticeState{}}
}

func (w *LinkWebhooks) SetLinkWebhook(_ context.Context, orgID, databaseID, schemaID, url, secret string) (string, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	d, ok := w.s.databases[databaseID]
	if ok && d.OrgID == orgID {
		for i := range d.Links {
			l := &d.Links[i]
			if l.SchemaID != schemaID {
				continue
			}
			l.WebhookURL = url
			if l.WebhookSecret == "" {
				l.WebhookSecret = secret
			}
			return l.WebhookSecret, nil
		}
	}
	return "", fmt.Errorf("memory: set the webhook of link %s/%s: %w", databaseID, schemaID, ports.ErrNotFound)
}

func (w *LinkWebhooks) LinkWebhook(_ context.Context, orgID, databaseID, schemaID string) (string, string, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if d, ok := w.s.databases[databaseID]; ok && d.OrgID == orgID {
		if schemaID == "" && len(d.Links) > 0 {
			// The first link with a secret, else the first link.
			for _, l := range d.Links {
				if l.WebhookSecret != "" {
					return l.WebhookURL, l.WebhookSecret, nil
				}
			}
			return d.Links[0].WebhookURL, d.Links[0].WebhookSecret, nil
		}
		if l, ok := d.Link(schemaID); ok {
			return l.WebhookURL, l.WebhookSecret, nil
		}
	}
	return "", "", fmt.Errorf("memory: webhook of link %s/%s: %w", databaseID, schemaID, ports.ErrNotFound)
}

func (w *LinkWebhooks) PendingLinkNotices(_ context.Context, now time.Time, n int) ([]ports.LinkNotice, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	var out []ports.LinkNotice
	for id, d := range w.s.databases {
		f := w.s.feeds[id]
		if f == nil {
			continue
		}
		for _, l := range d.Links {
			if l.WebhookURL == "" || !l.EnrichmentEnabled {
				continue
			}
			st := w.state[linkKey{id, l.SchemaID}]
			if st == nil {
				st = &noticeState{}
			}
			if st.leaseUntil.After(now) {
				continue
			}
			ln := ports.LinkNotice{DatabaseID: id, SchemaID: l.SchemaID, DebounceS: d.NotifyDebounceS,
				CapS: d.MaxThresholdTimeoutS, NextAttempt: st.next, Attempts: st.attempts}
			above := max(st.notifiedUpTo, f.state.Watermark)
			for _, r := range f.deltas {
				if r.ID <= above || r.SchemaID != l.SchemaID {
					continue
				}
				if ln.MaxDeltaID == 0 {
					ln.First = r.CreatedAt
				}
				ln.MaxDeltaID, ln.Last = r.ID, r.CreatedAt
			}
			if ln.MaxDeltaID > 0 {
				out = append(out, ln)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].First.Before(out[j].First) })
	if len(out) > n {
		out = out[:n]
	}
	return out, nil
}

func (w *LinkWebhooks) ClaimLinkNotice(_ context.Context, databaseID, schemaID string, now, leaseUntil time.Time) (ports.LinkNotice, bool, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	d, ok := w.s.databases[databaseID]
	if !ok {
		return ports.LinkNotice{}, false, nil
	}
	l, ok := d.Link(schemaID)
	if !ok || l.WebhookURL == "" {
		return ports.LinkNotice{}, false, nil
	}
	k := linkKey{databaseID, schemaID}
	st := w.state[k]
	if st == nil {
		st = &noticeState{}
		w.state[k] = st
	}
	if st.leaseUntil.After(now) {
		return ports.LinkNotice{}, false, nil
	}
	st.leaseUntil = leaseUntil
	return ports.LinkNotice{DatabaseID: databaseID, SchemaID: schemaID, URL: l.WebhookURL, Secret: l.WebhookSecret,
		Attempts: st.attempts, NextAttempt: st.next}, true, nil
}

func (w *LinkWebhooks) LinkNoticeSent(_ context.Context, databaseID, schemaID string, upTo int64) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if st := w.state[linkKey{databaseID, schemaID}]; st != nil {
		st.notifiedUpTo = max(st.notifiedUpTo, upTo)
		st.attempts, st.next, st.leaseUntil = 0, time.Time{}, time.Time{}
	}
	return nil
}

func (w *LinkWebhooks) LinkNoticeFailed(_ context.Context, databaseID, schemaID string, attempts int, next time.Time) error {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	if st := w.state[linkKey{databaseID, schemaID}]; st != nil {
		st.attempts, st.next, st.leaseUntil = attempts, ts(next), time.Time{}
	}
	return nil
}

package memory

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/entityenrich/enrich/ports"
)

var (
	_ ports.SubscriptionStore = (*Notifications)(nil)
	_ ports.Outbox            = (*Notifications)(nil)
)

// Notifications keeps schema event subscriptions and the outbox of their
// deliveries.
type Notifications struct {
	mu         sync.Mutex
	subs       map[string]*ports.Subscription // by id
	deliveries map[string]*delivery           // by id
	seq        int64
}

// delivery is a queued event for one subscription.
type delivery struct {
	ports.Delivery
	subID     string
	next      *time.Time // nil once delivered or given up
	delivered *time.Time
	lastError string
	seq       int64 // queue order
	queued    time.Time
}

// NewNotifications returns empty Notifications.
func NewNotifications() *Notifications {
	return &Notifications{subs: map[string]*ports.Subscription{}, deliveries: map[string]*delivery{}}
}

func (n *Notifications) CreateSubscription(_ context.Context, s *ports.Subscription) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if _, ok := n.subs[s.ID]; ok {
		return fmt.Errorf("memory: create subscription %s: %w", s.ID, ports.ErrConflict)
	}
	c := *s
	c.CreatedAt = ts(c.CreatedAt)
	n.subs[s.ID] = &c
	return nil
}

func (n *Notifications) ListSubscriptions(_ context.Context, orgID, schemaID string) ([]*ports.Subscription, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*ports.Subscription
	for _, s := range n.subs {
		if s.OrgID == orgID && s.SchemaID == schemaID {
			c := *s
			out = append(out, &c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

func (n *Notifications) DeleteSubscriptions(_ context.Context, orgID, schemaID string, m ports.SubscriptionMatch) (int, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	deleted := 0
	for id, s := range n.subs {
		if s.OrgID != orgID || s.SchemaID != schemaID || (m.ID != "" && id != m.ID) || (m.ID == "" && s.URL != m.URL) {
			continue
		}
		delete(n.subs, id)
		deleted++
		for did, d := range n.deliveries {
			if d.subID == id {
				delete(n.deliveries, did)
			}
		}
	}
	return deleted, nil
}

// QueueEvents queues a delivery of each event to each subscription its
// schema has.
func (n *Notifications) QueueEvents(_ context.Context, events []ports.SchemaEvent) error {
	_ = n.queue(events)
	return nil
}

// queue queues events and returns the ids of the deliveries it added.
func (n *Notifications) queue(events []ports.SchemaEvent) []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var added []string
	for _, e := range events {
		for _, s := range n.subs {
			if s.SchemaID != e.SchemaID || s.OrgID != e.OrgID {
				continue
			}
			id := e.ID + "/" + s.ID
			if _, ok := n.deliveries[id]; ok {
				continue
			}
			at := ts(e.At)
			n.seq++
			n.deliveries[id] = &delivery{Delivery: ports.Delivery{ID: id, EventID: e.ID, Event: e.Event,
				Data: cloneJSON(e.Data)}, subID: s.ID, next: &at, seq: n.seq, queued: at}
			added = append(added, id)
		}
	}
	return added
}

func (n *Notifications) unqueue(ids []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, id := range ids {
		delete(n.deliveries, id)
	}
}

func (n *Notifications) ClaimDeliveries(_ context.Context, now, leaseUntil time.Time, limit int) ([]ports.Delivery, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var due []*delivery
	for _, d := range n.deliveries {
		if d.next != nil && !d.next.After(now) {
			due = append(due, d)
		}
	}
	sort.Slice(due, func(i, j int) bool {
		if !due[i].next.Equal(*due[j].next) {
			return due[i].next.Before(*due[j].next)
		}
		return due[i].seq < due[j].seq
	})
	if len(due) > limit {
		due = due[:limit]
	}
	out := make([]ports.Delivery, 0, len(due))
	for _, d := range due {
		until := ts(leaseUntil)
		d.next = &until
		d.Attempts++
		s := n.subs[d.subID]
		c := d.Delivery
		c.URL, c.Secret, c.Data = s.URL, s.Secret, cloneJSON(d.Data)
		out = append(out, c)
	}
	return out, nil
}

func (n *Notifications) DeliverySent(_ context.Context, id string, at time.Time) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if d, ok := n.deliveries[id]; ok {
		t := ts(at)
		d.next, d.delivered = nil, &t
	}
	return nil
}

func (n *Notifications) DeliveryFailed(_ context.Context, id string, next time.Time, lastError string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if d, ok := n.deliveries[id]; ok {
		d.lastError, d.next = lastError, nil
		if !next.IsZero() {
			t := ts(next)
			d.next = &t
		}
	}
	return nil
}

// PruneDeliveries implements ports.Outbox.
func (n *Notifications) PruneDeliveries(_ context.Context, before time.Time, limit int) (int64, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	var done []*delivery
	for _, d := range n.deliveries {
		if d.next == nil && d.queued.Before(before) {
			done = append(done, d)
		}
	}
	sort.Slice(done, func(i, j int) bool { return done[i].seq < done[j].seq })
	done = done[:min(len(done), limit)]
	for _, d := range done {
		delete(n.deliveries, d.ID)
	}
	return int64(len(done)), nil
}

// txOutbox is the outbox inside a unit of work.
type txOutbox struct {
	n *Notifications
	u *undoLog
}

func (t txOutbox) QueueEvents(_ context.Context, events []ports.SchemaEvent) error {
	ids := t.n.queue(events)
	t.u.add(func() { t.n.unqueue(ids) })
	return nil
}

// WithOutbox makes the unit of work's Repos.Outbox queue to n, and a job's
// end queue its schema events there.
func (w *UnitOfWork) WithOutbox(n *Notifications) *UnitOfWork {
	w.outbox = n
	return w
}

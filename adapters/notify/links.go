package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/entityenrich/enrich/domain/webhook"
	"github.com/entityenrich/enrich/ports"
)

// notifyDue sends the links' notifications whose debounce (or retry) is
// over, each claimed first so that one replica sends it.
func (x *Dispatcher) notifyDue(ctx context.Context) int {
	now := x.d.Clock.Now()
	pending, err := x.d.Links.PendingLinkNotices(ctx, now, x.c.Batch)
	if err != nil {
		if ctx.Err() == nil {
			x.d.Log.Warn("link notifications not read", "err", err)
		}
		return 0
	}
	sent := 0
	for _, p := range pending {
		if now.Before(dueAt(p)) {
			continue
		}
		c, ok, err := x.d.Links.ClaimLinkNotice(ctx, p.DatabaseID, p.SchemaID, now, now.Add(x.c.Lease))
		if err != nil || !ok {
			continue
		}
		if x.notify(ctx, p, c) {
			sent++
		}
	}
	return sent
}

// dueAt is when a pending notification goes: after its debounce, and not
// before the retry of a failed attempt.
func dueAt(p ports.LinkNotice) (at time.Time) {
	at = webhook.DebounceOf(p.DebounceS, p.CapS).At(p.First, p.Last)
	if p.Attempts > 0 && p.NextAttempt.After(at) {
		at = p.NextAttempt
	}
	return at
}

// notify sends the claimed notification of p (c holds the URL and the
// secret) and records how it went.
func (x *Dispatcher) notify(ctx context.Context, p, c ports.LinkNotice) bool {
	data, _ := json.Marshal(webhook.DeltasData{DatabaseID: p.DatabaseID, SavedSchemaID: p.SchemaID, MaxDeltaID: p.MaxDeltaID})
	// The same deltas keep the same event id on every retry.
	id := fmt.Sprintf("deltas:%s:%s:%d", p.DatabaseID, p.SchemaID, p.MaxDeltaID)
	err := x.send(ctx, c.URL, c.Secret, id, webhook.DeltasAvailable, data)
	if ctx.Err() != nil {
		return false
	}
	bg := context.WithoutCancel(ctx)
	if err == nil {
		if err := x.d.Links.LinkNoticeSent(bg, p.DatabaseID, p.SchemaID, p.MaxDeltaID); err != nil {
			x.d.Log.Warn("link notification not marked sent; it will be sent again", "database_id", p.DatabaseID, "err", err)
		}
		return true
	}
	attempts := c.Attempts + 1
	next, retry := x.c.Retry.Next(attempts, x.d.Clock.Now())
	if !retry {
		// The consumer still finds the deltas when it polls; the next
		// deltas notify again.
		x.d.Log.Warn("link notification given up", "database_id", p.DatabaseID, "schema_id", p.SchemaID, "attempts", attempts, "err", err)
		err = x.d.Links.LinkNoticeSent(bg, p.DatabaseID, p.SchemaID, p.MaxDeltaID)
	} else {
		err = x.d.Links.LinkNoticeFailed(bg, p.DatabaseID, p.SchemaID, attempts, next)
	}
	if err != nil {
		x.d.Log.Warn("link notification state not recorded; its claim will lapse", "database_id", p.DatabaseID, "err", err)
	}
	return false
}

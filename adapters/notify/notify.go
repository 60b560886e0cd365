// Package notify is the dispatcher of the service's notifications, run in
// every replica: it claims due deliveries of schema events from the outbox
// and due delta-available notifications of links, signs them
// (domain/webhook) and posts them through the WebhookSender. Claims are
// leases in the store, so replicas share the work and a replica that dies
// mid-send leaves its claims to the others once the lease lapses; failed
// attempts are retried on domain/webhook's schedule, across restarts.
package notify

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/entityenrich/enrich/domain/webhook"
	"github.com/entityenrich/enrich/ports"
)

// Defaults of Config.
const (
	DefaultPoll  = time.Second
	DefaultLease = time.Minute
	DefaultBatch = 50
	// DefaultSenders bounds the posts in flight per replica.
	DefaultSenders = 8
	// DefaultRetention is how long finished deliveries are kept.
	DefaultRetention = 7 * 24 * time.Hour
	// pruneEvery spaces the prunes of one dispatcher, and pruneBatch
	// bounds one delete.
	pruneEvery = time.Hour
	pruneBatch = 1000
)

// Config sets the dispatcher's timing.
type Config struct {
	// Retry is the schedule of failed attempts (zero: DefaultRetry).
	Retry webhook.Retry
	// Poll is how often the stores are looked at (default 1 s).
	Poll time.Duration
	// Lease is how long a claim holds its deliveries; it must cover the
	// sends of a whole batch (default: from SendTimeout, else 1 min).
	Lease time.Duration
	// SendTimeout is the sender's time limit of one attempt.
	SendTimeout time.Duration
	// Batch bounds one claim (default 50).
	Batch int
	// Senders bounds the posts in flight (default 8).
	Senders int
	// Retention is how long a finished delivery (delivered or given up)
	// is kept for operators before it is pruned (default 7 days).
	Retention time.Duration
}

// Deps are the dispatcher's ports. Links may be nil (no delta webhooks).
type Deps struct {
	Outbox ports.Outbox
	Links  ports.LinkWebhookStore
	Sender ports.WebhookSender
	Cipher ports.Cipher
	Clock  ports.Clock
	Log    *slog.Logger
}

// Dispatcher delivers notifications.
type Dispatcher struct {
	d      Deps
	c      Config
	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}
	wake   chan struct{}
	pruned time.Time // when this dispatcher last pruned
}

// New returns a Dispatcher; Start runs it.
func New(d Deps, c Config) *Dispatcher {
	if c.Retry.MaxAttempts == 0 {
		c.Retry = webhook.DefaultRetry
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.Batch <= 0 {
		c.Batch = DefaultBatch
	}
	if c.Senders <= 0 {
		c.Senders = DefaultSenders
	}
	if c.Retention <= 0 {
		c.Retention = DefaultRetention
	}
	if c.Lease <= 0 {
		c.Lease = DefaultLease
		if c.SendTimeout > 0 {
			// The batch's last send may start after the others' rounds.
			c.Lease = time.Duration(c.Batch/c.Senders+1)*c.SendTimeout + 5*time.Second
		}
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return &Dispatcher{d: d, c: c, wake: make(chan struct{}, 1)}
}

// Start runs the dispatcher's loop until Stop.
func (x *Dispatcher) Start() {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	x.cancel, x.done = cancel, make(chan struct{})
	go x.loop(ctx, x.done)
}

// Stop ends the loop and waits for it: sends in flight are abandoned, and
// their claims lapse to the next dispatcher.
func (x *Dispatcher) Stop() {
	x.mu.Lock()
	cancel, done := x.cancel, x.done
	x.cancel = nil
	x.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Wake makes the loop look at once (after a commit that queued something).
func (x *Dispatcher) Wake() {
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

func (x *Dispatcher) loop(ctx context.Context, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(x.c.Poll)
	defer t.Stop()
	for {
		x.Pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		case <-x.wake:
		}
	}
}

// Pass delivers what is due now: the outbox until a claim comes back
// short, then the links' notifications. It returns how many were sent.
func (x *Dispatcher) Pass(ctx context.Context) int {
	sent := 0
	for ctx.Err() == nil {
		n, full := x.deliverDue(ctx)
		sent += n
		if !full {
			break
		}
	}
	if x.d.Links != nil && ctx.Err() == nil {
		sent += x.notifyDue(ctx)
	}
	x.prune(ctx)
	return sent
}

// prune deletes the finished deliveries past their retention, at most
// once per pruneEvery.
func (x *Dispatcher) prune(ctx context.Context) {
	now := x.d.Clock.Now()
	if now.Sub(x.pruned) < pruneEvery {
		return
	}
	x.pruned = now
	var total int64
	for ctx.Err() == nil {
		n, err := x.d.Outbox.PruneDeliveries(ctx, now.Add(-x.c.Retention), pruneBatch)
		if err != nil {
			x.d.Log.Warn("prune finished deliveries", "err", err)
			return
		}
		total += n
		if n < pruneBatch {
			break
		}
	}
	if total > 0 {
		x.d.Log.Info("pruned finished deliveries", "deleted", total, "retention", x.c.Retention)
	}
}

// deliverDue claims one batch of deliveries and sends them; full says the
// claim was a whole batch (more may be due).
func (x *Dispatcher) deliverDue(ctx context.Context) (sent int, full bool) {
	now := x.d.Clock.Now()
	ds, err := x.d.Outbox.ClaimDeliveries(ctx, now, now.Add(x.c.Lease), x.c.Batch)
	if err != nil {
		if ctx.Err() == nil {
			x.d.Log.Warn("notification deliveries not claimed", "err", err)
		}
		return 0, false
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	slots := make(chan struct{}, x.c.Senders)
	for _, d := range ds {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			if x.deliver(ctx, d) {
				mu.Lock()
				sent++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return sent, len(ds) == x.c.Batch
}

// deliver sends one claimed delivery and records how it went.
func (x *Dispatcher) deliver(ctx context.Context, d ports.Delivery) bool {
	err := x.send(ctx, d.URL, d.Secret, d.EventID, d.Event, d.Data)
	if ctx.Err() != nil {
		return false // stopped: the claim lapses to the next dispatcher
	}
	bg := context.WithoutCancel(ctx)
	if err == nil {
		if err := x.d.Outbox.DeliverySent(bg, d.ID, x.d.Clock.Now()); err != nil {
			x.d.Log.Warn("delivery not marked sent; it will be sent again", "delivery_id", d.ID, "err", err)
		}
		return true
	}
	next, retry := x.c.Retry.Next(d.Attempts, x.d.Clock.Now())
	if !retry {
		x.d.Log.Warn("schema event delivery given up", "delivery_id", d.ID, "attempts", d.Attempts, "err", err)
	}
	if merr := x.d.Outbox.DeliveryFailed(bg, d.ID, next, errText(err)); merr != nil {
		x.d.Log.Warn("failed delivery not recorded; its claim will lapse", "delivery_id", d.ID, "err", merr)
	}
	return false
}

// send signs body and posts it with the sealed secret.
func (x *Dispatcher) send(ctx context.Context, url, sealed, eventID string, ev webhook.Event, data json.RawMessage) error {
	secret, err := x.d.Cipher.Open([]byte(sealed))
	if err != nil {
		return fmt.Errorf("the signing secret cannot be opened: %w", err)
	}
	body := webhook.Body(ev, data)
	return x.d.Sender.Send(ctx, ports.WebhookRequest{URL: url, EventID: eventID, Event: ev,
		Signature: webhook.Sign(string(secret), x.d.Clock.Now(), body), Body: body})
}

// errText is an attempt's error as kept for operators: valid UTF-8, no
// NUL, at most 500 bytes.
func errText(err error) string {
	s := strings.ReplaceAll(strings.ToValidUTF8(err.Error(), "?"), "\x00", "")
	if len(s) > 500 {
		s = strings.ToValidUTF8(s[:500], "")
	}
	return s
}

package contract

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/webhook"
	"github.com/entityenrich/enrich/ports"
)

// NotificationsFixture is what RunNotifications needs: the subscription
// store and the outbox of one store, its unit of work (whose
// Repos.Outbox queues), and a way to make a schema that subscriptions may
// name.
type NotificationsFixture struct {
	Subscriptions ports.SubscriptionStore
	Outbox        ports.Outbox
	UoW           ports.UnitOfWork
	NewSchema     func(t *testing.T) (orgID, schemaID string)
}

// RunNotifications is the contract of ports.SubscriptionStore and
// ports.Outbox. Each case works in a time window before the previous
// case's, so that deliveries a case leaves are never due in the next.
func RunNotifications(t *testing.T, newFixture func(t *testing.T) NotificationsFixture) {
	cases := []struct {
		name string
		run  func(t *testing.T, f NotificationsFixture, t0 time.Time)
	}{
		{"subscriptions are listed per schema and deleted by id or url", subscriptionsCRUD},
		{"events fan out to the schema's subscriptions and are leased", outboxClaims},
		{"failed deliveries are retried or given up", outboxRetries},
		{"a rolled-back unit of work queues nothing", outboxRollback},
		{"deleting a subscription drops its deliveries", outboxDeleteSubscription},
		{"a job's end queues its schema events in its commit", outboxJobEnd},
		// Last: its t0 is the earliest, so its prune reaches no other case's rows.
		{"finished deliveries are pruned past their retention", outboxPrune},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, newFixture(t), base.Add(-time.Duration(i)*24*time.Hour))
		})
	}
}

func newSubscription(orgID, schemaID, url string, at time.Time) *ports.Subscription {
	return &ports.Subscription{ID: newID("sub"), OrgID: orgID, SchemaID: schemaID, URL: url, Source: "n8n",
		Secret: "sealed-" + url, CreatedAt: at}
}

func subscriptionsCRUD(t *testing.T, f NotificationsFixture, t0 time.Time) {
	is := is.New(t)
	ctx := context.Background()
	org, sc := f.NewSchema(t)
	_, other := f.NewSchema(t)
	a := newSubscription(org, sc, "https://a.example/hook", t0)
	b := newSubscription(org, sc, "https://b.example/hook", t0.Add(time.Second))
	c := newSubscription(org, sc, "https://a.example/hook", t0.Add(2*time.Second))
	for _, s := range []*ports.Subscription{b, a, c} {
		is.NoErr(f.Subscriptions.CreateSubscription(ctx, s))
	}
	is.True(errors.Is(f.Subscriptions.CreateSubscription(ctx, a), ports.ErrConflict))
	list, err := f.Subscriptions.ListSubscriptions(ctx, org, sc)
	is.NoErr(err)
	is.Equal(len(list), 3)
	is.Equal(list[0].ID, a.ID) // oldest first
	is.Equal(list[0].URL, a.URL)
	is.Equal(list[0].Source, "n8n")
	is.Equal(list[0].Secret, a.Secret)
	sameTime(t, "created_at", list[0].CreatedAt, t0)
	list, err = f.Subscriptions.ListSubscriptions(ctx, "another-org", sc)
	is.NoErr(err)
	is.Equal(len(list), 0) // another organization sees none
	n, err := f.Subscriptions.DeleteSubscriptions(ctx, "another-org", sc, ports.SubscriptionMatch{ID: a.ID})
	is.NoErr(err)
	is.Equal(n, 0)
	n, err = f.Subscriptions.DeleteSubscriptions(ctx, org, other, ports.SubscriptionMatch{URL: a.URL})
	is.NoErr(err)
	is.Equal(n, 0) // another schema's
	n, err = f.Subscriptions.DeleteSubscriptions(ctx, org, sc, ports.SubscriptionMatch{URL: a.URL})
	is.NoErr(err)
	is.Equal(n, 2) // both subscriptions of that URL
	n, err = f.Subscriptions.DeleteSubscriptions(ctx, org, sc, ports.SubscriptionMatch{URL: a.URL})
	is.NoErr(err)
	is.Equal(n, 0) // idempotent
	n, err = f.Subscriptions.DeleteSubscriptions(ctx, org, sc, ports.SubscriptionMatch{ID: b.ID})
	is.NoErr(err)
	is.Equal(n, 1)
	list, err = f.Subscriptions.ListSubscriptions(ctx, org, sc)
	is.NoErr(err)
	is.Equal(len(list), 0)
}

func schemaEvent(org, schemaID string, at time.Time) ports.SchemaEvent {
	return ports.SchemaEvent{ID: newID("evt"), OrgID: org, SchemaID: schemaID, Event: webhook.EnrichmentResult,
		Data: []byte(`{"id":"rec","structured_output":{"name":"Ada"}}`), At: at}
}

func byID(ds []ports.Delivery) []ports.Delivery {
	sort.Slice(ds, func(i, j int) bool { return ds[i].ID < ds[j].ID })
	return ds
}

func outboxClaims(t *testing.T, f NotificationsFixture, t0 time.Time) {
	is := is.New(t)
	ctx := context.Background()
	org, sc := f.NewSchema(t)
	_, quiet := f.NewSchema(t)
	a := newSubscription(org, sc, "https://a.example/hook", t0)
	b := newSubscription(org, sc, "https://b.example/hook", t0)
	is.NoErr(f.Subscriptions.CreateSubscription(ctx, a))
	is.NoErr(f.Subscriptions.CreateSubscription(ctx, b))
	ev := schemaEvent(org, sc, t0)
	other := schemaEvent(org, quiet, t0) // a schema without subscriptions: nothing queued
	is.NoErr(f.Outbox.QueueEvents(ctx, []ports.SchemaEvent{ev, other}))
	is.NoErr(f.Outbox.QueueEvents(ctx, []ports.SchemaEvent{ev})) // queued once per subscription

	got, err := f.Outbox.ClaimDeliveries(ctx, t0.Add(-time.Second), t0.Add(time.Minute), 10)
	is.NoErr(err)
	is.Equal(len(got), 0) // not due yet
	got, err = f.Outbox.ClaimDeliveries(ctx, t0.Add(time.Second), t0.Add(time.Minute), 10)
	is.NoErr(err)
	is.Equal(len(got), 2)
	urls := map[string]string{}
	for _, d := range got {
		is.Equal(d.EventID, ev.ID)
		is.Equal(d.Event, webhook.EnrichmentResult)
		sameJSON(t, "data", d.Data, ev.Data)
		is.Equal(d.Attempts, 1)
		urls[d.URL] = d.Secret
	}
	is.Equal(urls, map[string]string{a.URL: a.Secret, b.URL: b.Secret})
	is.True(got[0].ID != got[1].ID)

	again, err := f.Outbox.ClaimDeliveries(ctx, t0.Add(30*time.Second), t0.Add(2*time.Minute), 10)
	is.NoErr(err)
	is.Equal(len(again), 0) // leased
	is.NoErr(f.Outbox.DeliverySent(ctx, got[0].ID, t0.Add(time.Second)))
	again, err = f.Outbox.ClaimDeliveries(ctx, t0.Add(61*time.Second), t0.Add(2*time.Minute), 10)
	is.NoErr(err)
	is.Equal(len(again), 1) // the lease lapsed: the unsent one again
	is.Equal(again[0].ID, got[1].ID)
	is.Equal(again[0].Attempts, 2)
	is.NoErr(f.Outbox.DeliverySent(ctx, again[0].ID, t0.Add(62*time.Second)))
	again, err = f.Outbox.ClaimDeliveries(ctx, t0.Add(time.Hour), t0.Add(2*time.Hour), 10)
	is.NoErr(err)
	is.Equal(len(again), 0) // delivered ones never again

	// The limit holds.
	evs := []ports.SchemaEvent{schemaEvent(org, sc, t0.Add(time.Hour)), schemaEvent(org, sc, t0.Add(time.Hour))}
	is.NoErr(f.Outbox.QueueEvents(ctx, evs))
	got, err = f.Outbox.ClaimDeliveries(ctx, t0.Add(2*time.Hour), t0.Add(3*time.Hour), 3)
	is.NoErr(err)
	is.Equal(len(got), 3)
	got, err = f.Outbox.ClaimDeliveries(ctx, t0.Add(2*time.Hour), t0.Add(3*time.Hour), 3)
	is.NoErr(err)
	is.Equal(len(got), 1)
}

func outboxRetries(t *testing.T, f NotificationsFixture, t0 time.Time) {
	is := is.New(t)
	ctx := context.Background()
	org, sc := f.NewSchema(t)
	is.NoErr(f.Subscriptions.CreateSubscription(ctx, newSubscription(org, sc, "https://a.example/hook", t0)))
	is.NoErr(f.Outbox.QueueEvents(ctx, []ports.SchemaEvent{schemaEvent(org, sc, t0)}))
	got, err := f.Outbox.ClaimDeliveries(ctx, t0, t0.Add(time.Minute), 10)
	is.NoErr(err)
	is.Equal(len(got), 1)
	is.NoErr(f.Outbox.DeliveryFailed(ctx, got[0].ID, t0.Add(10*time.Second), "503 Service Unavailable"))
	again, err := f.Outbox.ClaimDeliveries(ctx, t0.Add(9*time.Second), t0.Add(time.Minute), 10)
	is.NoErr(err)
	is.Equal(len(again), 0) // not before the retry
	again, err = f.Outbox.ClaimDeliveries(ctx, t0.Add(10*time.Second), t0.Add(time.Minute), 10)
	is.NoErr(err)
	is.Equal(len(again), 1)
	is.Equal(again[0].Attempts, 2)
	is.NoErr(f.Outbox.DeliveryFailed(ctx, got[0].ID, time.Time{}, "gave up"))
	again, err = f.Outbox.ClaimDeliveries(ctx, t0.Add(24*time.Hour), t0.Add(25*time.Hour), 10)
	is.NoErr(err)
	is.Equal(len(again), 0) // given up
}

func outboxRollback(t *testing.T, f NotificationsFixture, t0 time.Time) {
	is := is.New(t)
	ctx := context.Background()
	org, sc := f.NewSchema(t)
	is.NoErr(f.Subscriptions.CreateSubscription(ctx, newSubscription(org, sc, "https://a.example/hook", t0)))
	err := f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
		if err := r.Outbox.QueueEvents(ctx, []ports.SchemaEvent{schemaEvent(org, sc, t0)}); err != nil {
			return err
		}
		return errBoom
	})
	is.True(errors.Is(err, errBoom))
	got, err := f.Outbox.ClaimDeliveries(ctx, t0.Add(time.Second), t0.Add(time.Minute), 10)
	is.NoErr(err)
	is.Equal(len(got), 0)
	is.NoErr(f.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
		return r.Outbox.QueueEvents(ctx, []ports.SchemaEvent{schemaEvent(org, sc, t0)})
	}))
	got, err = f.Outbox.ClaimDeliveries(ctx, t0.Add(time.Second), t0.Add(time.Minute), 10)
	is.NoErr(err)
	is.Equal(len(got), 1)
}

func outboxDeleteSubscription(t *testing.T, f NotificationsFixture, t0 time.Time) {
	is := is.New(t)
	ctx := context.Background()
	org, sc := f.NewSchema(t)
	s := newSubscription(org, sc, "https://a.example/hook", t0)
	is.NoErr(f.Subscriptions.CreateSubscription(ctx, s))
	is.NoErr(f.Outbox.QueueEvents(ctx, []ports.SchemaEvent{schemaEvent(org, sc, t0)}))
	n, err := f.Subscriptions.DeleteSubscriptions(ctx, org, sc, ports.SubscriptionMatch{ID: s.ID})
	is.NoErr(err)
	is.Equal(n, 1)
	got, err := f.Outbox.ClaimDeliveries(ctx, t0.Add(time.Second), t0.Add(time.Minute), 10)
	is.NoErr(err)
	is.Equal(len(got), 0)
}

// LinkWebhooksFixture is what RunLinkWebhooks needs: the store, a feed
// writer, and a way to store a registration of orgID with links to
// schemas (each enrichment-enabled) and an empty feed.
type LinkWebhooksFixture struct {
	Store ports.LinkWebhookStore
	Feed  ports.FeedWriter
	Seed  func(t *testing.T, orgID string, debounceS, capS int, schemaIDs ...string) (databaseID string)
}

// RunLinkWebhooks is the contract of ports.LinkWebhookStore.
func RunLinkWebhooks(t *testing.T, newFixture func(t *testing.T) LinkWebhooksFixture) {
	t.Run("the secret is minted once and kept", func(t *testing.T) { linkWebhookSecret(t, newFixture(t)) })
	t.Run("deltas make a link's notification pending until sent", func(t *testing.T) { linkNotices(t, newFixture(t)) })
}

func linkWebhookSecret(t *testing.T, f LinkWebhooksFixture) {
	is := is.New(t)
	ctx := context.Background()
	org := newID("org")
	db := f.Seed(t, org, 5, 300, "sc-a", "sc-b")
	got, err := f.Store.SetLinkWebhook(ctx, org, db, "sc-a", "https://a.example/deltas", "first")
	is.NoErr(err)
	is.Equal(got, "first")
	got, err = f.Store.SetLinkWebhook(ctx, org, db, "sc-a", "https://b.example/deltas", "second")
	is.NoErr(err)
	is.Equal(got, "first") // kept when the URL changes
	url, secret, err := f.Store.LinkWebhook(ctx, org, db, "sc-a")
	is.NoErr(err)
	is.Equal(url, "https://b.example/deltas")
	is.Equal(secret, "first")
	_, err = f.Store.SetLinkWebhook(ctx, org, db, "sc-a", "", "third")
	is.NoErr(err)
	url, secret, err = f.Store.LinkWebhook(ctx, org, db, "sc-a")
	is.NoErr(err)
	is.Equal(url, "") // detached
	is.Equal(secret, "first")
	url, secret, err = f.Store.LinkWebhook(ctx, org, db, "sc-b")
	is.NoErr(err)
	is.Equal(url+secret, "") // the other link has none
	_, secret, err = f.Store.LinkWebhook(ctx, org, db, "")
	is.NoErr(err)
	is.Equal(secret, "first") // no schema named: the link that has a secret
	_, err = f.Store.SetLinkWebhook(ctx, "another-org", db, "sc-a", "https://x.example", "s")
	is.True(errors.Is(err, ports.ErrNotFound))
	_, _, err = f.Store.LinkWebhook(ctx, "another-org", db, "sc-a")
	is.True(errors.Is(err, ports.ErrNotFound))
	_, _, err = f.Store.LinkWebhook(ctx, org, db, "sc-none")
	is.True(errors.Is(err, ports.ErrNotFound))
}

func dataDelta(schemaID string, at time.Time) ports.FeedRow {
	return ports.FeedRow{Delta: delta.Delta{Kind: delta.Data, Op: delta.Upsert, SQL: "SELECT 1", BatchID: newID("b"),
		Revision: 1, EntityType: "t", CreatedAt: at}, SchemaID: schemaID}
}

// pendingFor returns the pending notices of databaseID.
func pendingFor(t *testing.T, s ports.LinkWebhookStore, now time.Time, databaseID string) map[string]ports.LinkNotice {
	t.Helper()
	all, err := s.PendingLinkNotices(context.Background(), now, 1000)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ports.LinkNotice{}
	for _, n := range all {
		if n.DatabaseID == databaseID {
			out[n.SchemaID] = n
		}
	}
	return out
}

func linkNotices(t *testing.T, f LinkWebhooksFixture) {
	is := is.New(t)
	ctx := context.Background()
	org := newID("org")
	db := f.Seed(t, org, 5, 300, "sc-a", "sc-b")
	t0 := base
	_, err := f.Feed.Append(ctx, db, []ports.FeedRow{dataDelta("sc-a", t0)})
	is.NoErr(err)
	is.Equal(len(pendingFor(t, f.Store, t0, db)), 0) // no webhook attached
	_, err = f.Store.SetLinkWebhook(ctx, org, db, "sc-a", "https://a.example/deltas", "sealed")
	is.NoErr(err)
	ids, err := f.Feed.Append(ctx, db, []ports.FeedRow{dataDelta("sc-a", t0.Add(time.Second)), dataDelta("sc-b", t0.Add(2*time.Second))})
	is.NoErr(err)
	p := pendingFor(t, f.Store, t0.Add(3*time.Second), db)
	is.Equal(len(p), 1) // sc-b has no webhook
	n := p["sc-a"]
	is.Equal(n.MaxDeltaID, ids[0])
	is.Equal(n.DebounceS, 5)
	is.Equal(n.CapS, 300)
	sameTime(t, "first", n.First, t0)
	sameTime(t, "last", n.Last, t0.Add(time.Second))
	is.Equal(n.Attempts, 0)

	c, ok, err := f.Store.ClaimLinkNotice(ctx, db, "sc-a", t0.Add(3*time.Second), t0.Add(time.Minute))
	is.NoErr(err)
	is.True(ok)
	is.Equal(c.URL, "https://a.example/deltas")
	is.Equal(c.Secret, "sealed")
	_, ok, err = f.Store.ClaimLinkNotice(ctx, db, "sc-a", t0.Add(4*time.Second), t0.Add(time.Minute))
	is.NoErr(err)
	is.True(!ok) // claimed
	is.Equal(len(pendingFor(t, f.Store, t0.Add(4*time.Second), db)), 0)
	is.NoErr(f.Store.LinkNoticeFailed(ctx, db, "sc-a", 1, t0.Add(20*time.Second)))
	p = pendingFor(t, f.Store, t0.Add(5*time.Second), db)
	is.Equal(p["sc-a"].Attempts, 1)
	sameTime(t, "next attempt", p["sc-a"].NextAttempt, t0.Add(20*time.Second))
	_, ok, err = f.Store.ClaimLinkNotice(ctx, db, "sc-a", t0.Add(20*time.Second), t0.Add(time.Minute))
	is.NoErr(err)
	is.True(ok)
	is.NoErr(f.Store.LinkNoticeSent(ctx, db, "sc-a", ids[0]))
	is.Equal(len(pendingFor(t, f.Store, t0.Add(21*time.Second), db)), 0) // notified
	more, err := f.Feed.Append(ctx, db, []ports.FeedRow{dataDelta("sc-a", t0.Add(30*time.Second))})
	is.NoErr(err)
	p = pendingFor(t, f.Store, t0.Add(31*time.Second), db)
	is.Equal(p["sc-a"].MaxDeltaID, more[0])
	is.Equal(p["sc-a"].Attempts, 0) // a success forgot the failures
	sameTime(t, "first", p["sc-a"].First, t0.Add(30*time.Second))
	_, err = f.Store.SetLinkWebhook(ctx, org, db, "sc-a", "", "")
	is.NoErr(err)
	is.Equal(len(pendingFor(t, f.Store, t0.Add(31*time.Second), db)), 0) // detached
	_, ok, err = f.Store.ClaimLinkNotice(ctx, db, "sc-a", t0.Add(2*time.Minute), t0.Add(3*time.Minute))
	is.NoErr(err)
	is.True(!ok)
}

func outboxJobEnd(t *testing.T, f NotificationsFixture, t0 time.Time) {
	is := is.New(t)
	ctx := context.Background()
	org, sc := f.NewSchema(t)
	is.NoErr(f.Subscriptions.CreateSubscription(ctx, newSubscription(org, sc, "https://a.example/hook", t0)))
	j := newJob(org, job.Completed, 0)
	j.Attempt = 1
	rec := newRecord(org, 0)
	rec.SchemaID, rec.JobID = sc, j.ID
	ev := schemaEvent(org, sc, t0)
	end := ports.JobEnd{Job: j, From: job.Running, Create: true, Records: []*enrichment.Record{rec},
		Events: events(j.ID, 1, 1), SchemaEvents: []ports.SchemaEvent{ev}}
	is.NoErr(f.UoW.EndJob(ctx, end))
	// An end that is refused (the job exists) queues nothing.
	again := end
	again.Records = []*enrichment.Record{newRecord(org, 1)}
	again.SchemaEvents = []ports.SchemaEvent{schemaEvent(org, sc, t0)}
	is.True(errors.Is(f.UoW.EndJob(ctx, again), ports.ErrConflict))
	got, err := f.Outbox.ClaimDeliveries(ctx, t0.Add(time.Second), t0.Add(time.Minute), 10)
	is.NoErr(err)
	is.Equal(len(got), 1)
	is.Equal(got[0].EventID, ev.ID)
}

// outboxPrune: a prune deletes delivered and given-up deliveries queued
// before its bound, at most its limit, and never a pending one; a pruned
// event queued again is delivered again (at least once).
func outboxPrune(t *testing.T, f NotificationsFixture, t0 time.Time) {
	is := is.New(t)
	ctx := context.Background()
	org, sc := f.NewSchema(t)
	is.NoErr(f.Subscriptions.CreateSubscription(ctx, newSubscription(org, sc, "https://a.example/hook", t0)))
	sent, gaveUp, pending := schemaEvent(org, sc, t0), schemaEvent(org, sc, t0), schemaEvent(org, sc, t0)
	is.NoErr(f.Outbox.QueueEvents(ctx, []ports.SchemaEvent{sent, gaveUp, pending}))
	got, err := f.Outbox.ClaimDeliveries(ctx, t0, t0.Add(time.Minute), 10)
	is.NoErr(err)
	is.Equal(len(got), 3)
	ids := map[string]string{}
	for _, d := range got {
		ids[d.EventID] = d.ID
	}
	is.NoErr(f.Outbox.DeliverySent(ctx, ids[sent.ID], t0.Add(time.Second)))
	is.NoErr(f.Outbox.DeliveryFailed(ctx, ids[gaveUp.ID], time.Time{}, "410 Gone"))
	is.NoErr(f.Outbox.DeliveryFailed(ctx, ids[pending.ID], t0.Add(2*time.Minute), "503"))

	n, err := f.Outbox.PruneDeliveries(ctx, t0, 10) // queued at t0: not before it
	is.NoErr(err)
	is.Equal(n, int64(0))
	n, err = f.Outbox.PruneDeliveries(ctx, t0.Add(time.Second), 1) // the limit holds
	is.NoErr(err)
	is.Equal(n, int64(1))
	n, err = f.Outbox.PruneDeliveries(ctx, t0.Add(time.Second), 10)
	is.NoErr(err)
	is.Equal(n, int64(1))
	n, err = f.Outbox.PruneDeliveries(ctx, t0.Add(time.Second), 10)
	is.NoErr(err)
	is.Equal(n, int64(0)) // the pending one stays
	got, err = f.Outbox.ClaimDeliveries(ctx, t0.Add(2*time.Minute), t0.Add(3*time.Minute), 10)
	is.NoErr(err)
	is.Equal(len(got), 1)
	is.Equal(got[0].EventID, pending.ID)

	is.NoErr(f.Outbox.QueueEvents(ctx, []ports.SchemaEvent{sent}))
	// While the pending one is still leased:
	got, err = f.Outbox.ClaimDeliveries(ctx, t0.Add(150*time.Second), t0.Add(4*time.Minute), 10)
	is.NoErr(err)
	is.Equal(len(got), 1)
	is.Equal(got[0].EventID, sent.ID)
}

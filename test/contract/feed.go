package contract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/ports"
)

// FeedFixture is a feed store with what its suite needs around it.
type FeedFixture struct {
	Store ports.FeedStore
	// Writer appends outside a unit of work; UoW appends inside one
	// (Repos.Feed), for the concurrency suite.
	Writer ports.FeedWriter
	UoW    ports.UnitOfWork
	// Register stores a registration of orgID with the settings, linked to
	// schemaIDs, and its empty feed; it returns the registration's id.
	Register func(t *testing.T, orgID string, set delta.Settings, schemaIDs ...string) string
	// PutEntity stores an entity row; EntityStored reports whether one is.
	PutEntity    func(t *testing.T, e dbsync.Entity)
	EntityStored func(t *testing.T, id string) bool
	// Mark sets a registration's snapshot_required_from and its links'
	// shipped hashes (schema id → hash), as the registry does.
	Mark func(t *testing.T, databaseID string, snapshotFrom int64, hashes map[string]string)
}

// feedAppend appends batches to a feed: sizes[i] rows in batch "<prefix>-i"
// (size 0: one row without a batch id), data rows of entity ents[i] when
// given. It returns the ids.
func feedAppend(t *testing.T, w ports.FeedWriter, dbID string, sizes []int, ents ...string) []int64 {
	t.Helper()
	var rows []ports.FeedRow
	for i, n := range sizes {
		batch := fmt.Sprintf("%s-%d", newID("b"), i)
		if n == 0 {
			n, batch = 1, ""
		}
		for j := range n {
			ent := ""
			if i < len(ents) {
				ent = ents[i]
			}
			rows = append(rows, ports.FeedRow{Delta: delta.Delta{Kind: delta.Data, Op: delta.Upsert,
				SQL: fmt.Sprintf("SELECT %d, %d", i, j), Payload: json.RawMessage(fmt.Sprintf(`{"i":%d,"j":%d}`, i, j)),
				BatchID: batch, Revision: int64(j + 1), EntityType: "company", CreatedAt: at(i)},
				EntityID: ent, SchemaID: "s1", RecordID: fmt.Sprintf("rec-%d", i)})
		}
	}
	ids, err := w.Append(context.Background(), dbID, rows)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func windowIDs(w ports.FeedWindow) []int64 {
	out := make([]int64, len(w.Deltas))
	for i, d := range w.Deltas {
		out[i] = d.ID
	}
	return out
}

func idRange(from, to int64) []int64 {
	var out []int64
	for i := from; i <= to; i++ {
		out = append(out, i)
	}
	return out
}

// RunFeedStore checks a FeedStore: FIFO windows of whole batches, the lease,
// acks, purges, reads, the quarantine and organization scoping.
func RunFeedStore(t *testing.T, newFixture func(t *testing.T) FeedFixture) {
	t.Run("ClaimLeaseAck", func(t *testing.T) { feedClaimLeaseAck(t, newFixture(t)) })
	t.Run("ReadChangesNothing", func(t *testing.T) { feedRead(t, newFixture(t)) })
	t.Run("Purge", func(t *testing.T) { feedPurge(t, newFixture(t)) })
	t.Run("EntityPurge", func(t *testing.T) { feedEntityPurge(t, newFixture(t)) })
	t.Run("Quarantine", func(t *testing.T) { feedQuarantine(t, newFixture(t)) })
	t.Run("Redrive", func(t *testing.T) { feedRedrive(t, newFixture(t)) })
	t.Run("OtherOrganization", func(t *testing.T) { feedOtherOrg(t, newFixture(t)) })
	t.Run("SnapshotRequiredAndHashes", func(t *testing.T) { feedSnapshotRequired(t, newFixture(t)) })
}

func feedClaimLeaseAck(t *testing.T, fx FeedFixture) {
	is := is.New(t)
	ctx := context.Background()
	org := newID("org")
	db := fx.Register(t, org, delta.Settings{PageLimit: 3})
	set, err := fx.Store.Settings(ctx, org, db)
	is.NoErr(err)
	is.Equal(set.PageLimit, 3)

	w, err := fx.Store.Claim(ctx, org, db, at(0), time.Minute, 0)
	is.NoErr(err)
	is.Equal(len(w.Deltas), 0) // an empty feed
	is.True(!w.Busy && !w.HasMore && w.LeaseExpiresAt.IsZero())

	feedAppend(t, fx.Writer, db, []int{2, 3, 1}) // batches 1-2, 3-5, 6
	w, err = fx.Store.Claim(ctx, org, db, at(0), 2*time.Minute, 0)
	is.NoErr(err)
	is.Equal(windowIDs(w), []int64{1, 2}) // limit 3 (page_limit) never splits 3-5
	is.True(w.HasMore)
	sameTime(t, "lease_expires_at", w.LeaseExpiresAt, at(120))
	for _, d := range w.Deltas {
		sameTimePtr(t, "claim_expires_at", d.ClaimExpiresAt, atPtr(120))
	}
	first := w.Deltas[0]
	is.Equal(first.Kind, delta.Data)
	is.Equal(first.Op, delta.Upsert)
	is.Equal(first.SQL, "SELECT 0, 0")
	var payload map[string]int
	is.NoErr(json.Unmarshal(first.Payload, &payload))
	is.Equal(payload["j"], 0)
	is.Equal(first.EntityType, "company")
	is.Equal(first.Revision, int64(1))
	is.Equal(first.SchemaID, "s1")
	is.Equal(first.RecordID, "rec-0")
	sameTime(t, "created_at", first.CreatedAt, at(0))

	w, err = fx.Store.Claim(ctx, org, db, at(60), 2*time.Minute, 0)
	is.NoErr(err)
	is.True(w.Busy) // while leased
	is.Equal(len(w.Deltas), 0)
	sameTime(t, "busy until", w.LeaseExpiresAt, at(120))

	w, err = fx.Store.Claim(ctx, org, db, at(120), 2*time.Minute, 0)
	is.NoErr(err)
	is.Equal(windowIDs(w), []int64{1, 2}) // redelivered after expiry, in order
	is.True(w.Redelivery)

	_, err = fx.Store.Ack(ctx, org, db, 6, at(130))
	is.True(errors.Is(err, delta.ErrAckBeyondDelivered))
	a, err := fx.Store.Ack(ctx, org, db, 2, at(130))
	is.NoErr(err)
	is.Equal(a, ports.AckOutcome{Acked: 2})
	a, err = fx.Store.Ack(ctx, org, db, 2, at(131))
	is.NoErr(err)
	is.Equal(a, ports.AckOutcome{}) // a repeat

	w, err = fx.Store.Claim(ctx, org, db, at(140), time.Minute, 1)
	is.NoErr(err)
	is.Equal(windowIDs(w), []int64{3, 4, 5}) // a first batch larger than limit comes whole
	is.True(w.HasMore)
	a, err = fx.Store.Ack(ctx, org, db, 4, at(141)) // partial: the rest stays leased
	is.NoErr(err)
	is.Equal(a.Acked, int64(2))
	w, err = fx.Store.Claim(ctx, org, db, at(142), time.Minute, 10)
	is.NoErr(err)
	is.True(w.Busy)
	_, err = fx.Store.Ack(ctx, org, db, 5, at(143))
	is.NoErr(err)
	w, err = fx.Store.Claim(ctx, org, db, at(144), time.Minute, 10)
	is.NoErr(err)
	is.Equal(windowIDs(w), []int64{6})
	is.True(!w.HasMore && !w.Redelivery)
	_, err = fx.Store.Ack(ctx, org, db, 7, at(145))
	is.True(errors.Is(err, delta.ErrAckBeyondDelivered))
	_, err = fx.Store.Ack(ctx, org, db, 6, at(145))
	is.NoErr(err)
	w, err = fx.Store.Claim(ctx, org, db, at(146), time.Minute, 10)
	is.NoErr(err)
	is.True(len(w.Deltas) == 0 && !w.Busy)

	sum, err := fx.Store.Summary(ctx, org, db)
	is.NoErr(err)
	is.Equal(sum.Watermark, int64(6))
	sameTimePtr(t, "watermark_at", sum.WatermarkAt, atPtr(145))
	is.Equal(sum.AckedCount, int64(6))
	is.Equal(sum.PendingCount, int64(0))
	is.Equal([]int64{sum.MinID, sum.MaxID, sum.FirstDataID}, []int64{1, 6, 1})
}

func feedRead(t *testing.T, fx FeedFixture) {
	is := is.New(t)
	ctx := context.Background()
	org := newID("org")
	db := fx.Register(t, org, delta.Settings{})
	feedAppend(t, fx.Writer, db, []int{2, 0, 2, 0}) // 1-2, 3, 4-5, 6
	q := delta.ChangesQuery{Limit: 3, Include: delta.Pending, Order: delta.Asc}
	for range 2 { // replayable
		w, err := fx.Store.Read(ctx, org, db, at(0), q)
		is.NoErr(err)
		is.Equal(windowIDs(w), []int64{1, 2, 3})
		is.True(w.HasMore)
		is.Equal(w.NextCursor, int64(3))
		is.True(w.Deltas[0].ClaimExpiresAt == nil)
	}
	q.Since = 3
	w, err := fx.Store.Read(ctx, org, db, at(0), q)
	is.NoErr(err)
	is.Equal(windowIDs(w), []int64{4, 5, 6})
	is.True(!w.HasMore)

	// A read did not claim: the claim starts at 1.
	c, err := fx.Store.Claim(ctx, org, db, at(1), time.Minute, 3)
	is.NoErr(err)
	is.Equal(windowIDs(c), []int64{1, 2, 3})
	_, err = fx.Store.Ack(ctx, org, db, 2, at(2))
	is.NoErr(err)

	// Leased rows carry their lease in a read; acked and all; desc.
	w, err = fx.Store.Read(ctx, org, db, at(3), delta.ChangesQuery{Limit: 10, Include: delta.Pending, Order: delta.Asc})
	is.NoErr(err)
	is.Equal(windowIDs(w), []int64{3, 4, 5, 6})
	sameTimePtr(t, "claim_expires_at", w.Deltas[0].ClaimExpiresAt, atPtr(61))
	is.True(w.Deltas[1].ClaimExpiresAt == nil)
	w, err = fx.Store.Read(ctx, org, db, at(3), delta.ChangesQuery{Limit: 10, Include: delta.Acked, Order: delta.Asc})
	is.NoErr(err)
	is.Equal(windowIDs(w), []int64{1, 2})
	is.True(w.Deltas[0].AckedAt != nil)
	w, err = fx.Store.Read(ctx, org, db, at(3), delta.ChangesQuery{Limit: 2, Include: delta.All, Order: delta.Desc, Before: 6})
	is.NoErr(err)
	is.Equal(windowIDs(w), []int64{5, 4})
	is.True(w.HasMore)
	is.Equal(w.NextCursor, int64(4))
	w, err = fx.Store.Read(ctx, org, db, at(3), delta.ChangesQuery{Limit: 10, Include: delta.All, Order: delta.Desc})
	is.NoErr(err)
	is.Equal(windowIDs(w), []int64{6, 5, 4, 3, 2, 1})
}

func feedPurge(t *testing.T, fx FeedFixture) {
	is := is.New(t)
	ctx := context.Background()
	org := newID("org")
	purging := fx.Register(t, org, delta.Settings{PurgeOnAck: true})
	keeping := fx.Register(t, org, delta.Settings{})
	for _, db := range []string{purging, keeping} {
		feedAppend(t, fx.Writer, db, []int{2, 2})
		_, err := fx.Store.Claim(ctx, org, db, at(0), time.Minute, 10)
		is.NoErr(err)
	}
	a, err := fx.Store.Ack(ctx, org, purging, 3, at(1))
	is.NoErr(err)
	is.Equal(a, ports.AckOutcome{Acked: 3, PurgedDeltas: 3})
	sum, err := fx.Store.Summary(ctx, org, purging)
	is.NoErr(err)
	is.Equal([]int64{sum.AckedCount, sum.PendingCount, sum.MinID, sum.MaxID}, []int64{0, 1, 4, 4})

	a, err = fx.Store.Ack(ctx, org, keeping, 3, at(1))
	is.NoErr(err)
	is.Equal(a, ports.AckOutcome{Acked: 3})
	a, err = fx.Store.ClearAcked(ctx, org, keeping)
	is.NoErr(err)
	is.Equal(a, ports.AckOutcome{PurgedDeltas: 3})
	a, err = fx.Store.ClearAcked(ctx, org, keeping)
	is.NoErr(err)
	is.Equal(a, ports.AckOutcome{})
	w, err := fx.Store.Read(ctx, org, keeping, at(2), delta.ChangesQuery{Limit: 10, Include: delta.All, Order: delta.Asc})
	is.NoErr(err)
	is.Equal(windowIDs(w), []int64{4})
}

func feedEntityPurge(t *testing.T, fx FeedFixture) {
	is := is.New(t)
	ctx := context.Background()
	org := newID("org")
	schemaID := newID("sch")
	a := fx.Register(t, org, delta.Settings{PurgeEntityState: true}, schemaID)
	b := fx.Register(t, org, delta.Settings{PurgeEntityState: true}, schemaID)
	e1, e2 := newID("ent"), newID("ent")
	for _, id := range []string{e1, e2} {
		fx.PutEntity(t, dbsync.Entity{ID: id, OrgID: org, SchemaID: schemaID, EntityType: "company", KeyIdentity: id,
			Payload: json.RawMessage(`{}`), Revision: 1, UpdatedAt: at(0)})
	}
	for _, db := range []string{a, b} {
		feedAppend(t, fx.Writer, db, []int{1, 1}, e1, e2) // 1: e1, 2: e2
		_, err := fx.Store.Claim(ctx, org, db, at(0), time.Minute, 10)
		is.NoErr(err)
	}
	out, err := fx.Store.Ack(ctx, org, a, 2, at(1))
	is.NoErr(err)
	is.Equal(out, ports.AckOutcome{Acked: 2}) // b has not acknowledged them
	is.True(fx.EntityStored(t, e1))
	out, err = fx.Store.Ack(ctx, org, b, 1, at(2))
	is.NoErr(err)
	is.Equal(out, ports.AckOutcome{Acked: 1, PurgedEntities: 1}) // e1: both acknowledged
	is.True(!fx.EntityStored(t, e1))
	is.True(fx.EntityStored(t, e2))

	// A quarantined latest revision keeps the row.
	_, err = fx.Store.Report(ctx, org, b, 2, "refused", at(3))
	is.NoErr(err)
	_, err = fx.Store.Claim(ctx, org, b, at(4), time.Minute, 10)
	is.NoErr(err)
	feedAppend(t, fx.Writer, b, []int{1}) // 3, no entity
	_, err = fx.Store.Claim(ctx, org, b, at(5), time.Minute, 10)
	is.NoErr(err)
	out, err = fx.Store.Ack(ctx, org, b, 3, at(6))
	is.NoErr(err)
	is.Equal(out, ports.AckOutcome{Acked: 1})
	is.True(fx.EntityStored(t, e2))
}

func feedQuarantine(t *testing.T, fx FeedFixture) {
	is := is.New(t)
	ctx := context.Background()
	org := newID("org")
	db := fx.Register(t, org, delta.Settings{})
	e := newID("ent")
	feedAppend(t, fx.Writer, db, []int{1, 3, 0}, "", e) // 1, 2-4 (entity e), 5
	_, err := fx.Store.Report(ctx, org, db, 2, "not delivered", at(0))
	is.True(errors.Is(err, delta.ErrNotDelivered))
	_, err = fx.Store.Report(ctx, org, db, 99, "nope", at(0))
	is.True(errors.Is(err, ports.ErrNotFound))
	w, err := fx.Store.Claim(ctx, org, db, at(0), time.Minute, 10)
	is.NoErr(err)
	is.Equal(windowIDs(w), []int64{1, 2, 3, 4, 5})

	r, err := fx.Store.Report(ctx, org, db, 3, "relation \"company\" does not exist", at(1))
	is.NoErr(err)
	is.True(r.LeaseReleased && !r.Already)
	r, err = fx.Store.Report(ctx, org, db, 4, "again", at(2))
	is.NoErr(err)
	is.True(r.Already)

	w, err = fx.Store.Claim(ctx, org, db, at(2), time.Minute, 10) // the lease was released
	is.NoErr(err)
	is.Equal(windowIDs(w), []int64{1, 5}) // the batch is set aside
	a, err := fx.Store.Ack(ctx, org, db, 5, at(3))
	is.NoErr(err)
	is.Equal(a.Acked, int64(2))
	_, err = fx.Store.Report(ctx, org, db, 1, "late", at(3))
	is.True(errors.Is(err, delta.ErrAlreadyAcked))

	q, err := fx.Store.ListQuarantine(ctx, org, db)
	is.NoErr(err)
	is.Equal(len(q), 3)
	for _, d := range q {
		sameTimePtr(t, "quarantined_at", d.QuarantinedAt, atPtr(1))
		is.Equal(d.EntityID, e)
		if d.ID == 3 {
			is.Equal(d.ApplyError, "relation \"company\" does not exist")
			sameTimePtr(t, "apply_error_at", d.ApplyErrorAt, atPtr(1))
		} else {
			is.Equal(d.ApplyError, "")
			is.True(d.ApplyErrorAt == nil)
		}
	}
	sum, err := fx.Store.Summary(ctx, org, db)
	is.NoErr(err)
	is.Equal([]int64{sum.Watermark, sum.AckedCount, sum.PendingCount, sum.QuarantinedCount}, []int64{5, 2, 0, 3})
	w, err = fx.Store.Read(ctx, org, db, at(4), delta.ChangesQuery{Limit: 10, Include: delta.All, Order: delta.Asc})
	is.NoErr(err)
	is.Equal(windowIDs(w), []int64{1, 2, 3, 4, 5})

	a, err = fx.Store.DeleteQuarantined(ctx, org, db, ports.QuarantineSelection{DeltaIDs: []int64{1}}) // not quarantined
	is.NoErr(err)
	is.Equal(a, ports.AckOutcome{})
	a, err = fx.Store.DeleteQuarantined(ctx, org, db, ports.QuarantineSelection{EntityIDs: []string{e}})
	is.NoErr(err)
	is.Equal(a, ports.AckOutcome{PurgedDeltas: 3})
	a, err = fx.Store.DeleteQuarantined(ctx, org, db, ports.QuarantineSelection{EntityIDs: []string{e}}) // idempotent
	is.NoErr(err)
	is.Equal(a, ports.AckOutcome{})
	q, err = fx.Store.ListQuarantine(ctx, org, db)
	is.NoErr(err)
	is.Equal(len(q), 0)
}

func feedRedrive(t *testing.T, fx FeedFixture) {
	is := is.New(t)
	ctx := context.Background()
	org := newID("org")
	db := fx.Register(t, org, delta.Settings{})
	feedAppend(t, fx.Writer, db, []int{2, 0, 1}) // 1-2, 3, 4
	_, err := fx.Store.Claim(ctx, org, db, at(0), time.Minute, 10)
	is.NoErr(err)
	_, err = fx.Store.Report(ctx, org, db, 2, "boom", at(1))
	is.NoErr(err)
	w, err := fx.Store.Claim(ctx, org, db, at(1), time.Minute, 10)
	is.NoErr(err)
	_, err = fx.Store.Report(ctx, org, db, 3, "boom", at(1))
	is.NoErr(err)
	w, err = fx.Store.Claim(ctx, org, db, at(1), time.Minute, 10)
	is.NoErr(err)
	is.Equal(windowIDs(w), []int64{4})
	_, err = fx.Store.Ack(ctx, org, db, 4, at(2))
	is.NoErr(err)

	n := 0
	out, err := fx.Store.Redrive(ctx, org, db, []int64{1, 3}, at(5), func() string { n++; return fmt.Sprintf("redrive-%d", n) })
	is.NoErr(err)
	is.Equal(out, ports.RedriveOutcome{Queued: 3, Removed: 3})
	w, err = fx.Store.Claim(ctx, org, db, at(6), time.Minute, 10)
	is.NoErr(err)
	is.Equal(windowIDs(w), []int64{5, 6, 7}) // at the tail, in the old order
	is.Equal([]string{w.Deltas[0].BatchID, w.Deltas[1].BatchID, w.Deltas[2].BatchID}, []string{"redrive-1", "redrive-1", "redrive-2"})
	is.Equal([]string{w.Deltas[0].SQL, w.Deltas[1].SQL, w.Deltas[2].SQL}, []string{"SELECT 0, 0", "SELECT 0, 1", "SELECT 1, 0"})
	is.Equal(w.Deltas[2].RecordID, "rec-1")
	is.True(w.Deltas[0].QuarantinedAt == nil && w.Deltas[0].ApplyError == "")
	sameTime(t, "created_at", w.Deltas[0].CreatedAt, at(5))
	q, err := fx.Store.ListQuarantine(ctx, org, db)
	is.NoErr(err)
	is.Equal(len(q), 0)
	out, err = fx.Store.Redrive(ctx, org, db, []int64{1}, at(7), func() string { return "x" })
	is.NoErr(err)
	is.Equal(out, ports.RedriveOutcome{})

	// Release, the entity layer's reinject step.
	_, err = fx.Store.Report(ctx, org, db, 6, "boom", at(8))
	is.NoErr(err)
	removed, err := fx.Store.Release(ctx, org, db, []string{"redrive-1"})
	is.NoErr(err)
	is.Equal(removed, int64(2))
	w, err = fx.Store.Claim(ctx, org, db, at(9), time.Minute, 10)
	is.NoErr(err)
	is.Equal(windowIDs(w), []int64{7})
}

func feedOtherOrg(t *testing.T, fx FeedFixture) {
	is := is.New(t)
	ctx := context.Background()
	org := newID("org")
	db := fx.Register(t, org, delta.Settings{})
	feedAppend(t, fx.Writer, db, []int{1})
	other := newID("org")
	notFound := func(err error) { t.Helper(); is.True(errors.Is(err, ports.ErrNotFound)) }
	for _, id := range []string{db, "no-such-database"} {
		_, err := fx.Store.Settings(ctx, other, id)
		notFound(err)
		_, err = fx.Store.Claim(ctx, other, id, at(0), time.Minute, 10)
		notFound(err)
		_, err = fx.Store.Read(ctx, other, id, at(0), delta.ChangesQuery{Limit: 10, Include: delta.All, Order: delta.Asc})
		notFound(err)
		_, err = fx.Store.Ack(ctx, other, id, 0, at(0))
		notFound(err)
		_, err = fx.Store.ClearAcked(ctx, other, id)
		notFound(err)
		_, err = fx.Store.Summary(ctx, other, id)
		notFound(err)
		_, err = fx.Store.Report(ctx, other, id, 1, "x", at(0))
		notFound(err)
		_, err = fx.Store.ListQuarantine(ctx, other, id)
		notFound(err)
		_, err = fx.Store.DeleteQuarantined(ctx, other, id, ports.QuarantineSelection{DeltaIDs: []int64{1}})
		notFound(err)
		_, err = fx.Store.Redrive(ctx, other, id, []int64{1}, at(0), func() string { return "x" })
		notFound(err)
		_, err = fx.Store.Release(ctx, other, id, []string{"x"})
		notFound(err)
	}
	// The owner still has it, untouched.
	w, err := fx.Store.Claim(ctx, org, db, at(0), time.Minute, 10)
	is.NoErr(err)
	is.Equal(windowIDs(w), []int64{1})
}

// RunFeedConcurrency checks that appenders committing in units of work
// while consumers claim and acknowledge (as two replicas would) lose,
// repeat and reorder nothing: every delta is delivered once, in id order,
// and no claim passes over an id that is not visible yet.
func RunFeedConcurrency(t *testing.T, fx FeedFixture, appenders, consumers int) {
	is := is.New(t)
	ctx := context.Background()
	org := newID("org")
	db := fx.Register(t, org, delta.Settings{})
	const units = 25
	var wg sync.WaitGroup
	errs := make(chan error, appenders+consumers)
	for a := range appenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := range units {
				err := fx.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
					batch := fmt.Sprintf("a%d-u%d", a, u)
					var rows []ports.FeedRow
					for j := range 1 + (a+u)%3 {
						rows = append(rows, ports.FeedRow{Delta: delta.Delta{Kind: delta.Data, Op: delta.Upsert, SQL: "SELECT 1",
							BatchID: batch, Revision: int64(j + 1), EntityType: "t", CreatedAt: time.Now()}})
					}
					_, err := r.Feed.Append(ctx, db, rows)
					return err
				})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	want := 0
	for a := range appenders {
		for u := range units {
			want += 1 + (a+u)%3
		}
	}
	var mu sync.Mutex
	var delivered []int64
	batchOf := map[int64]string{}
	for range consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- feedConsume(ctx, fx.Store, org, db, want, &mu, &delivered, batchOf)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		is.NoErr(err)
	}
	is.Equal(delivered, idRange(1, int64(want))) // once each, in order
}

// feedConsume claims and acknowledges until want deltas were delivered,
// checking that each window starts right after the last one and keeps its
// batches whole.
func feedConsume(ctx context.Context, st ports.FeedStore, org, db string, want int, mu *sync.Mutex, delivered *[]int64,
	batchOf map[int64]string) error {
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		mu.Lock()
		n := len(*delivered)
		mu.Unlock()
		if n >= want {
			return nil
		}
		w, err := st.Claim(ctx, org, db, time.Now(), time.Minute, 7)
		if err != nil {
			return err
		}
		if len(w.Deltas) == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		mu.Lock()
		last := int64(len(*delivered))
		for i, d := range w.Deltas {
			if d.ID != last+int64(i)+1 {
				mu.Unlock()
				return fmt.Errorf("window %v after %d: a gap or a repeat", windowIDs(w), last)
			}
			batchOf[d.ID] = d.BatchID
		}
		if prev, ok := batchOf[last]; ok && prev == w.Deltas[0].BatchID {
			mu.Unlock()
			return fmt.Errorf("window %v splits batch %s", windowIDs(w), prev)
		}
		*delivered = append(*delivered, windowIDs(w)...)
		mu.Unlock()
		if _, err := st.Ack(ctx, org, db, w.Deltas[len(w.Deltas)-1].ID, time.Now()); err != nil {
			return err
		}
	}
	return errors.New("consumers did not get every delta within a minute")
}

// feedSnapshotRequired: a registration waiting for a snapshot reload
// leases nothing and says so, reads still list its rows, and every
// answer carries the links' contract hashes; once cleared, the claim
// delivers from the watermark. A new feed's first id is 1.
func feedSnapshotRequired(t *testing.T, fx FeedFixture) {
	is := is.New(t)
	ctx := context.Background()
	org, s1, s2 := newID("org"), newID("s"), newID("s")
	db := fx.Register(t, org, delta.Settings{}, s1, s2)
	ids := feedAppend(t, fx.Writer, db, []int{2, 0})
	is.Equal(ids, []int64{1, 2, 3})
	fx.Mark(t, db, 3, map[string]string{s1: "h1"})
	hashes := map[string]string{s1: "h1", s2: ""}
	for range 2 {
		w, err := fx.Store.Claim(ctx, org, db, at(0), time.Minute, 0)
		is.NoErr(err)
		is.True(w.SnapshotRequired)
		is.Equal(len(w.Deltas), 0)
		is.True(w.LeaseExpiresAt.IsZero())
		is.Equal(w.ContentHashes, hashes)
	}
	r, err := fx.Store.Read(ctx, org, db, at(0), delta.ChangesQuery{Limit: 10, Include: delta.Pending, Order: delta.Asc})
	is.NoErr(err)
	is.True(r.SnapshotRequired)
	is.Equal(windowIDs(r), []int64{1, 2, 3})
	is.Equal(r.ContentHashes, hashes)

	fx.Mark(t, db, 0, map[string]string{s1: "h2", s2: "h3"})
	w, err := fx.Store.Claim(ctx, org, db, at(0), time.Minute, 0)
	is.NoErr(err)
	is.True(!w.SnapshotRequired)
	is.Equal(windowIDs(w), []int64{1, 2, 3})
	is.Equal(w.ContentHashes, map[string]string{s1: "h2", s2: "h3"})
}

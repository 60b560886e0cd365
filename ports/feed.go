package ports

import (
	"context"
	"time"

	"github.com/entityenrich/enrich/domain/delta"
)

// FeedRow is a delta as its writer appends it: the delta's own fields (its
// ID is handed out by Append) and what the feed keeps beside it.
type FeedRow struct {
	delta.Delta
	EntityID string // data deltas: the entity layer's row
	SchemaID string // the linked schema the delta comes from
	RecordID string // data deltas: the record whose write queued it
}

// FeedWriter appends deltas to registrations' feeds. Inside a unit of work
// (Repos.Feed) the deltas commit with the unit's other writes, or not at
// all.
type FeedWriter interface {
	// Append appends rows to the feed of registration databaseID, in order,
	// and returns their ids. Ids are handed out under the feed's lock, held
	// until the unit of work ends, so a registration's ids are contiguous
	// and become visible in commit order: a reader never sees id n+1
	// before id n. ErrNotFound when the registration has no feed.
	Append(ctx context.Context, databaseID string, rows []FeedRow) ([]int64, error)
}

// StoredDelta is a delta as the feed keeps it: its row, and when the
// consumer's error was reported on it.
type StoredDelta struct {
	FeedRow
	ApplyErrorAt *time.Time
}

// FeedWindow is what a claim or a read answers: the deltas (each with
// ClaimExpiresAt set while leased), whether more wait after them, and the
// lease (a claim; on Busy, the live lease's end).
type FeedWindow struct {
	Deltas         []StoredDelta
	HasMore        bool
	LeaseExpiresAt time.Time // zero: none
	Busy           bool      // a claim met another claim's live lease
	Redelivery     bool      // a claim delivered ids delivered before
	NextCursor     int64     // the last id returned (reads); 0 when none
	// SnapshotRequired: the consumer must reload from a snapshot (a schema
	// was linked again after the shape shipped); a claim then delivers
	// nothing and changes nothing until a snapshot is served.
	SnapshotRequired bool
	// ContentHashes maps each linked schema to the content hash of the
	// published contract its link follows ("" while nothing shipped).
	ContentHashes map[string]string
}

// AckOutcome is the answer of an ack, clear-acked and a quarantine delete
// (DeltaAckResponse).
type AckOutcome struct {
	Acked          int64 // rows acknowledged
	PurgedDeltas   int64 // rows deleted
	PurgedEntities int64 // entity rows deleted (purge_entity_state)
}

// FeedSummary is a registration's feed at a glance (DeltaSummaryResponse).
type FeedSummary struct {
	Watermark        int64
	WatermarkAt      *time.Time
	AckedCount       int64 // acknowledged rows still stored
	PendingCount     int64 // unacknowledged, not quarantined
	QuarantinedCount int64
	SchemaDeltas     int64 // stored schema deltas
	MinID, MaxID     int64 // stored rows; 0 when none
	FirstDataID      int64 // the lowest stored data delta; 0 when none
}

// QuarantineSelection names quarantined batches: by a delta of theirs or
// by an entity with a delta in them. Empty selects nothing.
type QuarantineSelection struct {
	DeltaIDs  []int64
	EntityIDs []string
}

// RedriveOutcome is the answer of a redrive (QuarantineRedriveResponse).
type RedriveOutcome struct {
	Queued  int64 // copies appended at the tail
	Removed int64 // quarantined rows deleted
}

// FeedStore is the read side of registrations' feeds: claims, reads, acks,
// purges and quarantine. It loads a feed's delta.State with the deltas the
// rule needs (whole batches and one row past the window), calls
// domain/delta and saves the new state by compare-and-set, so claims and
// acks are safe across replicas; a store that loses the race reloads and
// tries again. Every method is scoped to one organization: another
// organization's registration, or an unknown one, is ErrNotFound.
type FeedStore interface {
	// Settings reads the registration's feed settings (page_limit,
	// purge_on_ack, purge_entity_state).
	Settings(ctx context.Context, orgID, databaseID string) (delta.Settings, error)
	// Claim leases the next FIFO window (delta.Claim) for lease. limit 0
	// takes the registration's page_limit.
	Claim(ctx context.Context, orgID, databaseID string, now time.Time, lease time.Duration, limit int) (FeedWindow, error)
	// Read answers claim=false (delta.Read); it changes nothing. q.Limit 0
	// takes the registration's page_limit.
	Read(ctx context.Context, orgID, databaseID string, now time.Time, q delta.ChangesQuery) (FeedWindow, error)
	// Ack acknowledges every delta with id <= upTo (delta.Ack), purging
	// per the registration's settings. Beyond what was delivered: an error
	// wrapping delta.ErrAckBeyondDelivered.
	Ack(ctx context.Context, orgID, databaseID string, upTo int64, now time.Time) (AckOutcome, error)
	// ClearAcked deletes the acknowledged deltas still stored
	// (PurgedDeltas).
	ClearAcked(ctx context.Context, orgID, databaseID string) (AckOutcome, error)
	// Summary counts the feed's rows.
	Summary(ctx context.Context, orgID, databaseID string) (FeedSummary, error)
	// Report quarantines the batch of delta deltaID (delta.Report): its
	// rows get quarantined_at, the reported one the error. ErrNotFound for
	// an unknown delta; delta.ErrNotDelivered and delta.ErrAlreadyAcked
	// wrapped as they are.
	Report(ctx context.Context, orgID, databaseID string, deltaID int64, applyError string, now time.Time) (delta.ReportResult, error)
	// ListQuarantine returns the quarantined rows in id order.
	ListQuarantine(ctx context.Context, orgID, databaseID string) ([]StoredDelta, error)
	// DeleteQuarantined deletes the selected quarantined batches and takes
	// them out of quarantine (PurgedDeltas).
	DeleteQuarantined(ctx context.Context, orgID, databaseID string, sel QuarantineSelection) (AckOutcome, error)
	// Redrive appends copies of the selected quarantined batches at the tail
	// (delta.Requeue, a new batch id each from newBatchID, ids handed out as
	// Append does), deletes the originals and takes them out of quarantine,
	// in one transaction.
	Redrive(ctx context.Context, orgID, databaseID string, deltaIDs []int64, now time.Time, newBatchID func() string) (RedriveOutcome, error)
	// Release deletes the quarantined rows of the batches keyed keys
	// (delta.Delta.BatchKey) and takes them out of quarantine; the count of
	// rows deleted. The entity layer's reinject appends the entities'
	// current state first (Repos.Feed), then releases: a crash between
	// the two leaves the quarantine and a harmless newer batch.
	Release(ctx context.Context, orgID, databaseID string, keys []string) (int64, error)
}

// RequeueRows is delta.Requeue for stored rows: the copies a redrive
// appends, batch by batch in the order of each batch's first id, each with
// a new batch id from newBatchID, created at now, and its row's entity,
// schema and record. rows must be in id order.
func RequeueRows(rows []StoredDelta, now time.Time, newBatchID func() string) []FeedRow {
	ds := make([]delta.Delta, len(rows))
	byKey := map[string][]StoredDelta{}
	var order []string
	for i, r := range rows {
		ds[i] = r.Delta
		if _, ok := byKey[r.BatchKey()]; !ok {
			order = append(order, r.BatchKey())
		}
		byKey[r.BatchKey()] = append(byKey[r.BatchKey()], r)
	}
	var out []FeedRow
	for i, g := range delta.Requeue(ds) {
		src, batch := byKey[order[i]], newBatchID()
		for j, d := range g {
			d.BatchID, d.CreatedAt = batch, now
			out = append(out, FeedRow{Delta: d, EntityID: src[j].EntityID, SchemaID: src[j].SchemaID, RecordID: src[j].RecordID})
		}
	}
	return out
}

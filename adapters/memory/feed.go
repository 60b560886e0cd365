package memory

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.FeedStore = (*SyncStore)(nil)

// feedOf returns the registration databaseID of orgID and its feed.
func (s *SyncStore) feedOf(orgID, databaseID string) (*feed, *dbsync.Database, error) {
	d, ok := s.databases[databaseID]
	f, fok := s.feeds[databaseID]
	if !ok || !fok || d.OrgID != orgID {
		return nil, nil, fmt.Errorf("memory: database %s: %w", databaseID, ports.ErrNotFound)
	}
	return f, d, nil
}

func feedSettings(d *dbsync.Database) delta.Settings {
	return delta.Settings{PageLimit: d.PageLimit, PurgeOnAck: d.PurgeOnAck, PurgeEntityState: d.PurgeEntityState}.WithDefaults()
}

// Settings reads the registration's feed settings.
func (s *SyncStore) Settings(_ context.Context, orgID, databaseID string) (delta.Settings, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, d, err := s.feedOf(orgID, databaseID)
	if err != nil {
		return delta.Settings{}, err
	}
	return feedSettings(d), nil
}

// contentHashes maps each link's schema to the contract hash it follows.
func contentHashes(d *dbsync.Database) map[string]string {
	out := make(map[string]string, len(d.Links))
	for _, l := range d.Links {
		out[l.SchemaID] = l.ShippedHash
	}
	return out
}

// deltas returns the feed's rows as the rules see them.
func (f *feed) rules(rows []deltaRow) []delta.Delta {
	out := make([]delta.Delta, len(rows))
	for i, r := range rows {
		out[i] = r.Delta
	}
	return out
}

// index returns the position of id in the feed's rows, or -1.
func (f *feed) index(id int64) int {
	i := sort.Search(len(f.deltas), func(i int) bool { return f.deltas[i].ID >= id })
	if i < len(f.deltas) && f.deltas[i].ID == id {
		return i
	}
	return -1
}

// stored maps the rules' deltas back to stored rows, with the rules'
// annotations (ClaimExpiresAt).
func (f *feed) stored(ds []delta.Delta) []ports.StoredDelta {
	out := make([]ports.StoredDelta, 0, len(ds))
	for _, d := range ds {
		r := f.deltas[f.index(d.ID)]
		sd := ports.StoredDelta{FeedRow: ports.FeedRow{Delta: d, EntityID: r.EntityID, SchemaID: r.SchemaID, RecordID: r.RecordID},
			ApplyErrorAt: tsPtr(r.ApplyErrorAt)}
		sd.Payload = cloneJSON(d.Payload)
		out = append(out, sd)
	}
	return out
}

// Claim leases the next FIFO window.
func (s *SyncStore) Claim(_ context.Context, orgID, databaseID string, now time.Time, lease time.Duration, limit int) (ports.FeedWindow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, d, err := s.feedOf(orgID, databaseID)
	if err != nil {
		return ports.FeedWindow{}, err
	}
	if d.SnapshotRequired() {
		// Paused: the snapshot sets the consumer's watermark to its head,
		// so nothing is leased until one is served.
		return ports.FeedWindow{SnapshotRequired: true, ContentHashes: contentHashes(d), Deltas: []ports.StoredDelta{}}, nil
	}
	if limit == 0 {
		limit = feedSettings(d).PageLimit
	}
	from := sort.Search(len(f.deltas), func(i int) bool { return f.deltas[i].ID > f.state.Watermark })
	res, st, err := delta.Claim(f.state, ts(now), lease, f.rules(f.deltas[from:]), limit)
	if err != nil {
		return ports.FeedWindow{}, fmt.Errorf("memory: claim the feed of database %s: %w", databaseID, err)
	}
	f.state = st
	w := ports.FeedWindow{Deltas: f.stored(res.Deltas), HasMore: res.HasMore, LeaseExpiresAt: res.LeaseExpiresAt,
		Busy: res.Busy, Redelivery: res.Redelivery, ContentHashes: contentHashes(d)}
	if n := len(res.Deltas); n > 0 {
		w.NextCursor = res.Deltas[n-1].ID
	}
	return w, nil
}

// Read answers claim=false.
func (s *SyncStore) Read(_ context.Context, orgID, databaseID string, now time.Time, q delta.ChangesQuery) (ports.FeedWindow, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, d, err := s.feedOf(orgID, databaseID)
	if err != nil {
		return ports.FeedWindow{}, err
	}
	if q.Limit == 0 {
		q.Limit = feedSettings(d).PageLimit
	}
	rows := f.rules(f.deltas)
	if q.Order == delta.Desc {
		slices.Reverse(rows)
	}
	p, err := delta.Read(f.state, ts(now), q, rows)
	if err != nil {
		return ports.FeedWindow{}, fmt.Errorf("memory: read the feed of database %s: %w", databaseID, err)
	}
	w := ports.FeedWindow{Deltas: f.stored(p.Deltas), HasMore: p.HasMore, NextCursor: p.NextCursor,
		SnapshotRequired: d.SnapshotRequired(), ContentHashes: contentHashes(d)}
	if f.state.Live(ts(now)) {
		w.LeaseExpiresAt = f.state.Lease.ExpiresAt
	}
	return w, nil
}

// Ack acknowledges the deltas up to upTo and purges per the settings.
func (s *SyncStore) Ack(_ context.Context, orgID, databaseID string, upTo int64, now time.Time) (ports.AckOutcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, d, err := s.feedOf(orgID, databaseID)
	if err != nil {
		return ports.AckOutcome{}, err
	}
	now = ts(now)
	res, st, err := delta.Ack(f.state, upTo, now, feedSettings(d))
	if err != nil {
		return ports.AckOutcome{}, fmt.Errorf("memory: ack the feed of database %s: %w", databaseID, err)
	}
	if res.Acked.Empty() {
		return ports.AckOutcome{}, nil
	}
	f.state, f.watermarkAt = st, &now
	var out ports.AckOutcome
	var entityIDs []string
	for i := range f.deltas {
		r := &f.deltas[i]
		if res.Acked.Contains(r.ID) && r.QuarantinedAt == nil {
			out.Acked++
			r.AckedAt = &now
			if r.EntityID != "" {
				entityIDs = append(entityIDs, r.EntityID)
			}
		}
	}
	if res.PurgeEntities {
		out.PurgedEntities = s.purgeEntitiesLocked(entityIDs)
	}
	if res.PurgeDeltas {
		out.PurgedDeltas = f.drop(func(r deltaRow) bool { return res.Acked.Contains(r.ID) && r.QuarantinedAt == nil })
	}
	return out, nil
}

// drop deletes the rows for which del holds; the count.
func (f *feed) drop(del func(deltaRow) bool) int64 {
	n := len(f.deltas)
	f.deltas = slices.DeleteFunc(f.deltas, del)
	return int64(n - len(f.deltas))
}

// purgeEntitiesLocked deletes the entity rows among ids that
// delta.EntityPurgeable allows, keeping their last revision.
func (s *SyncStore) purgeEntitiesLocked(ids []string) int64 {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	var n int64
	for k, e := range s.entities {
		if !want[e.ID] || !delta.EntityPurgeable(s.replicasLocked(e)) {
			continue
		}
		s.revisions[k] = max(s.revisions[k], e.Revision)
		delete(s.entities, k)
		n++
	}
	return n
}

// replicasLocked lists every registration that feeds from e's schema, as
// the purge rule sees it.
func (s *SyncStore) replicasLocked(e *dbsync.Entity) []delta.Replica {
	var out []delta.Replica
	for id, d := range s.databases {
		if !slices.ContainsFunc(d.Links, func(l dbsync.Link) bool { return l.SchemaID == e.SchemaID }) {
			continue
		}
		r := delta.Replica{PurgeEntityState: d.PurgeEntityState}
		if f, ok := s.feeds[id]; ok {
			r.Watermark = f.state.Watermark
			for i := len(f.deltas) - 1; i >= 0; i-- {
				if f.deltas[i].EntityID == e.ID {
					r.LatestDeltaID, r.LatestQuarantined = f.deltas[i].ID, f.state.IsQuarantined(f.deltas[i].Delta)
					break
				}
			}
		}
		out = append(out, r)
	}
	return out
}

// ClearAcked deletes the acknowledged deltas still stored.
func (s *SyncStore) ClearAcked(_ context.Context, orgID, databaseID string) (ports.AckOutcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, _, err := s.feedOf(orgID, databaseID)
	if err != nil {
		return ports.AckOutcome{}, err
	}
	r := delta.ClearAcked(f.state)
	return ports.AckOutcome{PurgedDeltas: f.drop(func(d deltaRow) bool { return r.Contains(d.ID) && !f.state.IsQuarantined(d.Delta) })}, nil
}

// Summary counts the feed's rows.
func (s *SyncStore) Summary(_ context.Context, orgID, databaseID string) (ports.FeedSummary, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, _, err := s.feedOf(orgID, databaseID)
	if err != nil {
		return ports.FeedSummary{}, err
	}
	out := ports.FeedSummary{Watermark: f.state.Watermark, WatermarkAt: tsPtr(f.watermarkAt)}
	for _, r := range f.deltas {
		switch {
		case f.state.IsQuarantined(r.Delta):
			out.QuarantinedCount++
		case f.state.IsAcked(r.Delta):
			out.AckedCount++
		default:
			out.PendingCount++
		}
		if r.Kind == delta.Schema {
			out.SchemaDeltas++
		} else if out.FirstDataID == 0 {
			out.FirstDataID = r.ID
		}
	}
	if n := len(f.deltas); n > 0 {
		out.MinID, out.MaxID = f.deltas[0].ID, f.deltas[n-1].ID
	}
	return out, nil
}

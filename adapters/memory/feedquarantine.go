package memory

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/ports"
)

// Report quarantines the batch of delta deltaID.
func (s *SyncStore) Report(_ context.Context, orgID, databaseID string, deltaID int64, applyError string, now time.Time) (delta.ReportResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, _, err := s.feedOf(orgID, databaseID)
	if err != nil {
		return delta.ReportResult{}, err
	}
	at := f.index(deltaID)
	if at < 0 {
		return delta.ReportResult{}, fmt.Errorf("memory: delta %d of database %s: %w", deltaID, databaseID, ports.ErrNotFound)
	}
	res, st, err := delta.Report(f.state, f.deltas[at].Delta)
	if err != nil || res.Already {
		return res, err
	}
	f.state = st
	now = ts(now)
	for i := range f.deltas {
		if f.deltas[i].BatchKey() == res.BatchKey {
			f.deltas[i].QuarantinedAt = &now
		}
	}
	f.deltas[at].ApplyError, f.deltas[at].ApplyErrorAt = applyError, &now
	return res, nil
}

// ListQuarantine returns the quarantined rows in id order.
func (s *SyncStore) ListQuarantine(_ context.Context, orgID, databaseID string) ([]ports.StoredDelta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, _, err := s.feedOf(orgID, databaseID)
	if err != nil {
		return nil, err
	}
	var ds []delta.Delta
	for _, r := range f.deltas {
		if f.state.IsQuarantined(r.Delta) {
			ds = append(ds, r.Delta)
		}
	}
	return f.stored(ds), nil
}

// selected returns the keys of the quarantined batches sel names.
func (f *feed) selected(sel ports.QuarantineSelection) []string {
	var keys []string
	for _, r := range f.deltas {
		if f.state.IsQuarantined(r.Delta) && (slices.Contains(sel.DeltaIDs, r.ID) || (r.EntityID != "" && slices.Contains(sel.EntityIDs, r.EntityID))) &&
			!slices.Contains(keys, r.BatchKey()) {
			keys = append(keys, r.BatchKey())
		}
	}
	return keys
}

// release deletes the quarantined rows of keys and takes them out of
// quarantine.
func (f *feed) release(keys []string) int64 {
	n := f.drop(func(r deltaRow) bool { return f.state.IsQuarantined(r.Delta) && slices.Contains(keys, r.BatchKey()) })
	f.state = delta.Release(f.state, keys...)
	return n
}

// DeleteQuarantined deletes the selected quarantined batches.
func (s *SyncStore) DeleteQuarantined(_ context.Context, orgID, databaseID string, sel ports.QuarantineSelection) (ports.AckOutcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, _, err := s.feedOf(orgID, databaseID)
	if err != nil {
		return ports.AckOutcome{}, err
	}
	return ports.AckOutcome{PurgedDeltas: f.release(f.selected(sel))}, nil
}

// Release deletes the quarantined rows of the batches keyed keys.
func (s *SyncStore) Release(_ context.Context, orgID, databaseID string, keys []string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, _, err := s.feedOf(orgID, databaseID)
	if err != nil {
		return 0, err
	}
	return f.release(keys), nil
}

// Redrive appends copies of the selected quarantined batches at the tail
// and deletes the originals.
func (s *SyncStore) Redrive(_ context.Context, orgID, databaseID string, deltaIDs []int64, now time.Time, newBatchID func() string) (ports.RedriveOutcome, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, _, err := s.feedOf(orgID, databaseID)
	if err != nil {
		return ports.RedriveOutcome{}, err
	}
	keys := f.selected(ports.QuarantineSelection{DeltaIDs: deltaIDs})
	var rows []deltaRow
	for _, r := range f.deltas {
		if f.state.IsQuarantined(r.Delta) && slices.Contains(keys, r.BatchKey()) {
			rows = append(rows, r)
		}
	}
	batches, err := requeue(rows, now, newBatchID)
	if err != nil {
		return ports.RedriveOutcome{}, err
	}
	var out ports.RedriveOutcome
	for _, b := range batches {
		if _, err := s.appendLocked(databaseID, b); err != nil {
			return ports.RedriveOutcome{}, err
		}
		out.Queued += int64(len(b))
	}
	out.Removed = f.release(keys)
	return out, nil
}

// requeue pairs delta.Requeue's copies with their rows' entity, schema and
// record: the copies come grouped by batch in the order of each batch's
// first id, each group in id order.
func requeue(rows []deltaRow, now time.Time, newBatchID func() string) ([][]ports.FeedRow, error) {
	ds := make([]delta.Delta, len(rows))
	byKey := map[string][]deltaRow{}
	var order []string
	for i, r := range rows { // rows are in id order
		ds[i] = r.Delta
		if _, ok := byKey[r.BatchKey()]; !ok {
			order = append(order, r.BatchKey())
		}
		byKey[r.BatchKey()] = append(byKey[r.BatchKey()], r)
	}
	groups := delta.Requeue(ds)
	if len(groups) != len(order) {
		return nil, fmt.Errorf("memory: redrive: %d groups for %d batches", len(groups), len(order))
	}
	out := make([][]ports.FeedRow, len(groups))
	for i, g := range groups {
		src, batch := byKey[order[i]], newBatchID()
		for j, d := range g {
			d.BatchID, d.CreatedAt = batch, now
			out[i] = append(out[i], ports.FeedRow{Delta: d, EntityID: src[j].EntityID, SchemaID: src[j].SchemaID, RecordID: src[j].RecordID})
		}
	}
	return out, nil
}

// SeedDatabase stores a registration with an empty feed, for tests of the
// feed before the registry's store is there.
func (s *SyncStore) SeedDatabase(d dbsync.Database) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.databases[d.ID] = &d
	if _, ok := s.feeds[d.ID]; !ok {
		s.feeds[d.ID] = &feed{nextID: 1}
	}
}

// SeedEntity stores an entity row, for tests of the purge rules.
func (s *SyncStore) SeedEntity(e dbsync.Entity) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entities[entityKey{e.SchemaID, e.EntityType, e.KeyIdentity}] = &e
}

// EntityStored reports whether the entity row id is stored (tests).
func (s *SyncStore) EntityStored(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.entities {
		if e.ID == id {
			return true
		}
	}
	return false
}

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
	var rows []delta.Delta
	for _, r := range f.deltas {
		if f.state.IsQuarantined(r.Delta) && slices.Contains(keys, r.BatchKey()) {
			rows = append(rows, r.Delta)
		}
	}
	copies := ports.RequeueRows(f.stored(rows), ts(now), newBatchID)
	if len(copies) > 0 {
		if _, err := s.appendLocked(databaseID, copies); err != nil {
			return ports.RedriveOutcome{}, err
		}
	}
	return ports.RedriveOutcome{Queued: int64(len(copies)), Removed: f.release(keys)}, nil
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

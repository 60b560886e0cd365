package memory

import (
	"context"
	"fmt"

	"github.com/entityenrich/enrich/ports"
)

var _ ports.FeedWriter = (*SyncStore)(nil)

// Append appends rows to a registration's feed under the store's lock.
func (s *SyncStore) Append(_ context.Context, databaseID string, rows []ports.FeedRow) ([]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.appendLocked(databaseID, rows)
}

func (s *SyncStore) appendLocked(databaseID string, rows []ports.FeedRow) ([]int64, error) {
	f, ok := s.feeds[databaseID]
	if !ok {
		return nil, fmt.Errorf("memory: append to the feed of database %s: %w", databaseID, ports.ErrNotFound)
	}
	ids := make([]int64, len(rows))
	for i, r := range rows {
		r.ID = f.nextID
		if err := r.Validate(); err != nil {
			// Nothing of this call is kept.
			f.deltas = f.deltas[:len(f.deltas)-i]
			f.nextID -= int64(i)
			return nil, fmt.Errorf("memory: append to the feed of database %s: %w: %w", databaseID, ports.ErrInvalid, err)
		}
		r.Payload = cloneJSON(r.Payload)
		r.CreatedAt = ts(r.CreatedAt)
		f.deltas = append(f.deltas, deltaRow{Delta: r.Delta, EntityID: r.EntityID, SchemaID: r.SchemaID, RecordID: r.RecordID})
		ids[i] = f.nextID
		f.nextID++
	}
	return ids, nil
}

// unappend removes the last n deltas of a feed and gives their ids back: a
// rolled-back unit of work's append (units run one at a time, so they are
// still the last).
func (s *SyncStore) unappend(databaseID string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unappendLocked(databaseID, n)
}

func (s *SyncStore) unappendLocked(databaseID string, n int) {
	if f, ok := s.feeds[databaseID]; ok && n <= len(f.deltas) {
		f.deltas = f.deltas[:len(f.deltas)-n]
		f.nextID -= int64(n)
	}
}

// txFeed is the feed writer inside a unit of work.
type txFeed struct {
	s *SyncStore
	u *undoLog
}

func (t txFeed) Append(ctx context.Context, databaseID string, rows []ports.FeedRow) ([]int64, error) {
	ids, err := t.s.Append(ctx, databaseID, rows)
	if err == nil {
		t.u.add(func() { t.s.unappend(databaseID, len(ids)) })
	}
	return ids, err
}

// WithSync makes the unit of work's Repos.Feed append to s.
func (w *UnitOfWork) WithSync(s *SyncStore) *UnitOfWork {
	w.sync = s
	return w
}

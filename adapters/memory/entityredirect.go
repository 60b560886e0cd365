package memory

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/ports"
)

// EntitiesMentioning implements ports.EntityWriter.
func (s *SyncStore) EntitiesMentioning(_ context.Context, orgID string, texts ...string) ([]*dbsync.Entity, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*dbsync.Entity
	for _, e := range s.entities {
		if e.OrgID == orgID && slices.ContainsFunc(texts, func(t string) bool { return dbsync.Mentions(e, t) }) {
			out = append(out, cloneEntity(e))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// EntitiesByID implements ports.EntityWriter.
func (s *SyncStore) EntitiesByID(_ context.Context, orgID string, ids []string) ([]*dbsync.Entity, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*dbsync.Entity
	for _, e := range s.entities {
		if e.OrgID == orgID && slices.Contains(ids, e.ID) {
			out = append(out, cloneEntity(e))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// DeleteEntities implements ports.EntityWriter.
func (s *SyncStore) DeleteEntities(_ context.Context, orgID string, ids []string, batchID string, at time.Time) ([]ports.EntityWritten, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out, undo, err := s.deleteByIDLocked(orgID, ids, batchID, at)
	if err != nil {
		undo()
		return nil, err
	}
	return out, nil
}

// deleteByIDLocked deletes and returns the inverse of what it wrote.
func (s *SyncStore) deleteByIDLocked(orgID string, ids []string, batchID string, at time.Time) ([]ports.EntityWritten, func(), error) {
	var undos []func()
	undo := func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
	}
	var out []ports.EntityWritten
	for _, id := range ids {
		k, e := s.entityByIDLocked(orgID, id)
		if e == nil {
			continue
		}
		rev := dbsync.NextRevision(s.revisions[k])
		dds, err := dbsync.DeleteDeltas(s.schemaDatabasesLocked(orgID, e.SchemaID), e, rev, batchID, ts(at))
		if err != nil {
			return nil, undo, err
		}
		prevR := s.revisions[k]
		undos = append(undos, func() { s.entities[k], s.revisions[k] = e, prevR })
		delete(s.entities, k)
		s.revisions[k] = rev
		done := ports.EntityWritten{EntityID: e.ID, Revision: rev}
		if done.Deltas, err = s.appendDeltasLocked(dds, ports.FeedRow{EntityID: e.ID, SchemaID: e.SchemaID, RecordID: e.LastRecordID}, &undos); err != nil {
			return nil, undo, err
		}
		out = append(out, done)
	}
	return out, undo, nil
}

func (s *SyncStore) entityByIDLocked(orgID, id string) (entityKey, *dbsync.Entity) {
	for k, e := range s.entities {
		if e.ID == id && e.OrgID == orgID {
			return k, e
		}
	}
	return entityKey{}, nil
}

func (t txEntities) EntitiesMentioning(ctx context.Context, orgID string, texts ...string) ([]*dbsync.Entity, error) {
	return t.s.EntitiesMentioning(ctx, orgID, texts...)
}

func (t txEntities) EntitiesByID(ctx context.Context, orgID string, ids []string) ([]*dbsync.Entity, error) {
	return t.s.EntitiesByID(ctx, orgID, ids)
}

func (t txEntities) DeleteEntities(_ context.Context, orgID string, ids []string, batchID string, at time.Time) ([]ports.EntityWritten, error) {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	out, undo, err := t.s.deleteByIDLocked(orgID, ids, batchID, at)
	if err != nil {
		undo()
		return nil, err
	}
	t.u.add(func() {
		t.s.mu.Lock()
		defer t.s.mu.Unlock()
		undo()
	})
	return out, nil
}

// LockFeeds implements ports.EntityWriter: units of work run one at a
// time, so there is nothing to lock.
func (s *SyncStore) LockFeeds(context.Context, []string) error { return nil }

func (t txEntities) LockFeeds(ctx context.Context, schemaIDs []string) error {
	return t.s.LockFeeds(ctx, schemaIDs)
}

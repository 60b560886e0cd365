package memory

import (
	"context"
	"fmt"
	"maps"
	"sort"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/ports"
)

var (
	_ ports.EntityStore  = (*SyncStore)(nil)
	_ ports.EntityWriter = (*SyncStore)(nil)
)

// SchemaDatabases returns copies of the organization's registrations
// linked to schemaID.
func (s *SyncStore) SchemaDatabases(_ context.Context, orgID, schemaID string) ([]*dbsync.Database, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.schemaDatabasesLocked(orgID, schemaID), nil
}

func (s *SyncStore) schemaDatabasesLocked(orgID, schemaID string) []*dbsync.Database {
	var out []*dbsync.Database
	for _, d := range s.databases {
		if _, ok := d.Link(schemaID); ok && d.OrgID == orgID {
			c := *d
			c.Links = append([]dbsync.Link(nil), d.Links...)
			out = append(out, &c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// WriteEntities writes each entity at its identity's next revision and
// appends its deltas, under the store's lock: all of the call or none.
func (s *SyncStore) WriteEntities(_ context.Context, writes []ports.EntityWrite) ([]ports.EntityWritten, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out, undo, err := s.writeLocked(writes)
	if err != nil {
		undo()
		return nil, err
	}
	return out, nil
}

// writeLocked writes and returns the inverse of what it wrote.
func (s *SyncStore) writeLocked(writes []ports.EntityWrite) ([]ports.EntityWritten, func(), error) {
	var undos []func()
	undo := func() {
		for i := len(undos) - 1; i >= 0; i-- {
			undos[i]()
		}
	}
	out := make([]ports.EntityWritten, 0, len(writes))
	for _, w := range writes {
		k := entityKey{w.SchemaID, w.Identity.EntityType, w.Identity.KeyIdentity}
		e, dds, err := w.Apply(s.revisions[k], s.schemaDatabasesLocked(w.OrgID, w.SchemaID))
		if err != nil {
			return nil, undo, fmt.Errorf("memory: write entity: %w: %w", ports.ErrInvalid, err)
		}
		prevE, hadE := s.entities[k]
		prevR, hadR := s.revisions[k]
		undos = append(undos, func() {
			restore(s.entities, k, prevE, hadE)
			restore(s.revisions, k, prevR, hadR)
		})
		e.Payload, e.Keys, e.UpdatedAt = cloneJSON(e.Payload), maps.Clone(e.Keys), ts(e.UpdatedAt)
		s.entities[k], s.revisions[k] = e, e.Revision
		done := ports.EntityWritten{EntityID: e.ID, Revision: e.Revision}
		if done.Deltas, err = s.appendDeltasLocked(dds, ports.FeedRow{EntityID: e.ID, SchemaID: w.SchemaID, RecordID: w.RecordID}, &undos); err != nil {
			return nil, undo, err
		}
		out = append(out, done)
	}
	return out, undo, nil
}

// appendDeltasLocked appends each delta of dds to its registration's feed
// as row (its Delta set), adding the undo of each append to undos, and
// returns the ids by registration.
func (s *SyncStore) appendDeltasLocked(dds []dbsync.DatabaseDelta, row ports.FeedRow, undos *[]func()) (map[string][]int64, error) {
	out := map[string][]int64{}
	for _, dd := range dds {
		row.Delta = dd.Delta
		ids, err := s.appendLocked(dd.DatabaseID, []ports.FeedRow{row})
		if err != nil {
			return nil, err
		}
		db := dd.DatabaseID
		*undos = append(*undos, func() { s.unappendLocked(db, 1) })
		out[db] = append(out[db], ids...)
	}
	return out, nil
}

func restore[V any](m map[entityKey]V, k entityKey, v V, had bool) {
	if had {
		m[k] = v
	} else {
		delete(m, k)
	}
}

// ListEntities pages a schema's entities, most recently updated first.
func (s *SyncStore) ListEntities(_ context.Context, orgID, schemaID string, q ports.EntityQuery) (ports.EntityPage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	types := map[string]bool{}
	var all []*dbsync.Entity
	for _, e := range s.entities {
		if e.OrgID != orgID || e.SchemaID != schemaID {
			continue
		}
		types[e.EntityType] = true
		if q.EntityType == "" || q.EntityType == e.EntityType {
			all = append(all, e)
		}
	}
	sort.Slice(all, func(i, j int) bool {
		if !all[i].UpdatedAt.Equal(all[j].UpdatedAt) {
			return all[i].UpdatedAt.After(all[j].UpdatedAt)
		}
		return all[i].ID < all[j].ID
	})
	page := ports.EntityPage{Total: int64(len(all)), Entities: []*dbsync.Entity{}, EntityTypes: []string{}}
	for t := range types {
		page.EntityTypes = append(page.EntityTypes, t)
	}
	sort.Strings(page.EntityTypes)
	for i := q.Offset; i < len(all) && (q.Limit <= 0 || i < q.Offset+q.Limit); i++ {
		page.Entities = append(page.Entities, cloneEntity(all[i]))
	}
	return page, nil
}

// GetEntity returns an entity of the organization by id.
func (s *SyncStore) GetEntity(_ context.Context, orgID, id string) (*dbsync.Entity, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.entities {
		if e.ID == id && e.OrgID == orgID {
			return cloneEntity(e), nil
		}
	}
	return nil, fmt.Errorf("memory: entity %s: %w", id, ports.ErrNotFound)
}

// DeleteSchemaEntities deletes a schema's entity rows, keeping their
// revisions.
func (s *SyncStore) DeleteSchemaEntities(_ context.Context, orgID, schemaID string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, _ := s.deleteEntitiesLocked(orgID, schemaID)
	return n, nil
}

// deleteEntitiesLocked deletes a schema's entity rows and returns how many
// and their inverse.
func (s *SyncStore) deleteEntitiesLocked(orgID, schemaID string) (int64, func()) {
	gone := map[entityKey]*dbsync.Entity{}
	for k, e := range s.entities {
		if e.OrgID == orgID && e.SchemaID == schemaID {
			gone[k] = e
			delete(s.entities, k)
		}
	}
	return int64(len(gone)), func() { maps.Copy(s.entities, gone) }
}

func cloneEntity(e *dbsync.Entity) *dbsync.Entity {
	c := *e
	c.Payload, c.Keys = cloneJSON(e.Payload), maps.Clone(e.Keys)
	return &c
}

// txEntities is the entity writer inside a unit of work.
type txEntities struct {
	s *SyncStore
	u *undoLog
}

func (t txEntities) WriteEntities(_ context.Context, writes []ports.EntityWrite) ([]ports.EntityWritten, error) {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	out, undo, err := t.s.writeLocked(writes)
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

func (t txEntities) DeleteSchemaEntities(_ context.Context, orgID, schemaID string) (int64, error) {
	t.s.mu.Lock()
	defer t.s.mu.Unlock()
	n, undo := t.s.deleteEntitiesLocked(orgID, schemaID)
	t.u.add(func() {
		t.s.mu.Lock()
		defer t.s.mu.Unlock()
		undo()
	})
	return n, nil
}

// SeedDatabase stores a registration with its links and an empty feed, as
// the registry does: the entity layer's tests' way to link a schema while
// the memory registry is not on this branch.
func (s *SyncStore) SeedDatabase(d *dbsync.Database) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := *d
	c.Links = append([]dbsync.Link(nil), d.Links...)
	s.databases[d.ID] = &c
	if s.feeds[d.ID] == nil {
		// delta_feeds.next_id starts at 1 on PostgreSQL: the first delta is
		// 1 and an empty feed's head is 0.
		s.feeds[d.ID] = &feed{nextID: 1}
	}
}

// FeedRows returns a registration's deltas in id order (for tests).
func (s *SyncStore) FeedRows(databaseID string) []ports.FeedRow {
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.feeds[databaseID]
	if f == nil {
		return nil
	}
	out := make([]ports.FeedRow, len(f.deltas))
	for i, d := range f.deltas {
		out[i] = ports.FeedRow{Delta: d.Delta, EntityID: d.EntityID, SchemaID: d.SchemaID, RecordID: d.RecordID}
	}
	return out
}

func (t txEntities) CountSchemaEntities(ctx context.Context, orgID, schemaID string) (int64, error) {
	return t.s.CountSchemaEntities(ctx, orgID, schemaID)
}

// CountSchemaEntities counts a schema's entity rows.
func (s *SyncStore) CountSchemaEntities(_ context.Context, orgID, schemaID string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, e := range s.entities {
		if e.OrgID == orgID && e.SchemaID == schemaID {
			n++
		}
	}
	return n, nil
}

package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/relmap"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.DatabaseStore = (*SyncStore)(nil)

// cloneDatabase copies d deep, so that neither the caller nor the store
// sees the other's later edits.
func cloneDatabase(d *dbsync.Database) *dbsync.Database {
	c := *d
	c.CreatedAt, c.UpdatedAt = ts(d.CreatedAt), ts(d.UpdatedAt)
	c.Links = make([]dbsync.Link, len(d.Links))
	for i, l := range d.Links {
		l.LinkedAt = ts(l.LinkedAt)
		l.Shipped = cloneMap(l.Shipped)
		c.Links[i] = l
	}
	return &c
}

func cloneMap(m *relmap.Map) *relmap.Map {
	if m == nil {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("memory: clone relational map: %v", err))
	}
	var out relmap.Map
	if err := json.Unmarshal(b, &out); err != nil {
		panic(fmt.Sprintf("memory: clone relational map: %v", err))
	}
	return &out
}

// CreateDatabase stores d with its links and an empty feed; an existing id
// is ErrConflict.
func (s *SyncStore) CreateDatabase(_ context.Context, d *dbsync.Database) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.databases[d.ID]; ok {
		return fmt.Errorf("memory: create database %s: %w", d.ID, ports.ErrConflict)
	}
	s.databases[d.ID] = cloneDatabase(d)
	s.feeds[d.ID] = &feed{nextID: 1}
	return nil
}

// GetDatabase returns orgID's registration id.
func (s *SyncStore) GetDatabase(_ context.Context, orgID, id string) (*dbsync.Database, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.databases[id]
	if !ok || d.OrgID != orgID {
		return nil, fmt.Errorf("memory: database %s: %w", id, ports.ErrNotFound)
	}
	return cloneDatabase(d), nil
}

// ListDatabases returns orgID's registrations (linked to schemaID when it
// is set), oldest first.
func (s *SyncStore) ListDatabases(_ context.Context, orgID, schemaID string) ([]*dbsync.Database, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []*dbsync.Database{}
	for _, d := range s.databases {
		if d.OrgID != orgID {
			continue
		}
		if _, ok := d.Link(schemaID); schemaID != "" && !ok {
			continue
		}
		out = append(out, cloneDatabase(d))
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.Before(out[j].CreatedAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// UpdateDatabase applies fn to a copy of the registration and stores it
// when fn returns nil.
func (s *SyncStore) UpdateDatabase(_ context.Context, orgID, id string, fn func(*dbsync.Database) error) (*dbsync.Database, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, ok := s.databases[id]
	if !ok || prev.OrgID != orgID {
		return nil, fmt.Errorf("memory: update database %s: %w", id, ports.ErrNotFound)
	}
	d := cloneDatabase(prev)
	if err := fn(d); err != nil {
		return nil, err
	}
	d.ID, d.OrgID, d.CreatedAt = prev.ID, prev.OrgID, prev.CreatedAt
	s.databases[id] = cloneDatabase(d)
	return cloneDatabase(d), nil
}

// DeleteDatabase removes the registration, its feed and its deltas.
func (s *SyncStore) DeleteDatabase(_ context.Context, orgID, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.databases[id]
	if !ok || d.OrgID != orgID {
		return fmt.Errorf("memory: delete database %s: %w", id, ports.ErrNotFound)
	}
	delete(s.databases, id)
	delete(s.feeds, id)
	return nil
}

// Counters counts the registration's pending and quarantined deltas and
// the entities of its linked schemas.
func (s *SyncStore) Counters(_ context.Context, orgID, id string) (dbsync.Counters, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.databases[id]
	if !ok || d.OrgID != orgID {
		return dbsync.Counters{}, fmt.Errorf("memory: counters of database %s: %w", id, ports.ErrNotFound)
	}
	var c dbsync.Counters
	if f := s.feeds[id]; f != nil {
		for _, r := range f.deltas {
			switch {
			case slices.Contains(f.state.Quarantined, r.BatchKey()):
				c.QuarantinedDeltas++
			case r.ID > f.state.Watermark:
				c.PendingDeltas++
			}
		}
	}
	schemas := d.SchemaIDs()
	for _, e := range s.entities {
		if e.OrgID == orgID && slices.Contains(schemas, e.SchemaID) {
			c.EntityCount++
		}
	}
	return c, nil
}

// restoreDatabase puts back a registration (and its feed, when given) as
// it was: the undo of an update or a delete.
func (s *SyncStore) restoreDatabase(d *dbsync.Database, f *feed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.databases[d.ID] = d
	if f != nil {
		s.feeds[d.ID] = f
	}
}

// forgetDatabase is the undo of a create.
func (s *SyncStore) forgetDatabase(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.databases, id)
	delete(s.feeds, id)
}

// stored returns the stored registration and feed (nil when absent).
func (s *SyncStore) stored(id string) (*dbsync.Database, *feed) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.databases[id], s.feeds[id]
}

// txDatabases is the registry inside a unit of work.
type txDatabases struct {
	*SyncStore
	u *undoLog
}

func (t txDatabases) CreateDatabase(ctx context.Context, d *dbsync.Database) error {
	if err := t.SyncStore.CreateDatabase(ctx, d); err != nil {
		return err
	}
	t.u.add(func() { t.forgetDatabase(d.ID) })
	return nil
}

func (t txDatabases) UpdateDatabase(ctx context.Context, orgID, id string, fn func(*dbsync.Database) error) (*dbsync.Database, error) {
	prev, _ := t.stored(id)
	out, err := t.SyncStore.UpdateDatabase(ctx, orgID, id, fn)
	if err == nil {
		t.u.add(func() { t.restoreDatabase(prev, nil) })
	}
	return out, err
}

func (t txDatabases) DeleteDatabase(ctx context.Context, orgID, id string) error {
	prev, f := t.stored(id)
	if err := t.SyncStore.DeleteDatabase(ctx, orgID, id); err != nil {
		return err
	}
	t.u.add(func() { t.restoreDatabase(prev, f) })
	return nil
}

// PendingSchemaDeltas counts the registration's deltas of schemaID above
// the watermark and outside the quarantine.
func (s *SyncStore) PendingSchemaDeltas(_ context.Context, orgID, id, schemaID string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, _, err := s.feedOf(orgID, id)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, r := range f.deltas {
		if r.SchemaID == schemaID && r.ID > f.state.Watermark && r.QuarantinedAt == nil &&
			!slices.Contains(f.state.Quarantined, r.BatchKey()) {
			n++
		}
	}
	return n, nil
}

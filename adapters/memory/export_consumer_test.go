package memory

import (
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/delta"
)

// SeedSync puts a registration, a feed whose last id is head and entities
// into s (the consumer suites' seeder; the registry and the entity layer
// have their own ports).
func (s *SyncStore) SeedSync(d *dbsync.Database, head int64, es []*dbsync.Entity) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := *d
	s.databases[d.ID] = &c
	s.feeds[d.ID] = &feed{state: delta.State{}, nextID: head + 1}
	for _, e := range es {
		ce := *e
		s.entities[entityKey{e.SchemaID, e.EntityType, e.KeyIdentity}] = &ce
	}
}

// MarkDatabase sets a registration's snapshot_required_from and its
// links' shipped hashes (the feed suite's way to stand for the registry).
func (s *SyncStore) MarkDatabase(id string, from int64, hashes map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.databases[id]
	d.SnapshotRequiredFrom = from
	for i, l := range d.Links {
		if h, ok := hashes[l.SchemaID]; ok {
			d.Links[i].ShippedHash = h
		}
	}
}

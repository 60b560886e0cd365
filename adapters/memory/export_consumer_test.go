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

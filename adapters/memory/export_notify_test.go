package memory

import (
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/delta"
)

// SeedDatabase stores a registration with an empty feed, for the tests of
// the ports built on the SyncStore.
func (s *SyncStore) SeedDatabase(d *dbsync.Database) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := *d
	c.Links = append([]dbsync.Link(nil), d.Links...)
	s.databases[d.ID] = &c
	s.feeds[d.ID] = &feed{state: delta.State{}, nextID: 1}
}

package memory

import (
	"context"
	"fmt"
	"sort"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.SnapshotReader = (*SyncStore)(nil)

// ReadSnapshot copies, under the store's lock, the registration, its
// feed's head and its linked schemas' entities, then calls fn on the
// copy: consistent, and no lock is held while fn streams.
func (s *SyncStore) ReadSnapshot(ctx context.Context, orgID, databaseID string, fn func(context.Context, ports.SnapshotView) error) error {
	d, head, entities, err := s.snapshot(orgID, databaseID)
	if err != nil {
		return err
	}
	return fn(ctx, ports.SnapshotView{Database: d, Head: head,
		Entities: func(_ context.Context, schemaID string, after ports.EntityCursor, limit int) ([]*dbsync.Entity, error) {
			all := entities[schemaID]
			i := sort.Search(len(all), func(i int) bool {
				e := all[i]
				return e.EntityType > after.EntityType || (e.EntityType == after.EntityType && e.KeyIdentity > after.KeyIdentity)
			})
			return all[i:min(len(all), i+limit)], nil
		}})
}

func (s *SyncStore) snapshot(orgID, databaseID string) (*dbsync.Database, int64, map[string][]*dbsync.Entity, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	src, ok := s.databases[databaseID]
	if !ok || src.OrgID != orgID {
		return nil, 0, nil, fmt.Errorf("memory: database %s: %w", databaseID, ports.ErrNotFound)
	}
	d := cloneDatabase(src)
	entities := map[string][]*dbsync.Entity{}
	for _, l := range src.Links {
		entities[l.SchemaID] = nil
	}
	var head int64
	if f, ok := s.feeds[databaseID]; ok {
		head = f.nextID - 1
	}
	for _, e := range s.entities {
		if _, linked := entities[e.SchemaID]; linked && e.OrgID == orgID {
			c := *e
			c.Payload = cloneJSON(e.Payload)
			entities[e.SchemaID] = append(entities[e.SchemaID], &c)
		}
	}
	for _, es := range entities {
		sort.Slice(es, func(i, j int) bool {
			if es[i].EntityType != es[j].EntityType {
				return es[i].EntityType < es[j].EntityType
			}
			return es[i].KeyIdentity < es[j].KeyIdentity
		})
	}
	return d, head, entities, nil
}

// SnapshotServed clears the registration's snapshot_required when a
// snapshot as of head covers the link that set it.
func (s *SyncStore) SnapshotServed(_ context.Context, orgID, databaseID string, head int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.databases[databaseID]
	if !ok || d.OrgID != orgID {
		return fmt.Errorf("memory: database %s: %w", databaseID, ports.ErrNotFound)
	}
	d.SnapshotServed(head)
	return nil
}

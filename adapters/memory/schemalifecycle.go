package memory

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

func rank(sc *schema.Schema) int {
	if sc.IsPinned {
		return 1
	}
	return 0
}

// listRanked pages schemas pinned first, then by UpdatedAt and id, all
// descending.
func listRanked(items []*schema.Schema, p page.Request) page.Result[*schema.Schema] {
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if rank(a) != rank(b) {
			return rank(a) > rank(b)
		}
		if !a.UpdatedAt.Equal(b.UpdatedAt) {
			return a.UpdatedAt.After(b.UpdatedAt)
		}
		return a.ID > b.ID
	})
	size := pageSize(p.Size)
	out := make([]*schema.Schema, 0, size)
	skip := 0
	if p.After == nil {
		skip = p.Offset
	}
	for _, it := range items {
		if p.After != nil && !p.After.BeforeRanked(rank(it), it.UpdatedAt, it.ID) {
			continue
		}
		if skip > 0 {
			skip--
			continue
		}
		out = append(out, it)
		if len(out) > size {
			break
		}
	}
	res := page.Result[*schema.Schema]{Total: len(items)}
	if len(out) > size {
		out = out[:size]
		l := out[size-1]
		res.Next = page.Cursor{Rank: rank(l), CreatedAt: l.UpdatedAt, ID: l.ID}.Encode()
	}
	res.Items = out
	return res
}

// ListDeletedSchemas returns up to limit trashed schemas, most recently
// deleted first.
func (s *SchemaStore) ListDeletedSchemas(_ context.Context, orgID string, limit int) ([]*schema.Schema, error) {
	s.mu.RLock()
	var out []*schema.Schema
	for _, sc := range s.schemas {
		if sc.OrgID == orgID && sc.DeletedAt != nil {
			out = append(out, cloneSchema(sc))
		}
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if !out[i].DeletedAt.Equal(*out[j].DeletedAt) {
			return out[i].DeletedAt.After(*out[j].DeletedAt)
		}
		return out[i].ID > out[j].ID
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// SchemaNames returns the names of the live schemas starting with prefix.
func (s *SchemaStore) SchemaNames(_ context.Context, orgID, prefix string) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []string
	for _, sc := range s.schemas {
		if sc.OrgID == orgID && sc.DeletedAt == nil && strings.HasPrefix(sc.Name, prefix) {
			out = append(out, sc.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// FindSchemaByHash returns the oldest live schema with this content hash.
func (s *SchemaStore) FindSchemaByHash(_ context.Context, orgID, hash string) (*schema.Schema, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	var best *schema.Schema
	for _, sc := range s.schemas {
		if sc.OrgID != orgID || sc.DeletedAt != nil || sc.ContentHash != hash {
			continue
		}
		if best == nil || sc.CreatedAt.Before(best.CreatedAt) || (sc.CreatedAt.Equal(best.CreatedAt) && sc.ID < best.ID) {
			best = cloneSchema(sc)
		}
	}
	if best == nil {
		return nil, fmt.Errorf("memory: find schema by hash: %w", ports.ErrNotFound)
	}
	return best, nil
}

// DeleteSchema removes the schema for good.
func (s *SchemaStore) DeleteSchema(_ context.Context, orgID, id string) error {
	_, err := s.remove(orgID, id)
	return err
}

func (s *SchemaStore) remove(orgID, id string) (schema.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, ok := s.schemas[id]
	if !ok || sc.OrgID != orgID {
		return schema.Schema{}, fmt.Errorf("memory: delete schema %s: %w", id, ports.ErrNotFound)
	}
	delete(s.schemas, id)
	return sc, nil
}

// DeleteRecordsBySchema removes the organization's records of the schema.
func (s *RecordStore) DeleteRecordsBySchema(_ context.Context, orgID, schemaID string) (int, error) {
	_, n := s.removeBySchema(orgID, schemaID)
	return n, nil
}

func (s *RecordStore) removeBySchema(orgID, schemaID string) ([]enrichment.Record, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var gone []enrichment.Record
	for id, r := range s.records {
		if r.OrgID == orgID && r.SchemaID == schemaID && schemaID != "" {
			gone = append(gone, r)
			delete(s.records, id)
		}
	}
	return gone, len(gone)
}

func (s *RecordStore) putBack(rs []enrichment.Record) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range rs {
		s.records[r.ID] = r
	}
}

// The unit of work's views of the new writes, with their inverses.

func (t txSchemas) DeleteSchema(_ context.Context, orgID, id string) error {
	prev, err := t.remove(orgID, id)
	if err != nil {
		return err
	}
	t.u.add(func() { t.restoreSchema(prev) })
	return nil
}

func (t txRecords) DeleteRecordsBySchema(_ context.Context, orgID, schemaID string) (int, error) {
	gone, n := t.removeBySchema(orgID, schemaID)
	t.u.add(func() { t.putBack(gone) })
	return n, nil
}

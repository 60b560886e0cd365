package app

import (
	"context"
	"fmt"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/relmap"
	"github.com/entityenrich/enrich/ports"
)

// SnapshotPart is one piece of a snapshot, in order: the head first (Head
// set, nothing else), then SQL units (each one statement or one entity's
// script, run as one Exec, no terminator) and comments.
type SnapshotPart struct {
	Head  int64
	First bool
	// End is the last part, after every SQL unit: the caller finishes the
	// file and sends it all before it returns.
	End     bool
	SQL     string
	Comment string
}

// snapshotPage is how many entities one read of a snapshot takes.
const snapshotPage = 500

// Snapshot streams the registration's snapshot to emit: the watermark
// table, then per linked schema whose projection shipped its DDL and every
// entity's state (rendered as the data deltas render it), then the
// watermark set to the head, all from one consistent read. An entity that
// cannot be rendered is skipped with a comment, as its deltas would be.
func (s *ConsumerService) Snapshot(ctx context.Context, p *access.Principal, databaseID string, emit func(SnapshotPart) error) error {
	if err := access.AuthorizeDatabase(p, access.ActReadSnapshot, databaseID); err != nil {
		return err
	}
	head := int64(-1)
	err := s.Snapshots.ReadSnapshot(ctx, p.OrgID, databaseID, func(ctx context.Context, v ports.SnapshotView) error {
		head = v.Head
		if err := emit(SnapshotPart{Head: v.Head, First: true}); err != nil {
			return err
		}
		if err := emit(SnapshotPart{SQL: dbsync.StateDDL()}); err != nil {
			return err
		}
		for _, l := range v.Database.Links {
			if l.Shipped == nil {
				continue
			}
			for _, ddl := range relmap.DDL(*l.Shipped) {
				if err := emit(SnapshotPart{SQL: ddl}); err != nil {
					return err
				}
			}
			err := eachEntity(ctx, v, l.SchemaID, func(e *dbsync.Entity) error {
				w, err := dbsync.UpsertEntity(*l.Shipped, e)
				if err != nil {
					return emit(SnapshotPart{Comment: fmt.Sprintf("entity %s (%s) skipped: %v", e.ID, e.EntityType, err)})
				}
				return emit(SnapshotPart{SQL: dbsync.Unit(w)})
			})
			if err != nil {
				return err
			}
		}
		set, err := dbsync.SetStateSQL(databaseID, v.Head)
		if err != nil {
			return err
		}
		return emit(SnapshotPart{SQL: set})
	})
	if err != nil || head < 0 {
		return err
	}
	if err := emit(SnapshotPart{Head: head, End: true}); err != nil {
		return err
	}
	// Served whole: a consumer that re-linked waits for this download
	// (snapshot_required), and loading it sets its watermark to the head.
	return s.Snapshots.SnapshotServed(ctx, p.OrgID, databaseID, head)
}

// Checksum is the registration's checksum as of a delta id.
type Checksum struct {
	AsOf      int64
	RowCounts map[string]int64
	Tables    map[string]string
}

// Checksum computes the registration's per-table row counts and hashes
// (dbsync.ChecksumSQL) from the same consistent read as the snapshot.
func (s *ConsumerService) Checksum(ctx context.Context, p *access.Principal, databaseID string) (*Checksum, error) {
	if err := access.AuthorizeDatabase(p, access.ActReadChecksum, databaseID); err != nil {
		return nil, err
	}
	var out *Checksum
	err := s.Snapshots.ReadSnapshot(ctx, p.OrgID, databaseID, func(ctx context.Context, v ports.SnapshotView) error {
		sum := dbsync.NewChecksum()
		for _, l := range v.Database.Links {
			if l.Shipped == nil {
				continue
			}
			m := *l.Shipped
			sum.Tables(m)
			err := eachEntity(ctx, v, l.SchemaID, func(e *dbsync.Entity) error {
				w, err := dbsync.UpsertEntity(m, e)
				if err != nil {
					return nil // skipped, as in the snapshot
				}
				return sum.AddWrite(m, w)
			})
			if err != nil {
				return err
			}
		}
		counts, hashes := sum.Result()
		out = &Checksum{AsOf: v.Head, RowCounts: counts, Tables: hashes}
		return nil
	})
	return out, err
}

// eachEntity calls fn with every entity of a schema in the view, a page at
// a time.
func eachEntity(ctx context.Context, v ports.SnapshotView, schemaID string, fn func(*dbsync.Entity) error) error {
	var after ports.EntityCursor
	for {
		page, err := v.Entities(ctx, schemaID, after, snapshotPage)
		if err != nil {
			return err
		}
		for _, e := range page {
			if err := fn(e); err != nil {
				return err
			}
		}
		if len(page) < snapshotPage {
			return nil
		}
		last := page[len(page)-1]
		after = ports.EntityCursor{EntityType: last.EntityType, KeyIdentity: last.KeyIdentity}
	}
}

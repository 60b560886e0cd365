package app

import (
	"context"
	"slices"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/ports"
)

// Reinjected is a reinject's answer (QuarantineReinjectResponse).
type Reinjected struct {
	BatchID string // "" when nothing was queued
	Queued  int64  // deltas appended
	Removed int64  // quarantined rows deleted
}

// Reinject sends the current state of quarantined entities again: the
// quarantined data batches named by a delta or an entity of theirs are
// selected; every entity with a row in them has its current state (the
// entity layer's row, at its current revision) appended at the feed's
// tail as upserts, all in one new batch; then the selected batches are
// released (deleted and taken out of quarantine). The append commits
// first, then the release (ports.FeedStore.Release): a crash between the
// two leaves the quarantine as it was and a harmless newer batch (the
// consumer's revision guard makes a repeated state a no-op). An entity
// the entity layer no longer holds (purged) is released without a new
// row; quarantined schema deltas are left alone (redrive them).
func (s *EntityService) Reinject(ctx context.Context, p *access.Principal, databaseID string, sel ports.QuarantineSelection) (Reinjected, error) {
	if err := access.AuthorizeDatabase(p, access.ActActOnQuarantine, databaseID); err != nil {
		return Reinjected{}, err
	}
	if err := s.ready(); err != nil {
		return Reinjected{}, err
	}
	if s.Feed == nil {
		return Reinjected{}, coded(ErrNotSupported, "not_supported_yet", "the feed is not available on this storage")
	}
	if err := checkID(databaseID); err != nil {
		return Reinjected{}, err
	}
	if len(sel.DeltaIDs) == 0 && len(sel.EntityIDs) == 0 {
		return Reinjected{}, Invalid("delta_ids", "name the quarantined deltas with delta_ids or entity_ids")
	}
	rows, err := s.Feed.ListQuarantine(ctx, p.OrgID, databaseID)
	if err != nil {
		return Reinjected{}, feedError(err)
	}
	keys, entityIDs := reinjectSelection(rows, sel)
	if len(keys) == 0 {
		return Reinjected{}, nil
	}
	out := Reinjected{BatchID: s.IDs.NewID()}
	feed, err := s.reinjectRows(ctx, p.OrgID, databaseID, entityIDs, out.BatchID)
	if err != nil {
		return Reinjected{}, err
	}
	if len(feed) > 0 {
		if err := s.UoW.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
			if r.Feed == nil {
				return coded(ErrNotSupported, "not_supported_yet", "the feed is not available on this storage")
			}
			_, err := r.Feed.Append(ctx, databaseID, feed)
			return err
		}); err != nil {
			return Reinjected{}, feedError(err)
		}
		out.Queued = int64(len(feed))
	} else {
		out.BatchID = ""
	}
	if out.Removed, err = s.Feed.Release(ctx, p.OrgID, databaseID, keys); err != nil {
		return Reinjected{}, feedError(err)
	}
	return out, nil
}

// reinjectSelection is the batch keys of the quarantined data batches sel
// names (by a delta or an entity with a row in them), and the entities
// with a row in those batches, in first-row order.
func reinjectSelection(rows []ports.StoredDelta, sel ports.QuarantineSelection) (keys, entityIDs []string) {
	for _, r := range rows {
		if r.Kind != delta.Data || slices.Contains(keys, r.BatchKey()) {
			continue
		}
		if slices.Contains(sel.DeltaIDs, r.ID) || (r.EntityID != "" && slices.Contains(sel.EntityIDs, r.EntityID)) {
			keys = append(keys, r.BatchKey())
		}
	}
	for _, r := range rows {
		if r.Kind == delta.Data && r.EntityID != "" && slices.Contains(keys, r.BatchKey()) && !slices.Contains(entityIDs, r.EntityID) {
			entityIDs = append(entityIDs, r.EntityID)
		}
	}
	return keys, entityIDs
}

// reinjectRows renders the upserts of the entities' current state for the
// registration, all in batch.
func (s *EntityService) reinjectRows(ctx context.Context, orgID, databaseID string, entityIDs []string, batch string) ([]ports.FeedRow, error) {
	dbs := map[string][]*dbsync.Database{} // per schema: the registration alone
	now := s.Clock.Now()
	var out []ports.FeedRow
	for _, id := range entityIDs {
		e, err := s.Entities.GetEntity(ctx, orgID, id)
		if isNotFound(err) {
			continue // purged: nothing to send
		}
		if err != nil {
			return nil, err
		}
		if _, ok := dbs[e.SchemaID]; !ok {
			all, err := s.Entities.SchemaDatabases(ctx, orgID, e.SchemaID)
			if err != nil {
				return nil, err
			}
			dbs[e.SchemaID] = slices.DeleteFunc(all, func(d *dbsync.Database) bool { return d.ID != databaseID })
		}
		dds, err := dbsync.UpsertDeltas(dbs[e.SchemaID], e, batch, now)
		if err != nil {
			return nil, coded(ports.ErrInvalid, "entity_not_renderable", "%v", err)
		}
		for _, dd := range dds {
			out = append(out, ports.FeedRow{Delta: dd.Delta, EntityID: e.ID, SchemaID: e.SchemaID, RecordID: e.LastRecordID})
		}
	}
	return out, nil
}

package app

import (
	"context"
	"slices"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/ports"
)

// dropLinks removes a schema's links from the organization's registrations
// (a delete with cascade), in the caller's unit of work, locking each
// registration before the schema, as a link and an unlink do. A
// registration left without a link stays (its feed, credential and the
// consumer's tables with it) until it is deleted or links another schema.
func dropLinks(ctx context.Context, dbs ports.DatabaseStore, orgID, schemaID string) error {
	if dbs == nil {
		return nil
	}
	list, err := dbs.ListDatabases(ctx, orgID, schemaID)
	if err != nil {
		return err
	}
	for _, d := range list {
		if _, err := dbs.UpdateDatabase(ctx, orgID, d.ID, func(d *dbsync.Database) error {
			d.Links = slices.DeleteFunc(d.Links, func(l dbsync.Link) bool { return l.SchemaID == schemaID })
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

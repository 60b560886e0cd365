package dbsync

import (
	"encoding/json"

	"github.com/entityenrich/enrich/domain/relmap"
)

// Options are the registration's projection options for one link: its
// pk_strategy, index_scalars, propagate_not_null and key language, the
// names the link already shipped (kept, so a publish never renames), and
// the relations the registration's other links shipped (avoided).
func (d *Database) Options(schemaID string) relmap.Options {
	o := relmap.Options{PKStrategy: string(d.PKStrategy), IndexScalars: string(d.IndexScalars),
		PropagateNotNull: d.PropagateNotNull, KeyLanguage: d.KeyLanguage}
	for _, l := range d.Links {
		switch {
		case l.SchemaID == schemaID:
			o.Previous = l.Shipped
		case l.Shipped != nil:
			o.Taken = append(o.Taken, l.Shipped.Relations()...)
		}
	}
	return o
}

// Projection is the relational map the registration gives a linked
// schema's published contract. Every part that renders SQL for a link (the
// DDL of a link or a publish, data deltas, the snapshot, the relational
// map) derives it here, so they agree.
func (d *Database) Projection(schemaID string, contract json.RawMessage) (relmap.Map, error) {
	return relmap.Project(contract, d.Options(schemaID))
}

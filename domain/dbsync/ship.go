package dbsync

import (
	"encoding/json"
	"strings"

	"github.com/entityenrich/enrich/domain/relmap"
)

// Ship is the DDL a link ships to the consumer as one schema delta: the
// statements, joined by Script, and the map the link has once it is
// applied.
type Ship struct {
	SchemaID   string
	Statements []string
	Map        relmap.Map
	// Changes are the structural changes from the shipped map (none for a
	// first ship: the whole DDL).
	Changes []relmap.Change
	// Reload is set when a confirmed change has no DDL (a re-key, a
	// pk_strategy shift): the consumer must reload from a snapshot.
	Reload bool
}

// Script is the statements as one idempotent script.
func (s Ship) Script() string { return strings.Join(s.Statements, ";\n") + ";" }

// Payload is the schema delta's structured form.
func (s Ship) Payload() json.RawMessage {
	tables := make([]string, len(s.Map.Tables))
	for i, t := range s.Map.Tables {
		tables[i] = t.Name
	}
	changes := s.Changes
	if changes == nil {
		changes = []relmap.Change{}
	}
	b, _ := json.Marshal(map[string]any{"saved_schema_id": s.SchemaID, "entity_type": s.Map.EntityType,
		"tables": tables, "changes": changes, "reload_required": s.Reload, "statements": s.Statements})
	return b
}

// PlanShip is what publishing contract ships for the link to schemaID: the
// whole DDL when the link shipped nothing yet, else the changes from what
// it shipped. Transforms (relmap.Check) need confirm; confirmed, their
// DDL ships after the additive changes', and one with none sets Reload.
// A nil Ship (and no error) means nothing to ship. The link's Shipped is
// set to the new map when there is something to ship.
func (d *Database) PlanShip(schemaID string, contract json.RawMessage, confirm bool) (*Ship, error) {
	i := d.LinkIndex(schemaID)
	if i < 0 || contract == nil {
		return nil, nil
	}
	m, err := d.Projection(schemaID, contract)
	if err != nil {
		return nil, err
	}
	ship := &Ship{SchemaID: schemaID, Map: m}
	prev := d.Links[i].Shipped
	if prev == nil {
		ship.Statements = relmap.DDL(m)
	} else {
		changes, err := relmap.Diff(*prev, m)
		if err != nil {
			return nil, err
		}
		if err := relmap.Check(changes, confirm); err != nil {
			return nil, err
		}
		ship.Changes = changes
		ship.Statements = relmap.Additive(changes)
		for _, c := range changes {
			if c.Transform {
				ship.Statements = append(ship.Statements, c.SQL...)
				ship.Reload = ship.Reload || len(c.SQL) == 0
			}
		}
		if len(changes) == 0 {
			return nil, nil
		}
	}
	d.Links[i].Shipped = &m
	if len(ship.Statements) == 0 {
		// A confirmed re-key alone: the delta says so; the consumer
		// reloads from a snapshot.
		ship.Statements = []string{"SELECT 'reload required: the projection was re-keyed' AS ee_notice"}
	}
	return ship, nil
}

// LinkIndex is the index of the link to schemaID in Links, -1 when none.
func (d *Database) LinkIndex(schemaID string) int {
	for i, l := range d.Links {
		if l.SchemaID == schemaID {
			return i
		}
	}
	return -1
}

// NoteContract records that the link of schemaID follows the published
// contract with this content hash, once its projection shipped (a link
// that shipped nothing follows no contract yet).
func (d *Database) NoteContract(schemaID, hash string) {
	if i := d.LinkIndex(schemaID); i >= 0 && d.Links[i].Shipped != nil {
		d.Links[i].ShippedHash = hash
	}
}

// SnapshotRequired reports whether claims are paused until the consumer
// reloads from a snapshot.
func (d *Database) SnapshotRequired() bool { return d.SnapshotRequiredFrom > 0 }

// RelinkNeedsSnapshot reports whether linking a schema makes the consumer
// reload from a snapshot: the registration's shape had shipped before
// (a consumer exists), the new link ships its projection now, and the
// schema has entity state (rows written while this registration did not
// link it, which were never sent to it as deltas). A new registration's
// consumer starts from a snapshot anyway.
func RelinkNeedsSnapshot(shippedBefore, shipsNow, hasState bool) bool {
	return shippedBefore && shipsNow && hasState
}

// SnapshotServed clears SnapshotRequiredFrom when a snapshot as of head
// covers the link that set it; it reports whether it did.
func (d *Database) SnapshotServed(head int64) bool {
	if d.SnapshotRequiredFrom > 0 && d.SnapshotRequiredFrom <= head {
		d.SnapshotRequiredFrom = 0
		return true
	}
	return false
}

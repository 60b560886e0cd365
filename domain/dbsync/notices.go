package dbsync

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/entityenrich/enrich/domain/relmap"
)

// Notice restates a weighty registration decision with one schema's own
// numbers (WIRE's RegistrationNotice): the options that shape the
// consumer's tables and are locked once DDL ships.
type Notice struct {
	Option          string
	Value           string
	Effect          string
	LockedAfterShip bool
}

// Notices restates propagate_not_null and pk_strategy for the link of
// schemaID with its published contract (nil: not published yet, so the
// numbers come with its first publish).
func (d *Database) Notices(schemaID string, contract json.RawMessage) ([]Notice, error) {
	nn := Notice{Option: "propagate_not_null", Value: fmt.Sprint(d.PropagateNotNull), LockedAfterShip: true}
	pk := Notice{Option: "pk_strategy", Value: string(d.PKStrategy), LockedAfterShip: true}
	if contract == nil {
		nn.Effect = "the schema is not published yet: its always-present properties are counted at its first publish, which ships its tables"
		pk.Effect = "the schema is not published yet: its tables and keys are shipped at its first publish"
		return []Notice{nn, pk}, nil
	}
	m, err := d.Projection(schemaID, contract)
	if err != nil {
		return nil, err
	}
	// The columns the option makes NOT NULL: those NOT NULL with it and
	// not without it (natural key columns are NOT NULL either way).
	on, off := *d, *d
	on.PropagateNotNull, off.PropagateNotNull = true, false
	with, err := on.Projection(schemaID, contract)
	if err != nil {
		return nil, err
	}
	without, err := off.Projection(schemaID, contract)
	if err != nil {
		return nil, err
	}
	n1, props := propertyColumns(with)
	n0, _ := propertyColumns(without)
	always := n1 - n0
	if d.PropagateNotNull {
		nn.Effect = fmt.Sprintf("%d of the %d property columns are NOT NULL in the replica because this schema declares them "+
			"always present; a row with a gap there (on_gaps accept_partial) is refused by the replica and quarantined", always, props)
	} else {
		nn.Effect = fmt.Sprintf("none of the %d property columns is made NOT NULL in the replica, although this schema declares %d "+
			"always present: the gate is applied here, on_gaps decides what is written", props, always)
	}
	pk.Effect = pkEffect(m)
	return []Notice{nn, pk}, nil
}

// propertyColumns counts a map's columns holding properties: those NOT
// NULL, and all.
func propertyColumns(m relmap.Map) (notNull, all int) {
	for _, t := range m.Tables {
		for _, c := range t.Columns {
			if c.Role == relmap.RoleKey || c.Role == relmap.RoleValue || c.Role == relmap.RoleItem {
				all++
				if c.NotNull {
					notNull++
				}
			}
		}
	}
	return notNull, all
}

// pkEffect says how the map's tables are keyed, table by table.
func pkEffect(m relmap.Map) string {
	var keys []string
	for _, c := range m.KeyColumns() {
		keys = append(keys, c.Name)
	}
	parts := make([]string, 0, len(m.Tables))
	for _, t := range m.Tables {
		parts = append(parts, fmt.Sprintf("%s (%s)", t.Name, strings.Join(t.PrimaryKey, ", ")))
	}
	if m.PKStrategy == string(Natural) {
		return fmt.Sprintf("%d tables get natural primary keys built from the key columns (%s): %s; "+
			"a change of the key columns needs a reload from a snapshot", len(m.Tables), strings.Join(keys, ", "), strings.Join(parts, "; "))
	}
	return fmt.Sprintf("%d tables are keyed by a surrogate %s uuid derived from the entity type and the key columns (%s), "+
		"children referencing it ON DELETE CASCADE: %s", len(m.Tables), relmap.ColID, strings.Join(keys, ", "), strings.Join(parts, "; "))
}

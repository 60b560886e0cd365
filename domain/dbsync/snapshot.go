package dbsync

import (
	"fmt"
	"strings"

	"github.com/entityenrich/enrich/domain/relmap"
)

// The consumer keeps its watermark in a table of its own database,
// written in the same transaction as the deltas it applies (and by the
// snapshot's last statement): after a crash between its commit and its
// acknowledgement, a window delivered again is skipped up to the
// watermark, so nothing is applied twice. One row per registration.
const StateTable = "ee_sync_state"

// StateDDL creates the watermark table.
func StateDDL() string {
	return `CREATE TABLE IF NOT EXISTS ` + relmap.QuoteIdent(StateTable) + ` (
  database_id text PRIMARY KEY,
  last_delta_id bigint NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now()
)`
}

// SetStateSQL sets the registration's watermark to deltaID.
func SetStateSQL(databaseID string, deltaID int64) (string, error) {
	id, err := relmap.QuoteString(databaseID)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf(`INSERT INTO %s (database_id, last_delta_id, updated_at) VALUES (%s, %d, now()) `+
		`ON CONFLICT (database_id) DO UPDATE SET last_delta_id = EXCLUDED.last_delta_id, updated_at = now()`,
		relmap.QuoteIdent(StateTable), id, deltaID), nil
}

// ReadStateSQL reads (and locks, so that two consumers of one registration
// take turns) the watermark of registration $1.
func ReadStateSQL() string {
	return `SELECT last_delta_id FROM ` + relmap.QuoteIdent(StateTable) + ` WHERE database_id = $1 FOR UPDATE`
}

// SnapshotHeader is a snapshot's first line: a comment naming the
// registration and the delta id it is consistent with.
func SnapshotHeader(databaseID string, deltaID int64) string {
	return fmt.Sprintf("-- enrich snapshot of database %s as of delta %d\n", CommentSafe(databaseID), deltaID)
}

// SnapshotDeltaID reads the delta id from a snapshot's first line (false
// when it is not one).
func SnapshotDeltaID(line string) (int64, bool) {
	i := strings.LastIndex(line, " as of delta ")
	if !strings.HasPrefix(line, "-- enrich snapshot of database ") || i < 0 {
		return 0, false
	}
	var n int64
	if _, err := fmt.Sscanf(strings.TrimSpace(line[i+len(" as of delta "):]), "%d", &n); err != nil {
		return 0, false
	}
	return n, true
}

// CommentSafe keeps a value on its comment line.
func CommentSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}

// UpsertEntity renders an entity's state for a link's shipped projection:
// its ee_id is the entity layer's id, so that the snapshot and the data
// deltas write the same rows.
func UpsertEntity(m relmap.Map, e *Entity) (relmap.Write, error) {
	return relmap.UpsertWithID(m, e.ID, e.Payload, e.Revision)
}

// Unit is a write's statements as one script without the final
// terminator: what a snapshot carries per entity.
func Unit(w relmap.Write) string {
	parts := make([]string, len(w.Statements))
	for i, s := range w.Statements {
		parts[i] = s.SQL
	}
	return strings.Join(parts, ";\n")
}

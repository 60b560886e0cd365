package postgres

import "github.com/uptrace/bun"

// NewExactVectorIndexPaged is NewExactVectorIndex reading rows vectors per
// page through Bun (not streaming through pgx), so that tests cross page
// boundaries with a few concepts.
func NewExactVectorIndexPaged(db bun.IDB, rows int) *ExactVectorIndex {
	return &ExactVectorIndex{db: db, pageRows: rows, paged: true}
}

// PgvectorNearestSQL is the statement PgvectorIndex.Nearest runs.
var PgvectorNearestSQL = pgvectorNearestSQL

// PgvectorInTx is x with every lookup in its own transaction, as when the
// session lacks the settings (the path before the session had them).
func PgvectorInTx(x *PgvectorIndex) *PgvectorIndex {
	y := *x
	y.sessionEf = 0
	return &y
}

// PgvectorSessionEf is the most candidates x takes in one statement.
func PgvectorSessionEf(x *PgvectorIndex) int { return x.sessionEf }

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

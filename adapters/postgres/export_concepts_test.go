package postgres

import "github.com/uptrace/bun"

// NewExactVectorIndexPaged is NewExactVectorIndex reading rows vectors per
// page, so that tests cross page boundaries with a few concepts.
func NewExactVectorIndexPaged(db bun.IDB, rows int) *ExactVectorIndex {
	return &ExactVectorIndex{db: db, pageRows: rows}
}

// PgvectorNearestSQL is the statement PgvectorIndex.Nearest runs.
var PgvectorNearestSQL = pgvectorNearestSQL

package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/pgvector/pgvector-go"
	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.VectorIndex = (*PgvectorIndex)(nil)

// pgvectorMaxCandidates is hnsw.ef_search's upper bound, and so the most
// candidates one index scan can return.
const pgvectorMaxCandidates = 1000

// pgvectorSessionEfSearch is hnsw.ef_search as every connection of Open's
// pool has it (pgvector's own default): enough for the candidates of k up
// to 20, the lookups the service makes.
const pgvectorSessionEfSearch = 40

// pgvectorSessionSQL makes the settings of the common lookup the session's
// own, so that Nearest is one statement, not a transaction of four more
// round trips. Dotted names are placeholders until pgvector's library
// loads in the session, which then takes their values; where pgvector is
// not installed they are inert.
var pgvectorSessionSQL = fmt.Sprintf("SET hnsw.ef_search = %d; SET hnsw.iterative_scan = relaxed_order", pgvectorSessionEfSearch)

// pgvectorSession is Open's AfterConnect: it sets pgvectorSessionSQL on a
// new connection (PGlite ignores startup parameters, so they would not
// do). A server that refuses the settings (one whose pgvector older than
// 0.8 is preloaded knows no iterative_scan) leaves the connection as it
// was, and the lookups keep their transaction: NewPgvectorIndex reads
// what the session has.
func pgvectorSession(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, pgvectorSessionSQL)
	if pg := (*pgconn.PgError)(nil); errors.As(err, &pg) {
		return nil
	}
	return err
}

// PgvectorIndex is ports.VectorIndex on pgvector (the migration
// 20261128231000_semantic_pgvector adds the column and the HNSW index
// where the extension is available). Writes are the exact index's (a
// trigger derives the pgvector column from real[]); Nearest lets the
// HNSW index pick candidates, a few more than asked, and ranks them in Go
// with concept.Cosine and concept.Nearest, so that its similarities and
// its order of ties are the exact index's.
type PgvectorIndex struct {
	*ExactVectorIndex
	// iterative: the extension (0.8 and later) can go on scanning the
	// index until enough rows pass the slice's filters.
	iterative bool
	// sessionEf is the most candidates a lookup takes with the session's
	// settings, in one statement (0: every lookup sets its own in a
	// transaction). Open's pool sets them on every connection
	// (pgvectorSession); NewPgvectorIndex reads them from one.
	sessionEf int
}

// NewPgvectorIndex returns the index on db, whose pgvector version and
// session settings it reads.
func NewPgvectorIndex(ctx context.Context, db bun.IDB) (*PgvectorIndex, error) {
	var version string
	var ef, iterative sql.NullString
	err := db.NewRaw(`SELECT extversion, current_setting('hnsw.ef_search', true), current_setting('hnsw.iterative_scan', true)
		FROM pg_extension WHERE extname = 'vector'`).Scan(ctx, &version, &ef, &iterative)
	if err != nil {
		return nil, notFound(err, "read the pgvector version")
	}
	var major, minor int
	if _, err := fmt.Sscanf(version, "%d.%d", &major, &minor); err != nil {
		return nil, fmt.Errorf("postgres: pgvector version %q: %w", version, err)
	}
	x := &PgvectorIndex{ExactVectorIndex: NewExactVectorIndex(db), iterative: major > 0 || minor >= 8}
	if n, err := strconv.Atoi(ef.String); err == nil && (!x.iterative || iterative.String == "relaxed_order") {
		x.sessionEf = n
	}
	return x, nil
}

// HasPgvector reports whether the database's concept_embeddings carries
// the pgvector column, that is whether the pgvector migration found the
// extension.
func HasPgvector(ctx context.Context, db bun.IDB) (bool, error) {
	var ok bool
	err := db.NewRaw(`SELECT EXISTS (SELECT 1 FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'concept_embeddings' AND column_name = 'embedding')`).Scan(ctx, &ok)
	if err != nil {
		return false, fail(err, "look for pgvector")
	}
	return ok, nil
}

// NewVectorIndex is the index the database supports: pgvector's where the
// migration found the extension, else the exact one.
func NewVectorIndex(ctx context.Context, db bun.IDB) (ports.VectorIndex, error) {
	ok, err := HasPgvector(ctx, db)
	switch {
	case err != nil:
		return nil, err
	case ok:
		return NewPgvectorIndex(ctx, db)
	}
	return NewExactVectorIndex(db), nil
}

// scanSimple runs q, whose values Bun wrote into its text, and scans its
// rows into dest in one round trip: one message of the simple protocol,
// where pgx's default would prepare the statement first (a second round
// trip, for a text new with every vector). Not the extended protocol's
// unnamed statement either (pgx.QueryExecModeExec): PGlite's one session
// serves every connection, message by message, and another connection's
// statement can take the unnamed one's place in between (SQLSTATE 26000
// under 64 clients). db, when a transaction, runs q as any statement.
func scanSimple(ctx context.Context, db bun.IDB, q *bun.RawQuery, dest any) error {
	pool, rows, err := querySimple(ctx, db, q)
	if pool == nil {
		return q.Scan(ctx, dest)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := pool.ScanRows(ctx, rows, dest); err != nil {
		return err
	}
	return rows.Err()
}

// scanRowSimple is scanSimple for one row into dest's columns:
// sql.ErrNoRows when q found none.
func scanRowSimple(ctx context.Context, db bun.IDB, q *bun.RawQuery, dest ...any) error {
	pool, rows, err := querySimple(ctx, db, q)
	if pool == nil {
		return q.Scan(ctx, dest...)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := rows.Scan(dest...); err != nil {
		return err
	}
	return rows.Close()
}

// querySimple sends q in the simple protocol on the pool db is; a nil
// pool when db is a transaction, which runs q as any statement.
func querySimple(ctx context.Context, db bun.IDB, q *bun.RawQuery) (*bun.DB, *sql.Rows, error) {
	pool, ok := db.(*bun.DB)
	if !ok {
		return nil, nil, nil
	}
	rows, err := pool.DB.QueryContext(ctx, q.String(), pgx.QueryExecModeSimpleProtocol)
	return pool, rows, err
}

// pgvectorNearestSQL orders by pgvector's cosine distance on the column
// cast to d dimensions, the expression the partial HNSW index is built on.
// d is written into the statement (it is an int): a type modifier cannot
// be a parameter, and the index's predicate must be provable from a
// literal. Its parameters: organization, type, model, query vector, limit.
func pgvectorNearestSQL(d int) string {
	return fmt.Sprintf(`SELECT e.concept_id, e.vector_bytes, c.canonical_text, c.ref_count
		FROM concept_embeddings e JOIN semantic_concepts c ON c.id = e.concept_id
		WHERE e.org_id = ? AND e.concept_type = ? AND e.embedding_model = ? AND e.dims = %d
		ORDER BY e.embedding::vector(%d) <=> ?::vector(%d) LIMIT ?`, d, d, d)
}

// pgvectorRow is a candidate as the HNSW lookup reads it: its vector as
// vector_bytes, which the server sends as stored, where real[] would cost
// a float's text per element.
type pgvectorRow struct {
	ConceptID     string `bun:"concept_id"`
	VectorBytes   []byte `bun:"vector_bytes"`
	CanonicalText string `bun:"canonical_text"`
	RefCount      int    `bun:"ref_count"`
}

// Nearest asks the HNSW index for candidates and ranks them.
func (x *PgvectorIndex) Nearest(ctx context.Context, orgID string, s concept.Slice, vector []float32, k int) ([]concept.Neighbor, error) {
	if k < 1 || len(vector) == 0 || !storable(orgID, s.Type, s.EmbeddingModel) {
		return nil, nil
	}
	// Candidates past k catch ties at the k-th place and what the
	// approximate scan ranks slightly off.
	candidates := min(max(2*k, k+10), pgvectorMaxCandidates)
	args := []any{orgID, s.Type, s.EmbeddingModel, pgvector.NewVector(vector), candidates}
	q := pgvectorNearestSQL(len(vector))
	var rows []pgvectorRow
	var err error
	if candidates <= x.sessionEf {
		err = scanSimple(ctx, x.db, x.db.NewRaw(q, args...), &rows)
	} else {
		err = inTx(ctx, x.db, func(ctx context.Context, tx bun.Tx) error {
			if _, err := tx.ExecContext(ctx, "SET LOCAL hnsw.ef_search = ?", max(pgvectorSessionEfSearch, candidates)); err != nil {
				return err
			}
			// Filters apply after the index scan: the iterative scan goes
			// on until enough rows of the slice pass them. Without it
			// (before 0.8) a small slice among large ones may come back
			// short.
			if x.iterative {
				if _, err := tx.ExecContext(ctx, "SET LOCAL hnsw.iterative_scan = relaxed_order"); err != nil {
					return err
				}
			}
			return tx.NewRaw(q, args...).Scan(ctx, &rows)
		})
	}
	if err != nil {
		return nil, fail(err, "nearest concepts")
	}
	ns := make([]concept.Neighbor, 0, len(rows))
	for _, r := range rows {
		v, err := vectorOfBytes(r.VectorBytes)
		if err != nil {
			return nil, err
		}
		ns = append(ns, concept.Neighbor{ConceptID: r.ConceptID, Text: r.CanonicalText, CanonicalText: r.CanonicalText,
			IsCanonical: true, RefCount: r.RefCount, Similarity: concept.Cosine(vector, v)})
	}
	ns = concept.Nearest(ns)
	return ns[:min(k, len(ns))], nil
}

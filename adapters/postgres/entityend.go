package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/dbsync"
	"github.com/entityenrich/enrich/ports"
)

// endWithSync stores a job's end that writes the entity layer, in its own
// transaction of two round trips on one connection: BEGIN with the read
// (the identities' revisions and the feeding links, locked), then, once
// rendered, the end's usual statements, the entity rows, revisions and
// deltas, and COMMIT. A refusal anywhere (a fenced end, an invalid delta)
// rolls back all of it: neither the record nor its deltas exist.
func (u *UnitOfWork) endWithSync(ctx context.Context, end ports.JobEnd, stmts []endStmt, what string) error {
	err := onPgx(ctx, u.db.DB, func(c *pgx.Conn) error {
		lock, links := entityReads(end.Sync)
		b := &pgx.Batch{}
		b.Queue("BEGIN")
		b.Queue(lock.sql, lock.args...)
		b.Queue(links.sql, links.args...)
		br := c.SendBatch(ctx, b)
		revs, feeding, err := readSync(br)
		if cerr := br.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			var writes []endStmt
			if writes, _, err = entityWrites(end.Sync, revs, feeding); err == nil {
				err = commitBatch(ctx, c, append(stmts, writes...))
			}
		}
		if err != nil && !c.IsClosed() {
			_, _ = c.Exec(context.WithoutCancel(ctx), "ROLLBACK")
		}
		return err
	})
	var pg *pgconn.PgError
	switch {
	case errors.As(err, &pg) && pg.Code == errNotHeld:
		return fmt.Errorf("postgres: %s from %s: %w", what, end.From, ports.ErrFenced)
	case errors.Is(err, ports.ErrInvalid):
		return err
	case err != nil:
		return conflict(err, what)
	}
	return nil
}

func readSync(br pgx.BatchResults) (map[identityKey]int64, map[string][]*dbsync.Database, error) {
	if _, err := br.Exec(); err != nil {
		return nil, nil, err
	}
	rows, err := br.Query()
	if err != nil {
		return nil, nil, err
	}
	revs, err := scanRevisions(rows)
	rows.Close()
	if err != nil {
		return nil, nil, err
	}
	if rows, err = br.Query(); err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	links, err := scanLinks(rows)
	return revs, links, err
}

// commitBatch sends stmts and COMMIT as one batch.
func commitBatch(ctx context.Context, c *pgx.Conn, stmts []endStmt) error {
	b := &pgx.Batch{}
	for _, st := range stmts {
		b.Queue(st.sql, st.args...)
	}
	b.Queue("COMMIT")
	return c.SendBatch(ctx, b).Close()
}

// EntityWriter writes the entity layer in a unit of work's transaction
// (Repos.Entities): the same statements as a job's end, one by one.
type EntityWriter struct{ tx bun.Tx }

var _ ports.EntityWriter = EntityWriter{}

// WriteEntities writes writes in the unit's transaction.
func (w EntityWriter) WriteEntities(ctx context.Context, writes []ports.EntityWrite) ([]ports.EntityWritten, error) {
	if len(writes) == 0 {
		return nil, nil
	}
	lock, links := entityReads(writes)
	rows, err := w.tx.Tx.QueryContext(ctx, lock.sql, lock.args...)
	if err != nil {
		return nil, fail(err, "lock entity revisions")
	}
	revs, err := scanRevisions(rows)
	rows.Close()
	if err != nil {
		return nil, fail(err, "lock entity revisions")
	}
	if rows, err = w.tx.Tx.QueryContext(ctx, links.sql, links.args...); err != nil {
		return nil, fail(err, "read feeding links")
	}
	feeding, err := scanLinks(rows)
	rows.Close()
	if err != nil {
		return nil, fail(err, "read feeding links")
	}
	stmts, r, err := entityWrites(writes, revs, feeding)
	if err != nil {
		return nil, err
	}
	for i, st := range stmts {
		if i < 2 {
			if _, err := w.tx.Tx.ExecContext(ctx, st.sql, st.args...); err != nil {
				return nil, conflict(err, "write entities")
			}
			continue
		}
		ids, err := queryIDs(ctx, w.tx.Tx, st)
		if err != nil {
			return nil, conflict(err, "append deltas")
		}
		r.gave(i-2, ids)
	}
	return r.written, nil
}

// DeleteSchemaEntities deletes a schema's entity rows in the unit's
// transaction.
func (w EntityWriter) DeleteSchemaEntities(ctx context.Context, orgID, schemaID string) (int64, error) {
	return NewEntityStore(w.tx).DeleteSchemaEntities(ctx, orgID, schemaID)
}

func queryIDs(ctx context.Context, tx *sql.Tx, st endStmt) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, st.sql, st.args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// CountSchemaEntities counts a schema's entity rows in the unit's
// transaction.
func (w EntityWriter) CountSchemaEntities(ctx context.Context, orgID, schemaID string) (int64, error) {
	var n int64
	err := w.tx.NewRaw(`SELECT count(*) FROM entities WHERE org_id = ? AND schema_id = ?`, orgID, schemaID).Scan(ctx, &n)
	if err != nil {
		return 0, fail(err, "count the entities of schema "+schemaID)
	}
	return n, nil
}

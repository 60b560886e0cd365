package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/text"
	"github.com/entityenrich/enrich/domain/usage"
	"github.com/entityenrich/enrich/ports"
)

// A job's end is sent as a pgx batch of statements whose text never
// changes, with the values as parameters. On native PostgreSQL pgx prepares
// each text once per connection and then sends only Bind and Execute, all
// before one Sync: one round trip, one implicit transaction, no parse or
// plan. Bun's INSERT instead wrote every value into a new query text, which
// PostgreSQL parsed and planned each time, and formatting it cost the Go
// side more than the statement's execution. With
// default_query_exec_mode=simple_protocol (PGlite), pgx joins the batch
// into one multi-statement query, again one implicit transaction.
//
// The column lists below are the row models' (jobRow, recordRow, usageRow,
// eventRow); TestEndColumns fails when a model gains a column they miss.

const jobColumns = "id, org_id, type, state, error_code, error, request, result, created_at, updated_at, " +
	"heartbeat_at, attempt, owner, lease_until, pause_until, continues"

const insertJobSQL = "INSERT INTO jobs (" + jobColumns + ") VALUES " +
	"($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)"

// endJobSQL is the fenced UPDATE of a job that is held: it changes no row
// unless the job is at the attempt and in the state the ender holds, and
// enrich_require_held then raises EJ409, which rolls the whole end back.
const endJobSQL = "WITH j AS (UPDATE jobs SET state = $1, error_code = $2, error = $3, result = $4, updated_at = $5 " +
	"WHERE id = $6 AND attempt = $7 AND state = $8 RETURNING 1) SELECT enrich_require_held(count(*), $6) FROM j"

// pauseJobSQL is endJobSQL for a pause, which also releases the lease and
// sets the pause's deadline.
const pauseJobSQL = "WITH j AS (UPDATE jobs SET state = $1, error_code = $2, error = $3, result = $4, updated_at = $5, " +
	"owner = $9, lease_until = $10, pause_until = $11 " +
	"WHERE id = $6 AND attempt = $7 AND state = $8 RETURNING 1) SELECT enrich_require_held(count(*), $6) FROM j"

const recordColumns = "id, org_id, type, schema_id, job_id, model, strategy, entity_data, structured_output, cost, " +
	"input_tokens, output_tokens, web_search_calls, sandbox, created_at, deleted_at, fusion, attachments, semantic_concepts, " +
	"semantic_unresolved"

const insertRecordSQL = "INSERT INTO records (" + recordColumns + ") VALUES " +
	"($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)"

const usageColumns = "id, org_id, job_id, task, model, key_source, key_id, input_tokens, output_tokens, " +
	"web_search_calls, embedding_tokens, cost, embedding_cost, latency_ms, outcome, created_at"

const insertUsageSQL = "INSERT INTO llm_usage (" + usageColumns + ") VALUES " +
	"($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16) ON CONFLICT (id) DO NOTHING"

const eventColumns = "job_id, seq, type, data, created_at"

// insertEventsSQL inserts all of a job's events in one statement, whatever
// their number: the rows are parallel arrays.
const insertEventsSQL = "INSERT INTO job_events (" + eventColumns + ") " +
	"SELECT $1, s, t, d::json, c FROM unnest($2::bigint[], $3::text[], $4::text[], $5::timestamptz[]) AS e(s, t, d, c)"

// queueEventsEndSQL is Notifications' fan-out of schema events to their
// schemas' subscriptions, in pgx's placeholder form.
var queueEventsEndSQL = dollars(queueEventsSQL)

// endStmt is one statement of a job's end and its arguments.
type endStmt struct {
	sql  string
	args []any
}

// endStmts returns the statements that store end, in order: the job, its
// records, its usage, its schema events' deliveries, its events.
func endStmts(end ports.JobEnd, codec ports.EventCodec) ([]endStmt, error) {
	j := end.Job
	stmts := make([]endStmt, 0, 3+len(end.Records)+len(end.Usage))
	if end.Create {
		stmts = append(stmts, endStmt{insertJobSQL, []any{j.ID, j.OrgID, string(j.Type), string(j.State),
			string(j.ErrorCode), j.Error, jsonArg(j.Request), jsonArg(j.Result), utc(j.CreatedAt), utc(j.UpdatedAt),
			utc(j.HeartbeatAt), j.Attempt, j.Owner, timeArg(j.LeaseUntil), timeArg(j.PauseUntil), j.Continues}})
	} else {
		args := []any{string(j.State), string(j.ErrorCode), j.Error, jsonArg(j.Result), utc(j.UpdatedAt),
			j.ID, j.Attempt, string(end.From)}
		q := endJobSQL
		if j.State == job.Paused {
			q = pauseJobSQL
			args = append(args, j.Owner, timeArg(j.LeaseUntil), timeArg(j.PauseUntil))
		}
		stmts = append(stmts, endStmt{q, args})
	}
	for _, rec := range end.Records {
		stmts = append(stmts, endStmt{insertRecordSQL, recordArgs(rec)})
	}
	if len(end.Records) > 0 {
		stmts = append(stmts, conceptEndStmts(j.OrgID, end.Concepts)...)
	}
	for _, e := range end.Usage {
		stmts = append(stmts, endStmt{insertUsageSQL, usageArgs(e)})
	}
	if len(end.SchemaEvents) > 0 {
		stmts = append(stmts, endStmt{queueEventsEndSQL, queueEventsArgs(end.SchemaEvents)})
	}
	for rest := end.Events; len(rest) > 0; {
		n := 1
		for n < len(rest) && rest[n].JobID == rest[0].JobID {
			n++
		}
		ev, err := eventsArgs(rest[:n], codec)
		if err != nil {
			return nil, err
		}
		stmts = append(stmts, endStmt{insertEventsSQL, ev})
		rest = rest[n:]
	}
	return stmts, nil
}

func recordArgs(rec *enrichment.Record) []any {
	var deleted any
	if rec.DeletedAt != nil {
		deleted = utc(*rec.DeletedAt)
	}
	return []any{rec.ID, rec.OrgID, string(rec.Type), textOrNull(rec.SchemaID), textOrNull(rec.JobID), rec.Model,
		string(rec.Strategy), jsonArg(rec.EntityData), jsonArg(rec.StructuredOutput), rec.Cost, rec.InputTokens,
		rec.OutputTokens, rec.WebSearchCalls, rec.Sandbox, utc(rec.CreatedAt), deleted, jsonArg(fusionJSON(rec.Fusion)),
		jsonArg(attachmentRefsJSON(rec.Attachments)), jsonArg(conceptRefsJSON(rec.SemanticConcepts)),
		jsonArg(unresolvedJSON(rec.SemanticUnresolved))}
}

func usageArgs(e usage.Entry) []any {
	return []any{e.ID, e.OrgID, e.JobID, e.Task, e.Model, e.KeySource, e.KeyID, e.InputTokens, e.OutputTokens,
		e.WebSearchCalls, e.EmbeddingTokens, e.Cost, e.EmbeddingCost, e.LatencyMS, e.Outcome, utc(e.CreatedAt)}
}

// eventsArgs are the events of one job as the parallel arrays of
// insertEventsSQL.
func eventsArgs(events []job.Event, codec ports.EventCodec) ([]any, error) {
	seqs := make([]int64, len(events))
	types := make([]string, len(events))
	data := make([]*string, len(events))
	at := make([]time.Time, len(events))
	for i, e := range events {
		seqs[i], types[i], at[i] = e.Seq, string(e.Type), utc(e.CreatedAt)
		b, err := codec.Encode(e)
		if err != nil {
			return nil, fmt.Errorf("postgres: append event %s/%d: %w", e.JobID, e.Seq, err)
		}
		if b != nil {
			s := string(b)
			data[i] = &s
		}
	}
	return []any{events[0].JobID, seqs, types, data, at}, nil
}

// jsonArg is a JSON value as a parameter: text (not bytes, which the simple
// protocol would send as bytea), or NULL when empty.
func jsonArg(b json.RawMessage) any {
	if len(b) == 0 {
		return nil
	}
	return string(b)
}

func timeArg(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return utc(t)
}

func textOrNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// refusedText returns why a text argument cannot be stored (domain/text's
// rule: NUL, bytes that are not UTF-8, which PostgreSQL refuses in text), or
// ok.
func refusedText(stmts []endStmt) (text.Reason, bool) {
	for _, st := range stmts {
		for _, a := range st.args {
			var strs []string
			switch v := a.(type) {
			case string:
				strs = []string{v}
			case []string:
				strs = v
			case []*string:
				for _, p := range v {
					if p != nil {
						strs = append(strs, *p)
					}
				}
			}
			for _, s := range strs {
				if r, ok := text.CheckString(s); !ok {
					return r, false
				}
			}
		}
	}
	return "", true
}

// sendBatch runs stmts as one pgx batch on a connection of db: all of them
// or none.
func sendBatch(ctx context.Context, db *sql.DB, stmts []endStmt) error {
	return onPgx(ctx, db, func(c *pgx.Conn) error {
		b := &pgx.Batch{}
		for _, st := range stmts {
			b.Queue(st.sql, st.args...)
		}
		return c.SendBatch(ctx, b).Close()
	})
}

// pool returns the connection pool under db, or false when db is a
// transaction (whose statements must stay on its own connection).
func pool(db bun.IDB) (*sql.DB, bool) {
	switch d := db.(type) {
	case *bun.DB:
		return d.DB, true
	case *DB:
		return d.DB.DB, true
	}
	return nil, false
}

// onPgx calls fn with the pgx connection under one of db's connections, so
// that a hot statement can use pgx directly while sharing Bun's pool.
func onPgx(ctx context.Context, db *sql.DB, fn func(c *pgx.Conn) error) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("postgres: the driver connection is a %T, not pgx's", dc)
		}
		return fn(c.Conn())
	})
}

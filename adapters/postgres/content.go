package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/domain/text"
	"github.com/entityenrich/enrich/ports"
)

var (
	_ ports.SchemaStore = (*SchemaStore)(nil)
	_ ports.RecordStore = (*RecordStore)(nil)
)

type schemaRow struct {
	bun.BaseModel `bun:"table:schemas"`

	ID               string          `bun:"id,pk"`
	OrgID            string          `bun:"org_id,notnull"`
	Name             string          `bun:"name,notnull"`
	Description      string          `bun:"description,notnull"`
	Content          json.RawMessage `bun:"content"`
	ContentHash      string          `bun:"content_hash,notnull"`
	Linked           bool            `bun:"linked,notnull"`
	Tags             json.RawMessage `bun:"tags,notnull"`
	IsPinned         bool            `bun:"is_pinned,notnull"`
	PublishedContent json.RawMessage `bun:"published_content"`
	PublishedHash    string          `bun:"published_hash,notnull"`
	PublishedAt      *time.Time      `bun:"published_at"`
	KeyLanguage      string          `bun:"key_language,notnull"`
	DeletedAt        *time.Time      `bun:"deleted_at"`
	CreatedAt        time.Time       `bun:"created_at,notnull"`
	UpdatedAt        time.Time       `bun:"updated_at,notnull"`
}

func (r *schemaRow) schema() *schema.Schema {
	var tags []string
	_ = json.Unmarshal(r.Tags, &tags)
	return &schema.Schema{ID: r.ID, OrgID: r.OrgID, Name: r.Name, Description: r.Description, Content: jsonOrNil(r.Content),
		ContentHash: r.ContentHash, Linked: r.Linked, Tags: tags, IsPinned: r.IsPinned,
		PublishedContent: jsonOrNil(r.PublishedContent), PublishedHash: r.PublishedHash, PublishedAt: utcPtr(r.PublishedAt),
		KeyLanguage: r.KeyLanguage, DeletedAt: utcPtr(r.DeletedAt), CreatedAt: utc(r.CreatedAt), UpdatedAt: utc(r.UpdatedAt)}
}

func schemaToRow(sc *schema.Schema) schemaRow {
	tags := sc.Tags
	if tags == nil {
		tags = []string{}
	}
	rawTags, _ := json.Marshal(tags)
	return schemaRow{ID: sc.ID, OrgID: sc.OrgID, Name: sc.Name, Description: sc.Description, Content: jsonOrNil(sc.Content),
		ContentHash: sc.ContentHash, Linked: sc.Linked, Tags: rawTags, IsPinned: sc.IsPinned,
		PublishedContent: jsonOrNil(sc.PublishedContent), PublishedHash: sc.PublishedHash, PublishedAt: utcPtr(sc.PublishedAt),
		KeyLanguage: sc.KeyLanguage, DeletedAt: utcPtr(sc.DeletedAt), CreatedAt: utc(sc.CreatedAt), UpdatedAt: utc(sc.UpdatedAt)}
}

// SchemaStore keeps saved schemas in the schemas table. Documents are stored
// as json (not jsonb), so they come back byte for byte.
type SchemaStore struct{ db bun.IDB }

// NewSchemaStore returns a SchemaStore on db.
func NewSchemaStore(db bun.IDB) *SchemaStore { return &SchemaStore{db: db} }

// CreateSchema inserts sc; an existing id is ErrConflict.
func (s *SchemaStore) CreateSchema(ctx context.Context, sc *schema.Schema) error {
	r := schemaToRow(sc)
	if _, err := s.db.NewInsert().Model(&r).Exec(ctx); err != nil {
		return conflict(err, "create schema "+sc.ID)
	}
	return nil
}

// GetSchema returns the schema id of organization orgID.
func (s *SchemaStore) GetSchema(ctx context.Context, orgID, id string) (*schema.Schema, error) {
	var r schemaRow
	if err := s.db.NewSelect().Model(&r).Where("id = ? AND org_id = ?", id, orgID).Scan(ctx); err != nil {
		return nil, notFound(err, "get schema "+id)
	}
	return r.schema(), nil
}

// ListSchemas returns one page of an organization's live schemas, pinned
// first, then most recently updated.
func (s *SchemaStore) ListSchemas(ctx context.Context, orgID string, p page.Request) (page.Result[*schema.Schema], error) {
	var rows []schemaRow
	q := s.db.NewSelect().Model(&rows).Where("org_id = ? AND deleted_at IS NULL", orgID)
	size := pageSize(p.Size)
	if p.After != nil {
		q.Where("(is_pinned, updated_at, id) < (?, ?, ?)", p.After.Rank > 0, utc(p.After.CreatedAt), p.After.ID)
	} else if p.Offset > 0 {
		q.Offset(int64(p.Offset))
	}
	q.Order("is_pinned DESC", "updated_at DESC", "id DESC").Limit(int64(size + 1))
	if err := q.Scan(ctx); err != nil {
		return page.Result[*schema.Schema]{}, fail(err, "list schemas")
	}
	total, err := s.db.NewSelect().Model((*schemaRow)(nil)).Where("org_id = ? AND deleted_at IS NULL", orgID).Count(ctx)
	if err != nil {
		return page.Result[*schema.Schema]{}, fail(err, "count schemas")
	}
	res := page.Result[*schema.Schema]{Total: int(total)}
	for i := range rows {
		res.Items = append(res.Items, rows[i].schema())
	}
	if len(res.Items) > size {
		res.Items = res.Items[:size]
		l := res.Items[size-1]
		c := page.Cursor{CreatedAt: l.UpdatedAt, ID: l.ID}
		if l.IsPinned {
			c.Rank = 1
		}
		res.Next = c.Encode()
	}
	return res, nil
}

// ListDeletedSchemas returns up to limit trashed schemas, most recently
// deleted first.
func (s *SchemaStore) ListDeletedSchemas(ctx context.Context, orgID string, limit int) ([]*schema.Schema, error) {
	var rows []schemaRow
	if err := s.db.NewSelect().Model(&rows).Where("org_id = ? AND deleted_at IS NOT NULL", orgID).
		Order("deleted_at DESC", "id DESC").Limit(int64(limit)).Scan(ctx); err != nil {
		return nil, fail(err, "list deleted schemas")
	}
	out := make([]*schema.Schema, 0, len(rows))
	for i := range rows {
		out = append(out, rows[i].schema())
	}
	return out, nil
}

// SchemaNames returns the names of the live schemas starting with prefix.
func (s *SchemaStore) SchemaNames(ctx context.Context, orgID, prefix string) ([]string, error) {
	var names []string
	if err := s.db.NewSelect().Model((*schemaRow)(nil)).Column("name").
		Where("org_id = ? AND deleted_at IS NULL AND left(name, ?) = ?", orgID, len([]rune(prefix)), prefix).
		Order("name").Scan(ctx, &names); err != nil {
		return nil, fail(err, "schema names")
	}
	return names, nil
}

// FindSchemaByHash returns the oldest live schema with this content hash.
func (s *SchemaStore) FindSchemaByHash(ctx context.Context, orgID, hash string) (*schema.Schema, error) {
	var r schemaRow
	if err := s.db.NewSelect().Model(&r).Where("org_id = ? AND content_hash = ? AND deleted_at IS NULL", orgID, hash).
		Order("created_at", "id").Limit(1).Scan(ctx); err != nil {
		return nil, notFound(err, "find schema by hash")
	}
	return r.schema(), nil
}

// DeleteSchema removes the schema for good.
func (s *SchemaStore) DeleteSchema(ctx context.Context, orgID, id string) error {
	res, err := s.db.NewDelete().Model((*schemaRow)(nil)).Where("id = ? AND org_id = ?", id, orgID).Exec(ctx)
	if err != nil {
		return fail(err, "delete schema "+id)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("postgres: delete schema %s: %w", id, ports.ErrNotFound)
	}
	return nil
}

// UpdateSchema locks the schema's row, calls fn and writes what fn left.
func (s *SchemaStore) UpdateSchema(ctx context.Context, orgID, id string, fn func(*schema.Schema) error) (*schema.Schema, error) {
	var out *schema.Schema
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		var r schemaRow
		if err := tx.NewSelect().Model(&r).Where("id = ? AND org_id = ?", id, orgID).For("UPDATE").Scan(ctx); err != nil {
			return notFound(err, "update schema "+id)
		}
		sc := r.schema()
		if err := fn(sc); err != nil {
			return err
		}
		sc.ID, sc.OrgID, sc.CreatedAt = r.ID, r.OrgID, r.CreatedAt
		nr := schemaToRow(sc)
		if _, err := tx.NewUpdate().Model(&nr).WherePK().Exec(ctx); err != nil {
			return conflict(err, "update schema "+id)
		}
		out = nr.schema()
		return nil
	})
	if err != nil {
		return nil, txErr(err, "update schema "+id)
	}
	return out, nil
}

type recordRow struct {
	bun.BaseModel `bun:"table:records"`

	ID               string          `bun:"id,pk"`
	OrgID            string          `bun:"org_id,notnull"`
	Type             string          `bun:"type,notnull"`
	SchemaID         string          `bun:"schema_id,nullzero"`
	JobID            string          `bun:"job_id,nullzero"`
	Model            string          `bun:"model,notnull"`
	Strategy         string          `bun:"strategy,notnull"`
	EntityData       json.RawMessage `bun:"entity_data"`
	StructuredOutput json.RawMessage `bun:"structured_output"`
	Cost             int64           `bun:"cost,notnull"`
	InputTokens      int             `bun:"input_tokens,notnull"`
	OutputTokens     int             `bun:"output_tokens,notnull"`
	WebSearchCalls   int             `bun:"web_search_calls,notnull"`
	Sandbox          bool            `bun:"sandbox,notnull"`
	CreatedAt        time.Time       `bun:"created_at,notnull"`
	DeletedAt        *time.Time      `bun:"deleted_at"`
	// Fusion is a fused record's provenance, sources, summary and report.
	Fusion json.RawMessage `bun:"fusion,nullzero"`
	// Attachments are the attachments the run read.
	Attachments json.RawMessage `bun:"attachments,nullzero"`
	// SemanticConcepts are the concepts the record's semantic_id
	// properties resolved to.
	SemanticConcepts json.RawMessage `bun:"semantic_concepts,nullzero"`
	// SemanticUnresolved are the semantic_id properties left unresolved.
	SemanticUnresolved json.RawMessage `bun:"semantic_unresolved,nullzero"`
}

func (r *recordRow) record() *enrichment.Record {
	return &enrichment.Record{ID: r.ID, OrgID: r.OrgID, Type: enrichment.RecordType(r.Type), SchemaID: r.SchemaID,
		JobID: r.JobID, Model: r.Model, Strategy: enrichment.Strategy(r.Strategy), EntityData: jsonOrNil(r.EntityData),
		StructuredOutput: jsonOrNil(r.StructuredOutput), Cost: r.Cost, InputTokens: r.InputTokens,
		OutputTokens: r.OutputTokens, WebSearchCalls: r.WebSearchCalls, Sandbox: r.Sandbox, CreatedAt: utc(r.CreatedAt), DeletedAt: utcPtr(r.DeletedAt),
		Fusion: fusionOf(r.Fusion), Attachments: attachmentRefsOf(r.Attachments), SemanticConcepts: conceptRefsOf(r.SemanticConcepts),
		SemanticUnresolved: unresolvedOf(r.SemanticUnresolved)}
}

func attachmentRefsOf(b json.RawMessage) []enrichment.AttachmentRef {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	var refs []enrichment.AttachmentRef
	if json.Unmarshal(b, &refs) != nil {
		return nil
	}
	return refs
}

func attachmentRefsJSON(refs []enrichment.AttachmentRef) json.RawMessage {
	if len(refs) == 0 {
		return nil
	}
	b, _ := json.Marshal(refs)
	return b
}

func fusionOf(b json.RawMessage) *enrichment.Fusion {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	var f enrichment.Fusion
	if json.Unmarshal(b, &f) != nil {
		return nil
	}
	return &f
}

func fusionJSON(f *enrichment.Fusion) json.RawMessage {
	if f == nil {
		return nil
	}
	b, _ := json.Marshal(f)
	return b
}

func recordToRow(rec *enrichment.Record) recordRow {
	return recordRow{ID: rec.ID, OrgID: rec.OrgID, Type: string(rec.Type), SchemaID: rec.SchemaID, JobID: rec.JobID,
		Model: rec.Model, Strategy: string(rec.Strategy), EntityData: jsonOrNil(rec.EntityData),
		StructuredOutput: jsonOrNil(rec.StructuredOutput), Cost: rec.Cost, InputTokens: rec.InputTokens,
		OutputTokens: rec.OutputTokens, WebSearchCalls: rec.WebSearchCalls, Sandbox: rec.Sandbox, CreatedAt: utc(rec.CreatedAt), DeletedAt: utcPtr(rec.DeletedAt),
		Fusion: fusionJSON(rec.Fusion), Attachments: attachmentRefsJSON(rec.Attachments), SemanticConcepts: conceptRefsJSON(rec.SemanticConcepts),
		SemanticUnresolved: unresolvedJSON(rec.SemanticUnresolved)}
}

func conceptRefsOf(b json.RawMessage) []enrichment.SemanticConceptRef {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	var refs []enrichment.SemanticConceptRef
	if json.Unmarshal(b, &refs) != nil {
		return nil
	}
	return refs
}

func conceptRefsJSON(refs []enrichment.SemanticConceptRef) json.RawMessage {
	if len(refs) == 0 {
		return nil
	}
	b, _ := json.Marshal(refs)
	return b
}

func unresolvedOf(b json.RawMessage) []enrichment.SemanticUnresolved {
	if len(b) == 0 || string(b) == "null" {
		return nil
	}
	var us []enrichment.SemanticUnresolved
	if json.Unmarshal(b, &us) != nil {
		return nil
	}
	return us
}

func unresolvedJSON(us []enrichment.SemanticUnresolved) json.RawMessage {
	if len(us) == 0 {
		return nil
	}
	b, _ := json.Marshal(us)
	return b
}

// RecordStore keeps enrichment records in the records table.
type RecordStore struct{ db bun.IDB }

// NewRecordStore returns a RecordStore on db.
func NewRecordStore(db bun.IDB) *RecordStore { return &RecordStore{db: db} }

// CreateRecord inserts rec; an existing id is ErrConflict.
func (s *RecordStore) CreateRecord(ctx context.Context, rec *enrichment.Record) error {
	r := recordToRow(rec)
	if _, err := s.db.NewInsert().Model(&r).Exec(ctx); err != nil {
		return conflict(err, "create record "+rec.ID)
	}
	return nil
}

// GetRecord returns the record id of organization orgID.
//
// Outside a transaction it runs a fixed text straight on pgx (getRecordSQL),
// prepared once per connection: it serves every GET /api/records/{id}, and
// Bun wrote each id into a new text that PostgreSQL parsed and planned again.
func (s *RecordStore) GetRecord(ctx context.Context, orgID, id string) (*enrichment.Record, error) {
	var r recordRow
	var err error
	if db, ok := pool(s.db); ok {
		r, err = getRecord(ctx, db, orgID, id)
	} else {
		q := s.db.NewSelect().Model(&r).Where("id = ? AND deleted_at IS NULL", id)
		err = whereOrg(q, orgID).Scan(ctx)
	}
	if err != nil {
		return nil, notFound(err, "get record "+id)
	}
	return r.record(), nil
}

const getRecordSQL = "SELECT " + recordColumns + " FROM records WHERE id = $1 AND deleted_at IS NULL"

// getRecord runs getRecordSQL, scoped to orgID unless it is ports.AllOrgs,
// on a connection of db. No row is sql.ErrNoRows, as Bun's Scan returns;
// so is an id that no text column could hold (NUL, bytes that are not
// UTF-8), which PostgreSQL would refuse as an error.
func getRecord(ctx context.Context, db *sql.DB, orgID, id string) (recordRow, error) {
	var r recordRow
	if _, ok := text.CheckString(id); !ok {
		return r, sql.ErrNoRows
	}
	q, args := getRecordSQL, []any{id}
	if orgID != ports.AllOrgs {
		q, args = getRecordSQL+" AND org_id = $2", append(args, orgID)
	}
	err := onPgx(ctx, db, func(c *pgx.Conn) error {
		var schemaID, jobID *string
		err := c.QueryRow(ctx, q, args...).Scan(&r.ID, &r.OrgID, &r.Type, &schemaID, &jobID, &r.Model, &r.Strategy,
			&r.EntityData, &r.StructuredOutput, &r.Cost, &r.InputTokens, &r.OutputTokens, &r.WebSearchCalls,
			&r.Sandbox, &r.CreatedAt, &r.DeletedAt, &r.Fusion, &r.Attachments, &r.SemanticConcepts, &r.SemanticUnresolved)
		if errors.Is(err, pgx.ErrNoRows) {
			return sql.ErrNoRows
		}
		if schemaID != nil {
			r.SchemaID = *schemaID
		}
		if jobID != nil {
			r.JobID = *jobID
		}
		return err
	})
	return r, err
}

// ListRecords returns one page of an organization's records that match f,
// newest first.
func (s *RecordStore) ListRecords(ctx context.Context, orgID string, f ports.RecordFilter, p page.Request) (page.Result[*enrichment.Record], error) {
	filter := func(q *bun.SelectQuery) *bun.SelectQuery {
		q = whereOrg(q, orgID)
		if f.Type != "" {
			q = q.Where("type = ?", string(f.Type))
		}
		if f.SchemaID != "" {
			q = q.Where("schema_id = ?", f.SchemaID)
		}
		if f.JobID != "" {
			q = q.Where("job_id = ?", f.JobID)
		}
		if f.Model != "" {
			q = q.Where("model = ?", f.Model)
		}
		if f.CreatedFrom != nil {
			q = q.Where("created_at >= ?", utc(*f.CreatedFrom))
		}
		if f.CreatedBefore != nil {
			q = q.Where("created_at < ?", utc(*f.CreatedBefore))
		}
		if !f.IncludeDeleted {
			q = q.Where("deleted_at IS NULL")
		}
		return q
	}
	var rows []recordRow
	q := filter(s.db.NewSelect().Model(&rows))
	size := keyset(q, p)
	if err := q.Scan(ctx); err != nil {
		return page.Result[*enrichment.Record]{}, fail(err, "list records")
	}
	total, err := filter(s.db.NewSelect().Model((*recordRow)(nil))).Count(ctx)
	if err != nil {
		return page.Result[*enrichment.Record]{}, fail(err, "count records")
	}
	res := page.Result[*enrichment.Record]{Total: int(total)}
	for i := range rows {
		res.Items = append(res.Items, rows[i].record())
	}
	res.Items, res.Next = cut(res.Items, size, func(r *enrichment.Record) (time.Time, string) { return r.CreatedAt, r.ID })
	return res, nil
}

// DeleteRecordsBySchema removes the organization's records of the schema.
func (s *RecordStore) DeleteRecordsBySchema(ctx context.Context, orgID, schemaID string) (int, error) {
	res, err := s.db.NewDelete().Model((*recordRow)(nil)).Where("org_id = ? AND schema_id = ?", orgID, schemaID).Exec(ctx)
	if err != nil {
		return 0, fail(err, "delete records of schema "+schemaID)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fail(err, "delete records of schema "+schemaID)
	}
	return int(n), nil
}

// keyset adds the cursor condition, the newest-first order and a limit of one
// more than the page size (to know whether a next page exists), and returns
// the page size.
func keyset(q *bun.SelectQuery, p page.Request) int {
	size := pageSize(p.Size)
	if p.After != nil {
		q.Where("(created_at, id) < (?, ?)", utc(p.After.CreatedAt), p.After.ID)
	} else if p.Offset > 0 {
		q.Offset(int64(p.Offset))
	}
	q.Order("created_at DESC", "id DESC").Limit(int64(size + 1))
	return size
}

// cut trims a page fetched with keyset to its size and returns the next
// cursor ("" when this was the last page).
func cut[T any](items []T, size int, at func(T) (time.Time, string)) ([]T, string) {
	if len(items) <= size {
		return items, ""
	}
	items = items[:size]
	t, id := at(items[size-1])
	return items, page.Cursor{CreatedAt: t, ID: id}.Encode()
}

// pageSize applies page.ParseRequest's bounds to a size that did not come
// through it.
func pageSize(n int) int {
	switch {
	case n <= 0:
		return page.DefaultSize
	case n > page.MaxSize:
		return page.MaxSize
	}
	return n
}

// jsonOrNil turns an empty document into nil, which is stored as NULL (a
// JSON null stays the text null).
func jsonOrNil(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return b
}

// whereOrg scopes a records query to orgID, or to every organization with
// ports.AllOrgs.
func whereOrg(q *bun.SelectQuery, orgID string) *bun.SelectQuery {
	if orgID == ports.AllOrgs {
		return q
	}
	return q.Where("org_id = ?", orgID)
}

package postgres

import (
	"cmp"
	"context"
	"maps"
	"slices"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/entityenrich/enrich/ports"
)

var _ ports.ConceptLinks = (*ConceptLinks)(nil)

// ConceptLinks keeps the records' uses of concepts in concept_links.
type ConceptLinks struct{ db bun.IDB }

// NewConceptLinks returns the store on db.
func NewConceptLinks(db bun.IDB) *ConceptLinks { return &ConceptLinks{db: db} }

// addLinksSQL upserts links given as parallel arrays, whatever their
// number: a job's end sends it in its batch (endStmts) with the same
// arguments. has_cosine says a row's cosine is set (arrays of nullable
// numbers are not portable between the two drivers).
const addLinksSQL = `INSERT INTO concept_links (org_id, record_id, json_path, concept_id, alias_id, schema_id, cosine, created_at)
	SELECT o, r, p, c, a, s, CASE WHEN h THEN x END, t
	FROM unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::float8[], ?::bool[], ?::timestamptz[])
		AS l(o, r, p, c, a, s, x, h, t)
	ON CONFLICT (record_id, json_path) DO UPDATE SET org_id = excluded.org_id, concept_id = excluded.concept_id,
		alias_id = excluded.alias_id, schema_id = excluded.schema_id, cosine = excluded.cosine, created_at = excluded.created_at`

// addLinksArgs are addLinksSQL's arrays; links PostgreSQL could not store
// (NUL, bytes that are not UTF-8) are left out.
func addLinksArgs(links []ports.ConceptLink) []any {
	n := len(links)
	orgs, recs, paths, cids := make([]string, 0, n), make([]string, 0, n), make([]string, 0, n), make([]string, 0, n)
	aids, sids, cos, has := make([]string, 0, n), make([]string, 0, n), make([]float64, 0, n), make([]bool, 0, n)
	ats := make([]time.Time, 0, n)
	for _, l := range links {
		if !storable(l.OrgID, l.RecordID, l.JSONPath, l.ConceptID, l.AliasID, l.SchemaID) {
			continue
		}
		orgs, recs, paths, cids = append(orgs, l.OrgID), append(recs, l.RecordID), append(paths, l.JSONPath), append(cids, l.ConceptID)
		aids, sids, ats = append(aids, l.AliasID), append(sids, l.SchemaID), append(ats, utc(l.CreatedAt))
		if l.Cosine != nil {
			cos, has = append(cos, *l.Cosine), append(has, true)
		} else {
			cos, has = append(cos, 0), append(has, false)
		}
	}
	return []any{orgs, recs, paths, cids, aids, sids, cos, has, ats}
}

// AddLinks upserts the links.
func (s *ConceptLinks) AddLinks(ctx context.Context, links []ports.ConceptLink) error {
	if len(links) == 0 {
		return nil
	}
	args := addLinksArgs(links)
	for i, a := range args {
		args[i] = pgdialect.Array(a)
	}
	_, err := s.db.NewRaw(addLinksSQL, args...).Exec(ctx)
	return maybeFail(err, "add concept links")
}

type linkRow struct {
	bun.BaseModel `bun:"table:concept_links,alias:l"`

	OrgID     string    `bun:"org_id,notnull"`
	RecordID  string    `bun:"record_id,pk"`
	JSONPath  string    `bun:"json_path,pk"`
	ConceptID string    `bun:"concept_id,notnull"`
	AliasID   string    `bun:"alias_id,notnull"`
	SchemaID  string    `bun:"schema_id,notnull"`
	Cosine    *float64  `bun:"cosine"`
	CreatedAt time.Time `bun:"created_at,notnull"`
}

// LinksOf returns the concept's newest links.
func (s *ConceptLinks) LinksOf(ctx context.Context, orgID, conceptID string, limit int) ([]ports.ConceptLink, error) {
	if limit < 1 || !storable(orgID, conceptID) {
		return nil, nil
	}
	var rows []linkRow
	err := s.db.NewSelect().Model(&rows).Where("org_id = ? AND concept_id = ?", orgID, conceptID).
		OrderExpr("created_at DESC, record_id COLLATE \"C\", json_path COLLATE \"C\"").Limit(int64(limit)).Scan(ctx)
	if err != nil {
		return nil, fail(err, "list concept links")
	}
	out := make([]ports.ConceptLink, 0, len(rows))
	for _, r := range rows {
		out = append(out, ports.ConceptLink{OrgID: r.OrgID, ConceptID: r.ConceptID, AliasID: r.AliasID, RecordID: r.RecordID,
			SchemaID: r.SchemaID, JSONPath: r.JSONPath, Cosine: r.Cosine, CreatedAt: utc(r.CreatedAt)})
	}
	return out, nil
}

// UseOf counts the concepts' links and the schemas of their records.
func (s *ConceptLinks) UseOf(ctx context.Context, orgID string, conceptIDs []string) (ports.ConceptUse, error) {
	var use ports.ConceptUse
	ids := storableOnly(conceptIDs)
	if len(ids) == 0 || !storable(orgID) {
		return use, nil
	}
	var schemas []string
	err := s.db.NewRaw(`SELECT count(*), coalesce(array_agg(DISTINCT schema_id) FILTER (WHERE schema_id <> ''), '{}')
		FROM concept_links WHERE org_id = ? AND concept_id = ANY(?::text[])`, orgID, pgdialect.Array(ids)).
		Scan(ctx, &use.RecordLinks, pgdialect.Array(&schemas))
	if err != nil {
		return use, fail(err, "count concept links")
	}
	slices.Sort(schemas)
	use.SchemaIDs = schemas
	if len(use.SchemaIDs) == 0 {
		use.SchemaIDs = nil
	}
	return use, nil
}

// RepointLinks moves the links of from to to.
func (s *ConceptLinks) RepointLinks(ctx context.Context, orgID, from, to string) (int, error) {
	if !storable(orgID, from, to) {
		return 0, nil
	}
	res, err := s.db.NewRaw(`UPDATE concept_links SET concept_id = ? WHERE org_id = ? AND concept_id = ?`, to, orgID, from).Exec(ctx)
	if err != nil {
		return 0, fail(err, "repoint concept links")
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// DeleteLinks removes the concepts' links.
func (s *ConceptLinks) DeleteLinks(ctx context.Context, orgID string, conceptIDs []string) (int, error) {
	ids := storableOnly(conceptIDs)
	if len(ids) == 0 || !storable(orgID) {
		return 0, nil
	}
	res, err := s.db.NewRaw(`DELETE FROM concept_links WHERE org_id = ? AND concept_id = ANY(?::text[])`, orgID, pgdialect.Array(ids)).Exec(ctx)
	if err != nil {
		return 0, fail(err, "delete concept links")
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// The statements of a job's end that write its records' concept links
// and bump the reference counts, in pgx's placeholder form.
var (
	addLinksEndSQL = dollars(addLinksSQL)
	// The rows are updated in id order, as every end does, so that two
	// ends bumping the same concepts wait for each other, never deadlock.
	bumpConceptsEndSQL = `UPDATE semantic_concepts c SET ref_count = greatest(0, c.ref_count + b.delta)
		FROM unnest($1::text[], $2::bigint[]) AS b(id, delta) WHERE c.id = b.id AND c.org_id = $3`
	bumpAliasesEndSQL = `UPDATE concept_aliases a SET ref_count = greatest(0, a.ref_count + b.delta)
		FROM unnest($1::text[], $2::text[], $3::bigint[]) AS b(concept_id, id, delta)
		WHERE a.id = b.id AND a.concept_id = b.concept_id AND a.org_id = $4`
)

// conceptEndStmts are the statements that store w with a job's end in
// organization orgID.
func conceptEndStmts(orgID string, w ports.ConceptWrites) []endStmt {
	var stmts []endStmt
	if len(w.Links) > 0 {
		stmts = append(stmts, endStmt{addLinksEndSQL, addLinksArgs(w.Links)})
	}
	concepts, aliases := ports.SumRefBumps(w.Bumps)
	if len(concepts) == 0 || !storable(orgID) {
		return stmts
	}
	ids := slices.Sorted(maps.Keys(concepts))
	ids = storableOnly(ids)
	deltas := make([]int64, len(ids))
	for i, id := range ids {
		deltas[i] = int64(concepts[id])
	}
	stmts = append(stmts, endStmt{bumpConceptsEndSQL, []any{ids, deltas, orgID}})
	keys := slices.SortedFunc(maps.Keys(aliases), func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	var cids, aids []string
	var adeltas []int64
	for _, k := range keys {
		if storable(k[0], k[1]) {
			cids, aids, adeltas = append(cids, k[0]), append(aids, k[1]), append(adeltas, int64(aliases[k]))
		}
	}
	if len(cids) > 0 {
		stmts = append(stmts, endStmt{bumpAliasesEndSQL, []any{cids, aids, adeltas, orgID}})
	}
	return stmts
}

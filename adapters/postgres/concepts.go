package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/entityenrich/enrich/domain/concept"
	"github.com/entityenrich/enrich/domain/text"
	"github.com/entityenrich/enrich/ports"
)

var _ ports.ConceptStore = (*ConceptStore)(nil)

// ConceptStore keeps the vocabulary in semantic_concepts and
// concept_aliases; CreateConcept writes the first vector into
// concept_embeddings, which ExactVectorIndex reads.
type ConceptStore struct{ db bun.IDB }

// NewConceptStore returns the store on db.
func NewConceptStore(db bun.IDB) *ConceptStore { return &ConceptStore{db: db} }

type conceptRow struct {
	bun.BaseModel `bun:"table:semantic_concepts,alias:c"`

	ID             string    `bun:"id,pk"`
	OrgID          string    `bun:"org_id,notnull"`
	Type           string    `bun:"concept_type,notnull"`
	CanonicalText  string    `bun:"canonical_text,notnull"`
	NormalizedText string    `bun:"normalized_text,notnull"`
	RefCount       int       `bun:"ref_count,notnull"`
	EmbeddingModel string    `bun:"embedding_model,notnull"`
	Dims           int       `bun:"dims,notnull"`
	CreatedAt      time.Time `bun:"created_at,notnull"`
}

type aliasRow struct {
	bun.BaseModel `bun:"table:concept_aliases,alias:a"`

	ID             string    `bun:"id,pk"`
	OrgID          string    `bun:"org_id,notnull"`
	ConceptID      string    `bun:"concept_id,notnull"`
	Type           string    `bun:"concept_type,notnull"`
	Text           string    `bun:"text,notnull"`
	NormalizedText string    `bun:"normalized_text,notnull"`
	IsCanonical    bool      `bun:"is_canonical,notnull"`
	RefCount       int       `bun:"ref_count,notnull"`
	Origin         string    `bun:"origin,notnull"`
	CreatedAt      time.Time `bun:"created_at,notnull"`
}

type embeddingRow struct {
	bun.BaseModel `bun:"table:concept_embeddings,alias:e"`

	OrgID          string    `bun:"org_id,pk"`
	Type           string    `bun:"concept_type,pk"`
	EmbeddingModel string    `bun:"embedding_model,pk"`
	ConceptID      string    `bun:"concept_id,pk"`
	Dims           int       `bun:"dims,notnull"`
	Vector         []float32 `bun:"vector,array,notnull"`
}

func (r *conceptRow) concept(aliases []aliasRow) *concept.Concept {
	c := &concept.Concept{ID: r.ID, OrgID: r.OrgID, Type: r.Type, CanonicalText: r.CanonicalText, NormalizedText: r.NormalizedText,
		RefCount: r.RefCount, EmbeddingModel: r.EmbeddingModel, Dims: r.Dims, CreatedAt: utc(r.CreatedAt),
		Aliases: make([]concept.Alias, 0, len(aliases))}
	for _, a := range aliases {
		c.Aliases = append(c.Aliases, concept.Alias{ID: a.ID, Text: a.Text, NormalizedText: a.NormalizedText, IsCanonical: a.IsCanonical,
			RefCount: a.RefCount, Origin: concept.Origin(a.Origin), CreatedAt: utc(a.CreatedAt)})
	}
	return c
}

// storable reports whether every s can be compared with a text column: a
// string PostgreSQL would refuse (NUL, bytes that are not UTF-8) matches
// no row.
func storable(ss ...string) bool {
	for _, s := range ss {
		if _, ok := text.CheckString(s); !ok {
			return false
		}
	}
	return true
}

// storableOnly is ss without the strings storable refuses.
func storableOnly(ss []string) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if storable(s) {
			out = append(out, s)
		}
	}
	return out
}

// narrowed is each of lists without the strings storable refuses, and
// false when a query filtered by them can match nothing: the organization
// is not storable, or a list that named something names nothing storable
// (what no text column holds matches nothing, and an emptied list must not
// widen the selection to everything).
func narrowed(orgID string, lists ...[]string) ([][]string, bool) {
	if !storable(orgID) {
		return nil, false
	}
	out := make([][]string, len(lists))
	for i, l := range lists {
		out[i] = storableOnly(l)
		if len(l) > 0 && len(out[i]) == 0 {
			return nil, false
		}
	}
	return out, true
}

func errNoConcept(id string) error {
	return fmt.Errorf("postgres: concept %s: %w", id, ports.ErrNotFound)
}

// CreateConcept inserts the concept, its canonical alias and its vector in
// one transaction; the alias's unique index refuses a text the type holds.
func (s *ConceptStore) CreateConcept(ctx context.Context, n ports.NewConcept) (*concept.Concept, error) {
	norm, err := ports.ConceptText(n.Text)
	if err != nil {
		return nil, err
	}
	if len(n.Vector) > 0 {
		if err := ports.CheckVector(n.Vector); err != nil {
			return nil, err
		}
	}
	at := utc(n.CreatedAt)
	row := &conceptRow{ID: n.ID, OrgID: n.OrgID, Type: n.Type, CanonicalText: n.Text, NormalizedText: norm,
		EmbeddingModel: n.EmbeddingModel, Dims: len(n.Vector), CreatedAt: at}
	alias := aliasRow{ID: n.AliasID, OrgID: n.OrgID, ConceptID: n.ID, Type: n.Type, Text: n.Text, NormalizedText: norm,
		IsCanonical: true, Origin: string(n.Origin), CreatedAt: at}
	err = inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
			return conflict(err, "create concept "+n.ID)
		}
		if _, err := tx.NewInsert().Model(&alias).Exec(ctx); err != nil {
			return conflict(err, "create concept "+n.ID+": text "+norm)
		}
		if len(n.Vector) == 0 {
			return nil
		}
		e := &embeddingRow{OrgID: n.OrgID, Type: n.Type, EmbeddingModel: n.EmbeddingModel, ConceptID: n.ID, Dims: len(n.Vector), Vector: n.Vector}
		if _, err := tx.NewInsert().Model(e).Exec(ctx); err != nil {
			return fail(err, "create concept "+n.ID+": embedding")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return row.concept([]aliasRow{alias}), nil
}

// GetConcept implements ports.ConceptStore.
func (s *ConceptStore) GetConcept(ctx context.Context, orgID, id string) (*concept.Concept, error) {
	return getConcept(ctx, s.db, orgID, id, false)
}

// getConcept reads the concept and its aliases; lock takes the concept's
// row until the end of the transaction db is.
func getConcept(ctx context.Context, db bun.IDB, orgID, id string, lock bool) (*concept.Concept, error) {
	if !storable(orgID, id) {
		return nil, errNoConcept(id)
	}
	var row conceptRow
	q := db.NewSelect().Model(&row).Where("id = ? AND org_id = ?", id, orgID)
	if lock {
		q.For("UPDATE")
	}
	if err := q.Scan(ctx); err != nil {
		return nil, notFound(err, "get concept "+id)
	}
	aliases, err := aliasesOf(ctx, db, []string{id})
	if err != nil {
		return nil, err
	}
	return row.concept(aliases[id]), nil
}

// aliasesOf reads the aliases of the concepts ids, oldest first (ties by
// id), in one query.
func aliasesOf(ctx context.Context, db bun.IDB, ids []string) (map[string][]aliasRow, error) {
	out := make(map[string][]aliasRow, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	var rows []aliasRow
	err := db.NewSelect().Model(&rows).Where("concept_id IN (?)", bun.In(ids)).
		OrderExpr(`created_at, id COLLATE "C"`).Scan(ctx)
	if err != nil {
		return nil, fail(err, "read concept aliases")
	}
	for _, r := range rows {
		out[r.ConceptID] = append(out[r.ConceptID], r)
	}
	return out, nil
}

// FindExact reads the alias by the unique index on (organization, type,
// normalized text).
func (s *ConceptStore) FindExact(ctx context.Context, orgID, conceptType, txt string) (*concept.Neighbor, error) {
	norm := concept.Normalize(txt)
	if !storable(orgID, conceptType) {
		return nil, fmt.Errorf("postgres: find concept text %q: %w", norm, ports.ErrNotFound)
	}
	var n concept.Neighbor
	// Every text is a new statement once Bun has written it in: the
	// simple protocol sends it in one message, unprepared.
	q := s.db.NewRaw(`SELECT c.id, a.id, a.text, c.canonical_text, a.is_canonical, c.ref_count
		FROM concept_aliases a JOIN semantic_concepts c ON c.id = a.concept_id
		WHERE a.org_id = ? AND a.concept_type = ? AND a.normalized_text = ?`, orgID, conceptType, norm)
	err := scanRowSimple(ctx, s.db, q, &n.ConceptID, &n.AliasID, &n.Text, &n.CanonicalText, &n.IsCanonical, &n.RefCount)
	if err != nil {
		return nil, notFound(err, fmt.Sprintf("find concept text %q", norm))
	}
	n.Similarity = 1
	return &n, nil
}

// conceptOrder is the ORDER BY of a listing: byte-wise, as the memory
// store compares, whatever the database's collation.
func conceptOrder(f ports.ConceptFilter) string {
	dir := " ASC"
	if f.Descending {
		dir = " DESC"
	}
	col := "c.created_at"
	switch f.Sort {
	case ports.SortConceptRefCount:
		col = "c.ref_count"
	case ports.SortConceptText:
		col = `c.normalized_text COLLATE "C"`
	}
	return col + dir + `, c.id COLLATE "C"` + dir
}

// ListConcepts counts the matches, reads one page and then its aliases.
func (s *ConceptStore) ListConcepts(ctx context.Context, orgID string, f ports.ConceptFilter) ([]*concept.Concept, int, error) {
	lists, ok := narrowed(orgID, f.Types)
	if !ok {
		return nil, 0, nil
	}
	types := lists[0]
	var rows []conceptRow
	q := s.db.NewSelect().Model(&rows).Where("c.org_id = ?", orgID)
	if len(types) > 0 {
		q.Where("c.concept_type IN (?)", bun.In(types))
	}
	if f.MinRefCount > 0 {
		q.Where("c.ref_count >= ?", f.MinRefCount)
	}
	if f.CreatedAfter != nil {
		q.Where("c.created_at > ?", utc(*f.CreatedAfter))
	}
	if f.CreatedBefore != nil {
		q.Where("c.created_at < ?", utc(*f.CreatedBefore))
	}
	if search := concept.Normalize(f.Search); search != "" {
		// strpos, not LIKE: the search is a plain substring, % and _
		// included.
		q.Where("EXISTS (SELECT 1 FROM concept_aliases a WHERE a.concept_id = c.id AND strpos(a.normalized_text, ?) > 0)", search)
	}
	total, err := q.Count(ctx)
	if err != nil {
		return nil, 0, fail(err, "count concepts")
	}
	err = q.OrderExpr(conceptOrder(f)).Limit(int64(pageSize(f.Limit))).Offset(int64(max(f.Offset, 0))).Scan(ctx)
	if err != nil {
		return nil, 0, fail(err, "list concepts")
	}
	ids := make([]string, 0, len(rows))
	for _, r := range rows {
		ids = append(ids, r.ID)
	}
	aliases, err := aliasesOf(ctx, s.db, ids)
	if err != nil {
		return nil, 0, err
	}
	out := make([]*concept.Concept, 0, len(rows))
	for i := range rows {
		out = append(out, rows[i].concept(aliases[rows[i].ID]))
	}
	return out, int(total), nil
}

// AddAlias locks the concept, then inserts the alias; the unique index
// refuses a text the type holds.
func (s *ConceptStore) AddAlias(ctx context.Context, orgID, conceptID string, a ports.NewAlias) (*concept.Concept, error) {
	norm, err := ports.ConceptText(a.Text)
	if err != nil {
		return nil, err
	}
	var out *concept.Concept
	err = inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		c, err := getConcept(ctx, tx, orgID, conceptID, true)
		if err != nil {
			return err
		}
		row := &aliasRow{ID: a.ID, OrgID: orgID, ConceptID: conceptID, Type: c.Type, Text: a.Text, NormalizedText: norm,
			Origin: string(a.Origin), CreatedAt: utc(a.CreatedAt)}
		if _, err := tx.NewInsert().Model(row).Exec(ctx); err != nil {
			return conflict(err, fmt.Sprintf("add alias %q to concept %s", norm, conceptID))
		}
		out, err = getConcept(ctx, tx, orgID, conceptID, false)
		return err
	})
	return out, err
}

// RemoveAlias implements ports.ConceptStore.
func (s *ConceptStore) RemoveAlias(ctx context.Context, orgID, conceptID, aliasID string) (*concept.Concept, error) {
	return s.applyAlias(ctx, orgID, conceptID, aliasID, concept.RemoveAlias)
}

// PromoteAlias implements ports.ConceptStore.
func (s *ConceptStore) PromoteAlias(ctx context.Context, orgID, conceptID, aliasID string) (*concept.Concept, error) {
	return s.applyAlias(ctx, orgID, conceptID, aliasID, concept.PromoteAlias)
}

// applyAlias locks the concept, lets rule decide, and writes the
// difference: the aliases rule dropped, the canonical mark, the canonical
// text.
func (s *ConceptStore) applyAlias(ctx context.Context, orgID, conceptID, aliasID string,
	rule func(concept.Concept, string) (concept.Concept, error)) (*concept.Concept, error) {
	var out concept.Concept
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		c, err := getConcept(ctx, tx, orgID, conceptID, true)
		if err != nil {
			return err
		}
		if out, err = rule(*c, aliasID); err != nil {
			if errors.Is(err, concept.ErrAliasNotFound) {
				return fmt.Errorf("postgres: concept %s alias %s: %w: %w", conceptID, aliasID, err, ports.ErrNotFound)
			}
			return fmt.Errorf("postgres: concept %s alias %s: %w", conceptID, aliasID, err)
		}
		return writeAliases(ctx, tx, *c, out)
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// writeAliases stores next over was: the canonical mark is cleared before
// it is set, since the partial unique index allows one per concept at
// every row.
func writeAliases(ctx context.Context, tx bun.Tx, was, next concept.Concept) error {
	var gone []string
	for _, a := range was.Aliases {
		if !slices.ContainsFunc(next.Aliases, func(b concept.Alias) bool { return b.ID == a.ID }) {
			gone = append(gone, a.ID)
		}
	}
	if len(gone) > 0 {
		if _, err := tx.NewDelete().Model((*aliasRow)(nil)).Where("id IN (?)", bun.In(gone)).Exec(ctx); err != nil {
			return fail(err, "remove concept alias")
		}
	}
	canonical, _ := next.Canonical()
	if _, err := tx.NewUpdate().Model((*aliasRow)(nil)).Set("is_canonical = false").
		Where("concept_id = ? AND is_canonical AND id <> ?", next.ID, canonical.ID).Exec(ctx); err != nil {
		return fail(err, "demote concept alias")
	}
	if _, err := tx.NewUpdate().Model((*aliasRow)(nil)).Set("is_canonical = true").Where("id = ?", canonical.ID).Exec(ctx); err != nil {
		return fail(err, "promote concept alias")
	}
	_, err := tx.NewUpdate().Model((*conceptRow)(nil)).Set("canonical_text = ?, normalized_text = ?", next.CanonicalText, next.NormalizedText).
		Where("id = ?", next.ID).Exec(ctx)
	return maybeFail(err, "update canonical text")
}

// maybeFail is fail that keeps a nil error nil.
func maybeFail(err error, what string) error {
	if err == nil {
		return nil
	}
	return fail(err, what)
}

// BumpRefCounts sums the bumps per concept and per alias, then updates
// each table in one statement.
func (s *ConceptStore) BumpRefCounts(ctx context.Context, orgID string, bumps []ports.RefBump) error {
	concepts, aliases := ports.SumRefBumps(bumps)
	if len(concepts) == 0 || !storable(orgID) {
		return nil
	}
	return inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		ids, deltas := splitDeltas(concepts)
		if _, err := tx.NewRaw(`UPDATE semantic_concepts c SET ref_count = greatest(0, c.ref_count + b.delta)
			FROM unnest(?::text[], ?::bigint[]) AS b(id, delta) WHERE c.id = b.id AND c.org_id = ?`,
			pgdialect.Array(ids), pgdialect.Array(deltas), orgID).Exec(ctx); err != nil {
			return fail(err, "bump concept ref counts")
		}
		if len(aliases) == 0 {
			return nil
		}
		keys, adeltas := make([]string, 0, len(aliases)), make([]int64, 0, len(aliases))
		cids := make([]string, 0, len(aliases))
		for k, d := range aliases {
			cids, keys, adeltas = append(cids, k[0]), append(keys, k[1]), append(adeltas, int64(d))
		}
		_, err := tx.NewRaw(`UPDATE concept_aliases a SET ref_count = greatest(0, a.ref_count + b.delta)
			FROM unnest(?::text[], ?::text[], ?::bigint[]) AS b(concept_id, id, delta)
			WHERE a.id = b.id AND a.concept_id = b.concept_id AND a.org_id = ?`,
			pgdialect.Array(cids), pgdialect.Array(keys), pgdialect.Array(adeltas), orgID).Exec(ctx)
		return maybeFail(err, "bump alias ref counts")
	})
}

func splitDeltas(m map[string]int) ([]string, []int64) {
	ids, deltas := make([]string, 0, len(m)), make([]int64, 0, len(m))
	for id, d := range m {
		ids, deltas = append(ids, id), append(deltas, int64(d))
	}
	return ids, deltas
}

// ConceptTypes groups the organization's concepts by slice.
func (s *ConceptStore) ConceptTypes(ctx context.Context, orgID string) ([]ports.ConceptTypeInfo, error) {
	var out []ports.ConceptTypeInfo
	rows, err := s.db.QueryContext(ctx, `SELECT concept_type, embedding_model, max(dims), count(*), count(*) FILTER (WHERE ref_count = 0)
		FROM semantic_concepts WHERE org_id = ? GROUP BY concept_type, embedding_model ORDER BY concept_type COLLATE "C", embedding_model COLLATE "C"`, orgID)
	if err != nil {
		return nil, fail(err, "list concept types")
	}
	defer rows.Close()
	for rows.Next() {
		var f ports.ConceptTypeInfo
		if err := rows.Scan(&f.Type, &f.EmbeddingModel, &f.Dims, &f.ConceptCount, &f.UnusedCount); err != nil {
			return nil, fail(err, "read concept types")
		}
		out = append(out, f)
	}
	return out, maybeFail(rows.Err(), "read concept types")
}

// DeleteConcepts deletes the selected rows; aliases and vectors go with
// them (ON DELETE CASCADE).
func (s *ConceptStore) DeleteConcepts(ctx context.Context, orgID string, sel ports.ConceptSelection) ([]string, error) {
	if len(sel.IDs) == 0 && len(sel.Types) == 0 {
		return nil, fmt.Errorf("postgres: delete concepts: %w: name ids or types", ports.ErrInvalid)
	}
	lists, ok := narrowed(orgID, sel.IDs, sel.Types)
	if !ok {
		return nil, nil
	}
	sel.IDs, sel.Types = lists[0], lists[1]
	q := s.db.NewDelete().Model((*conceptRow)(nil)).Where("org_id = ?", orgID)
	if len(sel.IDs) > 0 {
		q.Where("id IN (?)", bun.In(sel.IDs))
	}
	if len(sel.Types) > 0 {
		q.Where("concept_type IN (?)", bun.In(sel.Types))
	}
	if sel.UnusedOnly {
		q.Where("ref_count = 0")
	}
	var gone []string
	if err := q.Returning("id").Scan(ctx, &gone); err != nil {
		return nil, fail(err, "delete concepts")
	}
	slices.Sort(gone)
	return gone, nil
}

// MergeConcepts locks both concepts (in id order, as every merge does, so
// two merges of one pair wait rather than deadlock), lets concept.Merge
// decide, and writes it: the moved aliases change concept, the winner
// takes the counts, and deleting the loser takes its vectors and its
// dropped aliases (ON DELETE CASCADE).
func (s *ConceptStore) MergeConcepts(ctx context.Context, orgID, winnerID, loserID string) (ports.MergedConcept, error) {
	var out ports.MergedConcept
	err := inTx(ctx, s.db, func(ctx context.Context, tx bun.Tx) error {
		got := map[string]*concept.Concept{}
		for _, id := range sortedPair(winnerID, loserID) {
			c, err := getConcept(ctx, tx, orgID, id, true)
			if err != nil {
				return err
			}
			got[id] = c
		}
		merged, moved, err := concept.Merge(*got[winnerID], *got[loserID])
		if err != nil {
			return ports.MergeErr(err)
		}
		if len(moved) > 0 {
			ids := make([]string, 0, len(moved))
			for _, a := range moved {
				ids = append(ids, a.ID)
			}
			if _, err := tx.NewUpdate().Model((*aliasRow)(nil)).Set("concept_id = ?, is_canonical = false, origin = ?", winnerID, string(concept.OriginMerge)).
				Where("id IN (?) AND concept_id = ?", bun.In(ids), loserID).Exec(ctx); err != nil {
				return conflict(err, "move merged aliases")
			}
		}
		if _, err := tx.NewUpdate().Model((*conceptRow)(nil)).Set("ref_count = ?", merged.RefCount).Where("id = ?", winnerID).Exec(ctx); err != nil {
			return fail(err, "merge concept ref counts")
		}
		if _, err := tx.NewDelete().Model((*conceptRow)(nil)).Where("id = ? AND org_id = ?", loserID, orgID).Exec(ctx); err != nil {
			return fail(err, "delete merged concept")
		}
		w, err := getConcept(ctx, tx, orgID, winnerID, false)
		out = ports.MergedConcept{Winner: w, AliasesMoved: len(moved)}
		return err
	})
	return out, err
}

func sortedPair(a, b string) []string {
	if b < a {
		return []string{b, a}
	}
	return []string{a, b}
}

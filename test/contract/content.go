package contract

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/fusion"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
)

const schemaDoc = `{"type": "object", "title": "Company",
  "properties": {"name": {"type": "string"}, "founded": {"type": "integer"}, "revenue": {"type": "number", "expertise": "finance"}},
  "x-expertiseDomains": {"finance": {"name": "Finance"}}}`

func newSchema(orgID string, n int) *schema.Schema {
	id := newID("sch")
	return &schema.Schema{ID: id, OrgID: orgID, Name: "schema " + id, Description: "described",
		Content: json.RawMessage(schemaDoc), CreatedAt: at(n), UpdatedAt: at(n + 1)}
}

func checkSchema(t *testing.T, got, want *schema.Schema) {
	t.Helper()
	is := is.NewRelaxed(t)
	is.Equal(got.ID, want.ID)
	is.Equal(got.OrgID, want.OrgID)
	is.Equal(got.Name, want.Name)
	is.Equal(got.Description, want.Description)
	sameJSON(t, "Content", got.Content, want.Content)
	is.Equal(got.Linked, want.Linked)
	sameTime(t, "CreatedAt", got.CreatedAt, want.CreatedAt)
	sameTime(t, "UpdatedAt", got.UpdatedAt, want.UpdatedAt)
}

// paginated is a listing of seven items of one organization, among items of
// another, where pairs share a creation time so that the id breaks the tie.
type paginated struct {
	create func(t *testing.T, orgID string, n int) (id string, created time.Time)
	list   func(orgID string, p page.Request) ([]string, string, error)
}

func (p paginated) run(t *testing.T) {
	is := is.New(t)
	org, other := newID("org"), newID("org")
	type item struct {
		id string
		at time.Time
	}
	var want []item
	for i := 0; i < 7; i++ {
		id, created := p.create(t, org, i/2) // 0 0 1 1 2 2 3
		want = append(want, item{id, created})
		p.create(t, other, i)
	}
	sort.Slice(want, func(i, j int) bool { return newestFirst(want[i].at, want[i].id, want[j].at, want[j].id) })
	var wantIDs []string
	for _, it := range want {
		wantIDs = append(wantIDs, it.id)
	}
	list := func(r page.Request) (page.Result[string], error) {
		ids, next, err := p.list(org, r)
		return page.Result[string]{Items: ids, Next: next}, err
	}

	for _, tt := range []struct {
		size  int
		sizes []int
	}{
		{3, []int{3, 3, 1}},
		{7, []int{7}},
		{1, []int{1, 1, 1, 1, 1, 1, 1}},
		{50, []int{7}},
	} {
		pp := pages(t, tt.size, list)
		is.Equal(sizes(pp), tt.sizes) // page sizes
		var got []string
		for _, p := range pp {
			got = append(got, p...)
		}
		is.Equal(got, wantIDs) // every item once, newest first, ties by id descending
	}

	ids, next, err := p.list(newID("org"), page.Request{Size: 3})
	is.NoErr(err)
	is.Equal(len(ids), 0) // an organization without items
	is.Equal(next, "")
}

// RunSchemaStore runs the SchemaStore contract against the stores newStore
// returns.
func RunSchemaStore(t *testing.T, newStore func(t *testing.T) ports.SchemaStore) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, s ports.SchemaStore)
	}{
		{"create and get round trip", func(t *testing.T, s ports.SchemaStore) {
			is := is.New(t)
			sc := newSchema(newID("org"), 0)
			sc.Linked = true
			want := *sc
			want.Content = append(json.RawMessage(nil), sc.Content...)
			is.NoErr(s.CreateSchema(ctx, sc))
			sc.Content[0] = ' ' // the store keeps its own copy
			got, err := s.GetSchema(ctx, sc.OrgID, sc.ID)
			is.NoErr(err)
			checkSchema(t, got, &want)
			got.Content[0] = ' ' // and hands out copies
			again, err := s.GetSchema(ctx, sc.OrgID, sc.ID)
			is.NoErr(err)
			checkSchema(t, again, &want)
		}},
		{"unknown id and another organization's schema are not found", func(t *testing.T, s ports.SchemaStore) {
			is := is.New(t)
			sc := newSchema(newID("org"), 0)
			is.NoErr(s.CreateSchema(ctx, sc))
			_, err := s.GetSchema(ctx, sc.OrgID, newID("sch"))
			is.True(errors.Is(err, ports.ErrNotFound))
			_, err = s.GetSchema(ctx, newID("org"), sc.ID)
			is.True(errors.Is(err, ports.ErrNotFound))
		}},
		{"duplicate id is a conflict", func(t *testing.T, s ports.SchemaStore) {
			is := is.New(t)
			sc := newSchema(newID("org"), 0)
			is.NoErr(s.CreateSchema(ctx, sc))
			dup := newSchema(sc.OrgID, 1)
			dup.ID = sc.ID
			is.True(errors.Is(s.CreateSchema(ctx, dup), ports.ErrConflict))
		}},
		{"list pages newest first", func(t *testing.T, s ports.SchemaStore) {
			paginated{
				create: func(t *testing.T, orgID string, n int) (string, time.Time) {
					sc := newSchema(orgID, n)
					is.New(t).NoErr(s.CreateSchema(ctx, sc))
					return sc.ID, sc.CreatedAt
				},
				list: func(orgID string, p page.Request) ([]string, string, error) {
					res, err := s.ListSchemas(ctx, orgID, p)
					var ids []string
					for _, sc := range res.Items {
						ids = append(ids, sc.ID)
					}
					return ids, res.Next, err
				},
			}.run(t)
		}},
		{"listed schemas carry every field", func(t *testing.T, s ports.SchemaStore) {
			is := is.New(t)
			sc := newSchema(newID("org"), 0)
			is.NoErr(s.CreateSchema(ctx, sc))
			res, err := s.ListSchemas(ctx, sc.OrgID, page.Request{Size: 10})
			is.NoErr(err)
			is.Equal(len(res.Items), 1)
			is.Equal(res.Total, 1)
			checkSchema(t, res.Items[0], sc)
		}},
		{"update writes what fn left, keeps id, organization and creation time", func(t *testing.T, s ports.SchemaStore) {
			is := is.New(t)
			sc := newSchema(newID("org"), 0)
			is.NoErr(s.CreateSchema(ctx, sc))
			got, err := s.UpdateSchema(ctx, sc.OrgID, sc.ID, func(c *schema.Schema) error {
				c.Name, c.Description, c.Linked = "renamed", "new words", true
				c.Content = json.RawMessage(`{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"number"}}}`)
				c.UpdatedAt = at(7)
				c.ID, c.OrgID, c.CreatedAt = "other", "other", at(9)
				return nil
			})
			is.NoErr(err)
			want := *sc
			want.Name, want.Description, want.Linked, want.UpdatedAt = "renamed", "new words", true, at(7)
			want.Content = json.RawMessage(`{"type":"object","properties":{"b":{"type":"string"},"a":{"type":"number"}}}`)
			checkSchema(t, got, &want)
			again, err := s.GetSchema(ctx, sc.OrgID, sc.ID)
			is.NoErr(err)
			checkSchema(t, again, &want)
		}},
		{"update's error writes nothing; unknown and foreign ids are not found", func(t *testing.T, s ports.SchemaStore) {
			is := is.New(t)
			sc := newSchema(newID("org"), 0)
			is.NoErr(s.CreateSchema(ctx, sc))
			boom := errors.New("boom")
			_, err := s.UpdateSchema(ctx, sc.OrgID, sc.ID, func(c *schema.Schema) error { c.Name = "lost"; return boom })
			is.Equal(err, boom)
			again, err := s.GetSchema(ctx, sc.OrgID, sc.ID)
			is.NoErr(err)
			checkSchema(t, again, sc)
			_, err = s.UpdateSchema(ctx, newID("org"), sc.ID, func(*schema.Schema) error { return nil })
			is.True(errors.Is(err, ports.ErrNotFound))
			_, err = s.UpdateSchema(ctx, sc.OrgID, newID("sch"), func(*schema.Schema) error { return nil })
			is.True(errors.Is(err, ports.ErrNotFound))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newStore(t)) })
	}
}

func newRecord(orgID string, n int) *enrichment.Record {
	return &enrichment.Record{ID: newID("rec"), OrgID: orgID, Type: enrichment.RecordEnrichment, SchemaID: newID("sch"),
		JobID: newID("job"), Model: "sandbox::echo", Strategy: enrichment.MultiExpertise,
		EntityData:       json.RawMessage(`{"name": "Acme", "website": "https://acme.example", "tags": ["a", "b"]}`),
		StructuredOutput: json.RawMessage(`{"name": "Acme", "founded": 1999, "revenue": 12.5, "headquarters": {"city": "Lyon"}}`),
		Cost:             1234567, InputTokens: 321, OutputTokens: 123, WebSearchCalls: 3, Sandbox: true, CreatedAt: at(n)}
}

func checkRecord(t *testing.T, got, want *enrichment.Record) {
	t.Helper()
	is := is.NewRelaxed(t)
	is.Equal(got.ID, want.ID)
	is.Equal(got.OrgID, want.OrgID)
	is.Equal(got.Type, want.Type)
	is.Equal(got.SchemaID, want.SchemaID)
	is.Equal(got.JobID, want.JobID)
	is.Equal(got.Model, want.Model)
	is.Equal(got.Strategy, want.Strategy)
	sameJSON(t, "EntityData", got.EntityData, want.EntityData)
	sameJSON(t, "StructuredOutput", got.StructuredOutput, want.StructuredOutput)
	is.Equal(got.Cost, want.Cost)
	is.Equal(got.InputTokens, want.InputTokens)
	is.Equal(got.OutputTokens, want.OutputTokens)
	is.Equal(got.WebSearchCalls, want.WebSearchCalls)
	is.Equal(got.Sandbox, want.Sandbox)
	sameTime(t, "CreatedAt", got.CreatedAt, want.CreatedAt)
}

func recordIDs(rs []*enrichment.Record) []string {
	var ids []string
	for _, r := range rs {
		ids = append(ids, r.ID)
	}
	return ids
}

// RunRecordStore runs the RecordStore contract against the stores newStore
// returns.
func RunRecordStore(t *testing.T, newStore func(t *testing.T) ports.RecordStore) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, s ports.RecordStore)
	}{
		{"create and get round trip", func(t *testing.T, s ports.RecordStore) {
			is := is.New(t)
			bare := &enrichment.Record{ID: newID("rec"), OrgID: newID("org"), Type: enrichment.RecordEnrichment, CreatedAt: at(3)}
			for _, r := range []*enrichment.Record{newRecord(newID("org"), 0), bare} {
				want := *r
				want.EntityData = append(json.RawMessage(nil), r.EntityData...)
				is.NoErr(s.CreateRecord(ctx, r))
				if len(r.EntityData) > 0 {
					r.EntityData[0] = ' ' // the store keeps its own copy
				}
				got, err := s.GetRecord(ctx, r.OrgID, r.ID)
				is.NoErr(err)
				checkRecord(t, got, &want)
				listed, err := s.ListRecords(ctx, r.OrgID, ports.RecordFilter{}, page.Request{Size: 10})
				is.NoErr(err)
				is.Equal(len(listed.Items), 1)
				checkRecord(t, listed.Items[0], &want)
			}
		}},
		{"unknown id and another organization's record are not found", func(t *testing.T, s ports.RecordStore) {
			is := is.New(t)
			r := newRecord(newID("org"), 0)
			is.NoErr(s.CreateRecord(ctx, r))
			_, err := s.GetRecord(ctx, r.OrgID, newID("rec"))
			is.True(errors.Is(err, ports.ErrNotFound))
			_, err = s.GetRecord(ctx, newID("org"), r.ID)
			is.True(errors.Is(err, ports.ErrNotFound))
			for _, id := range []string{"rec_\x00", "rec_\xff\xfe", r.ID + "\x00"} {
				_, err = s.GetRecord(ctx, r.OrgID, id)
				is.True(errors.Is(err, ports.ErrNotFound)) // an id no text column holds is simply not there
			}
			got, err := s.GetRecord(ctx, ports.AllOrgs, r.ID)
			is.NoErr(err)
			is.Equal(got.ID, r.ID)
		}},
		{"duplicate id is a conflict", func(t *testing.T, s ports.RecordStore) {
			is := is.New(t)
			r := newRecord(newID("org"), 0)
			is.NoErr(s.CreateRecord(ctx, r))
			dup := newRecord(r.OrgID, 1)
			dup.ID = r.ID
			is.True(errors.Is(s.CreateRecord(ctx, dup), ports.ErrConflict))
		}},
		{"a fused record keeps its fusion block; others have none", func(t *testing.T, s ports.RecordStore) {
			is := is.New(t)
			r := newRecord(newID("org"), 0)
			r.Type = enrichment.RecordFusion
			r.Fusion = &enrichment.Fusion{
				Sources:    []enrichment.FusionSource{{RecordID: "r1", ModelName: "sandbox::echo"}, {RecordID: "r2", ModelName: "sandbox::alt"}},
				Provenance: map[string]fusion.Provenance{"name": {Models: []string{"sandbox::alt", "sandbox::echo"}}, "founded": {Models: []string{"sandbox::alt"}, Arbitrated: true}},
				Summary:    fusion.Summary{AgreedFields: 1, ConflictedFields: 1, TotalFields: 2, Method: "llm", ArbitrationModel: "openai::gpt-4o"},
				Report: fusion.Report{AgreedFields: 1, ConflictedFields: 1, TotalFields: 2, Conflicts: []fusion.Conflict{{Path: "founded", FieldType: "scalar", ValueType: "number",
					ValuesByModel: map[string]any{"sandbox::echo": 1999.0, "sandbox::alt": 2001.0}, NeedsArbitration: true, Resolved: 2000.0}}},
				ArbitrationCost: 42,
			}
			is.NoErr(s.CreateRecord(ctx, r))
			got, err := s.GetRecord(ctx, r.OrgID, r.ID)
			is.NoErr(err)
			checkRecord(t, got, r)
			is.Equal(got.Fusion, r.Fusion)
			plain := newRecord(r.OrgID, 1)
			is.NoErr(s.CreateRecord(ctx, plain))
			got, err = s.GetRecord(ctx, r.OrgID, plain.ID)
			is.NoErr(err)
			is.Equal(got.Fusion, nil)
			res, err := s.ListRecords(ctx, r.OrgID, ports.RecordFilter{Type: enrichment.RecordFusion}, page.Request{Size: 10})
			is.NoErr(err)
			is.Equal(recordIDs(res.Items), []string{r.ID})
		}},
		{"list pages newest first", func(t *testing.T, s ports.RecordStore) {
			paginated{
				create: func(t *testing.T, orgID string, n int) (string, time.Time) {
					r := newRecord(orgID, n)
					is.New(t).NoErr(s.CreateRecord(ctx, r))
					return r.ID, r.CreatedAt
				},
				list: func(orgID string, p page.Request) ([]string, string, error) {
					res, err := s.ListRecords(ctx, orgID, ports.RecordFilter{}, p)
					return recordIDs(res.Items), res.Next, err
				},
			}.run(t)
		}},
		{"filters", func(t *testing.T, s ports.RecordStore) {
			is := is.New(t)
			org := newID("org")
			sch1, sch2, job1, job2 := newID("sch"), newID("sch"), newID("job"), newID("job")
			const other enrichment.RecordType = "benchmark"
			mk := func(n int, typ enrichment.RecordType, schemaID, jobID string) *enrichment.Record {
				r := newRecord(org, n)
				r.Type, r.SchemaID, r.JobID = typ, schemaID, jobID
				is.NoErr(s.CreateRecord(ctx, r))
				return r
			}
			r0 := mk(0, enrichment.RecordEnrichment, sch1, job1)
			r1 := mk(1, enrichment.RecordEnrichment, sch1, job2)
			r2 := mk(2, enrichment.RecordEnrichment, sch2, job2)
			r3 := mk(3, other, sch1, "")
			r4 := mk(4, enrichment.RecordEnrichment, "", "")
			foreign := newRecord(newID("org"), 5)
			foreign.SchemaID, foreign.JobID = sch1, job1
			is.NoErr(s.CreateRecord(ctx, foreign))

			for _, tt := range []struct {
				name   string
				filter ports.RecordFilter
				want   []*enrichment.Record
			}{
				{"none", ports.RecordFilter{}, []*enrichment.Record{r4, r3, r2, r1, r0}},
				{"type", ports.RecordFilter{Type: enrichment.RecordEnrichment}, []*enrichment.Record{r4, r2, r1, r0}},
				{"other type", ports.RecordFilter{Type: other}, []*enrichment.Record{r3}},
				{"schema", ports.RecordFilter{SchemaID: sch1}, []*enrichment.Record{r3, r1, r0}},
				{"job", ports.RecordFilter{JobID: job2}, []*enrichment.Record{r2, r1}},
				{"schema and job", ports.RecordFilter{SchemaID: sch1, JobID: job2}, []*enrichment.Record{r1}},
				{"type and schema", ports.RecordFilter{Type: enrichment.RecordEnrichment, SchemaID: sch1}, []*enrichment.Record{r1, r0}},
				{"no match", ports.RecordFilter{JobID: newID("job")}, nil},
			} {
				t.Run(tt.name, func(t *testing.T) {
					is := is.New(t)
					res, err := s.ListRecords(ctx, org, tt.filter, page.Request{Size: 2})
					is.NoErr(err)
					var got []*enrichment.Record
					for _, p := range pages(t, 2, func(r page.Request) (page.Result[*enrichment.Record], error) {
						return s.ListRecords(ctx, org, tt.filter, r)
					}) {
						got = append(got, p...)
					}
					is.Equal(recordIDs(got), recordIDs(tt.want))
					for i := range got {
						checkRecord(t, got[i], tt.want[i])
					}
					is.Equal(res.Next == "", len(tt.want) <= 2) // a cursor only when more may follow
					is.Equal(res.Total, len(tt.want))           // every page together
				})
			}
			t.Run("numbered page", func(t *testing.T) {
				is := is.New(t)
				res, err := s.ListRecords(ctx, org, ports.RecordFilter{}, page.Request{Size: 2, Offset: 2})
				is.NoErr(err)
				is.Equal(recordIDs(res.Items), recordIDs([]*enrichment.Record{r2, r1}))
				is.Equal(res.Total, 5)
				res, err = s.ListRecords(ctx, org, ports.RecordFilter{}, page.Request{Size: 2, Offset: 10})
				is.NoErr(err)
				is.Equal(len(res.Items), 0)
				is.Equal(res.Total, 5)
			})
			t.Run("model", func(t *testing.T) {
				is := is.New(t)
				r := newRecord(org, 6)
				r.Model = "only::this"
				is.NoErr(s.CreateRecord(ctx, r))
				res, err := s.ListRecords(ctx, org, ports.RecordFilter{Model: "only::this"}, page.Request{Size: 2})
				is.NoErr(err)
				is.Equal(recordIDs(res.Items), recordIDs([]*enrichment.Record{r}))
				is.Equal(res.Total, 1)
			})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newStore(t)) })
	}
}

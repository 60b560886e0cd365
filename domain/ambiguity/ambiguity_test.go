package ambiguity_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/ambiguity"
)

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func enc(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

const sample = `{"name":"Acme","size":"large","hq":{"city":"Paris"},
 "board":[{"full_name":"Ann","role":"chair","since":2019},{"full_name":"Bob","birth_year":1970}]}`

func TestFromSample(t *testing.T) {
	is := is.New(t)
	s := ambiguity.FromSample(decode(t, sample))
	var paths []string
	for _, x := range s.Sites {
		paths = append(paths, x.Path)
	}
	is.Equal(paths, []string{"board", "board.full_name", "board.role", "board.since", "board.birth_year", "hq", "hq.city", "name", "size"})
	is.Equal(s.Sites[1].Parent, "board")
	is.Equal(s.Sites[1].Example, "Ann")
	is.Equal(s.Sites[8].Type, "string")
	is.Equal(enc(s.Relations), `[{"path":"board","fields":["birth_year","full_name","role","since"]},{"path":"hq","fields":["city"]}]`)
}

const schemaDoc = `{"type":"object","title":"Company","properties":{
 "name":{"type":"string"},"size":{"type":"string","description":"How big"},
 "board":{"type":"array","items":{"$ref":"#/$defs/Member"}}},
 "$defs":{"Member":{"type":"object","properties":{"full_name":{"type":"string"},"role":{"type":"string"}}}}}`

func TestFromSchema(t *testing.T) {
	is := is.New(t)
	s := ambiguity.FromSchema(decode(t, schemaDoc))
	is.Equal(s.Entity, "Company")
	is.Equal(len(s.Sites), 5)
	is.Equal(s.Sites[1].Path, "board.full_name")
	is.Equal(s.Sites[4].Description, "How big")
	is.Equal(enc(s.Relations), `[{"path":"board","fields":["full_name","role"]}]`)
	// The reference's root form.
	r := ambiguity.FromSchema(decode(t, `{"root":{"name":"Thing","properties":{"value":{"type":"number"}}}}`))
	is.Equal(r.Entity, "Thing")
	is.Equal(r.Sites[0].Path, "value")
}

func TestNormalize(t *testing.T) {
	subject := ambiguity.FromSample(decode(t, sample))
	two := []string{"a", "b"}
	for _, tc := range []struct {
		name      string
		answer    ambiguity.Answer
		protected []string
		findings  string
		summary   string
		scoping   string
	}{
		{"nothing", ambiguity.Answer{}, nil, `[]`, `{"high":0,"low":0,"medium":0}`, `[]`},
		{"unknown paths and levels dropped, duplicates once, low counted not listed",
			ambiguity.Answer{Findings: []ambiguity.Finding{
				{Path: "nope", Level: "high", Interpretations: two, SuggestedNames: []string{"x"}},
				{Path: "size", Level: "weird", Interpretations: two, SuggestedNames: []string{"x"}},
				{Path: "size", Level: "high", Kind: "", Interpretations: []string{" headcount ", "revenue", "revenue", "area", "volume", "more"}, SuggestedNames: []string{"size", "employee_count", "annual_revenue", "a", "b"}, Note: " n "},
				{Path: "size", Level: "low", Interpretations: two, SuggestedNames: []string{"y"}},
				{Path: "name", Level: "low", Interpretations: two, SuggestedNames: []string{"y"}},
				{Path: "board.role", Level: "medium", Kind: "unmappable", Interpretations: two, SuggestedNames: []string{"board_role"}},
			}}, nil,
			`[{"path":"board.role","kind":"unmappable","level":"medium","interpretations":["a","b"],"note":"","suggested_names":["board_role"]},` +
				`{"path":"size","kind":"ambiguous","level":"high","interpretations":["headcount","revenue","area","volume"],"note":"n","suggested_names":["employee_count","annual_revenue","a"]}]`,
			`{"high":1,"low":1,"medium":1}`, `[]`},
		{"protected: flagged without renames", ambiguity.Answer{Findings: []ambiguity.Finding{
			{Path: "size", Level: "high", Interpretations: two, SuggestedNames: []string{"employee_count"}}}}, []string{"size"},
			`[{"path":"size","kind":"ambiguous","level":"high","interpretations":["a","b"],"note":"","suggested_names":[]}]`, `{"high":1,"low":0,"medium":0}`, `[]`},
		{"scoping kept only when sound", ambiguity.Answer{IdentityScoping: []ambiguity.ScopingFinding{
			{Path: "nope", EntityFields: []string{"x"}, PairFields: []string{"y"}},
			{Path: "hq", EntityFields: []string{"city"}, PairFields: []string{"city"}},
			{Path: "board", EntityFields: []string{"full_name", "birth_year", "ghost"}, PairFields: []string{"role", "since"}, SuggestedEntityName: "Person"},
		}}, nil, `[]`, `{"high":0,"low":0,"medium":0}`,
			`[{"path":"board","mixed":true,"entity_fields":["birth_year","full_name"],"pair_fields":["role","since"],"suggested_entity_name":"Person","note":""}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			rep := ambiguity.Normalize(tc.answer, subject, tc.protected)
			is.Equal(rep.AnalyzedCount, len(subject.Sites))
			is.Equal(enc(rep.Findings), tc.findings)
			is.Equal(enc(rep.Summary), tc.summary)
			is.Equal(enc(rep.IdentityScoping), tc.scoping)
		})
	}
}

func TestPromptCarriesSubject(t *testing.T) {
	is := is.New(t)
	subject := ambiguity.FromSample(decode(t, sample))
	msgs := ambiguity.Prompt(subject, []string{"size"}, true)
	is.Equal(len(msgs), 2)
	is.True(strings.Contains(msgs[0].Content, "suggested_description"))
	back, ok := ambiguity.ParseSubject(msgs[1].Content)
	is.True(ok)
	is.Equal(enc(back), enc(subject))
	_, ok = ambiguity.ParseSubject("nothing here")
	is.True(!ok)
	is.True(strings.Contains(msgs[1].Content, `["size"]`))
}

func TestAnnotateAndReadBack(t *testing.T) {
	is := is.New(t)
	doc := decode(t, schemaDoc)
	before := enc(doc)
	rep := ambiguity.Report{AnalyzedCount: 5, Findings: []ambiguity.Finding{
		{Path: "size", Kind: "ambiguous", Level: "high", Interpretations: []string{"headcount", "revenue"}, SuggestedNames: []string{"employee_count"}},
		{Path: "board.role", Kind: "ambiguous", Level: "medium", Interpretations: []string{"board role", "job title"}, SuggestedNames: []string{"board_role"}, SuggestedDescription: "The seat held on the board."},
	}, IdentityScoping: []ambiguity.ScopingFinding{{Path: "board", Mixed: true, EntityFields: []string{"full_name"}, PairFields: []string{"role"}, SuggestedEntityName: "Person"}},
		Summary: map[string]int{"low": 0, "medium": 1, "high": 1}}
	out := ambiguity.Annotate(doc, &rep, ambiguity.Check{ContentHash: "h1", Model: "sandbox::echo", CheckedAt: "now"})
	is.Equal(enc(doc), before) // the input is not changed
	props := out["properties"].(map[string]any)
	amb := props["size"].(map[string]any)["ambiguity"].(map[string]any)
	is.Equal(amb["suggested_description"], "headcount.") // the first reading, by default
	is.Equal(amb["level"], "high")
	is.Equal(rep.Findings[0].SuggestedDescription, "headcount.")
	role := out["$defs"].(map[string]any)["Member"].(map[string]any)["properties"].(map[string]any)["role"].(map[string]any)
	is.Equal(role["ambiguity"].(map[string]any)["suggested_description"], "The seat held on the board.")
	is.Equal(props["board"].(map[string]any)["identity_scoping"].(map[string]any)["suggested_entity_name"], "Person")
	c, ok := ambiguity.LastCheck(out)
	is.True(ok)
	is.Equal(c.ContentHash, "h1")

	back := ambiguity.ReadBack(out)
	is.Equal(enc(back.Findings), enc([]ambiguity.Finding{rep.Findings[1], rep.Findings[0]})) // in the document's order
	is.Equal(enc(back.IdentityScoping), enc(rep.IdentityScoping))
	is.Equal(back.Summary["high"], 1)

	// A new check replaces the verdicts: size is no longer flagged.
	rep2 := ambiguity.Report{Findings: []ambiguity.Finding{{Path: "name", Kind: "unmappable", Level: "medium", Interpretations: []string{"a", "b"}}}}
	out2 := ambiguity.Annotate(out, &rep2, ambiguity.Check{ContentHash: "h2"})
	props2 := out2["properties"].(map[string]any)
	is.True(props2["size"].(map[string]any)["ambiguity"] == nil)
	is.True(props2["name"].(map[string]any)["ambiguity"] != nil)
	is.True(props2["board"].(map[string]any)["identity_scoping"] == nil)

	// Stripping gives the document back as it was.
	is.Equal(enc(ambiguity.Strip(out)), before)
}

func TestEntityKey(t *testing.T) {
	is := is.New(t)
	for in, want := range map[string]string{"Person": "person", "BoardMember": "board_member", "legal entity": "legal_entity", " ": "", "Company2": "company2", "--x--": "x"} {
		is.Equal(ambiguity.EntityKey(in), want)
	}
}

func TestSplitSamples(t *testing.T) {
	samples := []any{decode(t, sample), decode(t, `{"name":"Other","board":{"full_name":"Cy","role":"ceo"}}`)}
	before := enc(samples)
	sp := ambiguity.Split{Path: "board", Fields: []string{"full_name", "birth_year", "role", "since"}, EntityFields: []string{"full_name", "birth_year"}, EntityName: "Person"}
	for _, tc := range []struct {
		name    string
		split   ambiguity.Split
		doc     string
		applied bool
		reason  string
		check   func(is *is.I, r ambiguity.SplitResult)
	}{
		{"samples", sp, "", true, "", func(is *is.I, r ambiguity.SplitResult) {
			is.Equal(enc(r.Samples[0].(map[string]any)["board"]), `[{"person":{"full_name":"Ann"},"role":"chair","since":2019},{"person":{"birth_year":1970,"full_name":"Bob"}}]`)
			is.Equal(enc(r.Samples[1].(map[string]any)["board"]), `{"person":{"full_name":"Cy"},"role":"ceo"}`)
			is.Equal(r.Paths, []string{"board.person.birth_year", "board.person.full_name"})
		}},
		{"with a schema", ambiguity.Split{Path: "board", EntityFields: []string{"full_name"}, EntityName: "Person"},
			`{"type":"object","properties":{"board":{"type":"array","items":{"type":"object","required":["full_name","role"],"properties":{"full_name":{"type":"string"},"role":{"type":"string"}}}}}}`,
			true, "", func(is *is.I, r ambiguity.SplitResult) {
				is.Equal(enc(r.Schema), `{"$defs":{"Person":{"properties":{"full_name":{"type":"string"}},"required":["full_name"],"title":"Person","type":"object"}},`+
					`"properties":{"board":{"items":{"properties":{"person":{"$ref":"#/$defs/Person"},"role":{"type":"string"}},"required":["role","person"],"type":"object"},"type":"array"}},"type":"object"}`)
			}},
		{"no path", ambiguity.Split{EntityFields: []string{"a"}, EntityName: "P"}, "", false, "path is required", nil},
		{"no name", ambiguity.Split{Path: "board", EntityFields: []string{"a"}}, "", false, "entity_name is required", nil},
		{"no entity fields", ambiguity.Split{Path: "board", EntityName: "P"}, "", false, "entity_fields is required", nil},
		{"entity field not a field", ambiguity.Split{Path: "board", Fields: []string{"a"}, EntityFields: []string{"b"}, EntityName: "P"}, "", false, "not among", nil},
		{"nothing stays", ambiguity.Split{Path: "board", Fields: []string{"a"}, EntityFields: []string{"a"}, EntityName: "P"}, "", false, "nothing stays", nil},
		{"site missing", ambiguity.Split{Path: "nope", EntityFields: []string{"a"}, EntityName: "P"}, "", false, "no sample has", nil},
		{"nothing to move", ambiguity.Split{Path: "board", EntityFields: []string{"ghost"}, EntityName: "P"}, "", false, "carries any", nil},
		{"key taken", ambiguity.Split{Path: "board", EntityFields: []string{"full_name"}, EntityName: "Role"}, "", false, "already has a field", nil},
		{"schema def taken", ambiguity.Split{Path: "board", EntityFields: []string{"full_name"}, EntityName: "Person"},
			`{"type":"object","$defs":{"Person":{}},"properties":{"board":{"type":"object","properties":{"full_name":{"type":"string"}}}}}`, false, "already defines", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			var doc map[string]any
			if tc.doc != "" {
				doc = decode(t, tc.doc)
			}
			r := ambiguity.SplitSamples(samples, doc, tc.split)
			is.Equal(r.Applied, tc.applied)
			mustContain(t, r.Reason, tc.reason)
			if tc.check != nil {
				tc.check(is, r)
			}
			is.Equal(enc(samples), before) // never changed
		})
	}
}

func mustContain(t *testing.T, got, want string) {
	t.Helper()
	if (want == "") != (got == "") || !strings.Contains(got, want) {
		t.Fatalf("reason %q, want %q", got, want)
	}
}

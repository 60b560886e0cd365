package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/test/pgtest"
)

// depthBomb is the schema: object properties nested n deep (JSON
// depth 2n+1), about 40 bytes a level. Its root type is misspelt: had the
// compiler seen it, the answer would be its invalid_request, not the
// limits' schema_too_complex (and it would take minutes: 109 s at 3,000).
func depthBomb(n int) string {
	return `{"type":"objekt","properties":{"a":` + strings.Repeat(`{"type":"object","properties":{"a":`, n-1) +
		`{"type":"string"}` + strings.Repeat(`}}`, n)
}

// flatSchema is an object schema of n string properties.
func flatSchema(n int) string {
	var b strings.Builder
	b.WriteString(`{"type":"object","properties":{`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"p%d":{"type":"string"}`, i)
	}
	b.WriteString(`}}`)
	return b.String()
}

// schemaRefusal is a 400 schema_too_complex as the client reads it.
type schemaRefusal struct {
	Detail, Code, Field string
	Limit               struct {
		Name    string
		Max     int
		Setting string
	}
}

func (s *service) refusal(t *testing.T, method, path, cred, body string) (int, schemaRefusal) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := s.do(ctx, method, path, cred, body, nil)
	if err != nil {
		t.Fatalf("%s %s: no answer (still compiling?): %v", method, path, err)
	}
	var out schemaRefusal
	_ = json.Unmarshal([]byte(r.raw), &out)
	return r.status, out
}

// TestHostileSchemas: the depth bomb (3,000 objects deep, about
// 120 KB), and schemas past each limit, on every path that takes a schema
// from a caller, are refused with 400 schema_too_complex naming the limit,
// its value and its setting, before any compilation; a model's answer past
// the limits (schema generation, AI edit) is refused as the model's invalid
// output, naming the limit. Nothing is stored, no job is left running.
func TestHostileSchemas(t *testing.T) {
	s := start(t, testConfig(""))
	ten := s.register("bomb@example.com")
	id := s.createSchema(ten.key, "Company", companySchema)
	bomb := depthBomb(3000)
	if len(bomb) < 100_000 {
		t.Fatalf("the bomb is %d bytes", len(bomb))
	}
	enrich := `{"entity_data":{"name":"Acme"},"schema_id":"` + id + `","models":["sandbox::echo"],"target_schema":%s}`
	batch := `{"entities":[{"name":"Acme"}],"schema_id":"` + id + `","models":["sandbox::echo"],"target_schema":%s}`
	for _, tt := range []struct {
		name, method, path, body, field, limit string
	}{
		{"create", "POST", "/api/schema/saved", `{"name":"Bomb","schema":%s}`, "schema", "max_depth"},
		{"create schema_content", "POST", "/api/schema/saved", `{"name":"Bomb","schema_content":%s}`, "schema_content", "max_depth"},
		{"patch", "PATCH", "/api/schema/saved/" + id, `{"schema":%s}`, "schema", "max_depth"},
		{"enrich stream target_schema", "POST", "/api/single/enrich/stream", enrich, "target_schema", "max_depth"},
		{"enrich sync target_schema", "POST", "/api/single/enrich/sync", enrich, "target_schema", "max_depth"},
		{"batch target_schema", "POST", "/api/batch/start", batch, "target_schema", "max_depth"},
		{"scoping-split schema", "POST", "/api/schema/scoping-split", `{"path":"board","entity_fields":["name"],"entity_name":"Person","entity_samples":[{"board":[{"name":"Ann"}]}],"schema":%s}`, "schema", "max_depth"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			status, e := s.refusal(t, tt.method, tt.path, ten.key, fmt.Sprintf(tt.body, bomb))
			is.Equal(status, 400)
			is.Equal(e.Code+": "+e.Detail, "schema_too_complex: "+e.Detail)
			is.Equal(e.Field, tt.field)
			is.Equal(e.Limit.Name, tt.limit)
			is.Equal(e.Limit.Max, 32)
			is.Equal(e.Limit.Setting, "ENRICH_SCHEMA_MAX_DEPTH")
			is.True(strings.Contains(e.Detail, "schema nesting depth exceeds 32 (ENRICH_SCHEMA_MAX_DEPTH)"))
		})
	}

	// Each other limit, just past its default.
	t.Run("other limits", func(t *testing.T) {
		allOf := `{"allOf":[` + strings.TrimSuffix(strings.Repeat(`{},`, 5000), ",") + `]}`
		big := `{"type":"object","description":"` + strings.Repeat("x", 512<<10) + `"}`
		for _, c := range []struct{ doc, limit string }{
			{flatSchema(2001), "max_properties"},
			{allOf, "max_subschemas"},
			{big, "max_bytes"},
		} {
			is := is.New(t)
			status, e := s.refusal(t, "POST", "/api/schema/saved", ten.key, fmt.Sprintf(`{"name":"Big","schema":%s}`, c.doc))
			is.Equal(status, 400)
			is.Equal(e.Code, "schema_too_complex")
			is.Equal(e.Limit.Name, c.limit)
		}
		// At the limits: saved.
		is := is.New(t)
		is.Equal(s.call("POST", "/api/schema/saved", ten.key, obj{"name": "Wide", "schema": json.RawMessage(flatSchema(1999))}, nil), 201)
	})

	// A model's answer past the limits: the sandbox infers a schema as deep
	// as the samples (these nest 20 objects: the schema 41), and adds the
	// field it is asked for (to a schema at 2,000 properties: 2,001). The
	// answer is refused before it is compiled and fed back; every attempt
	// gives the same, so the job fails naming the limit, and nothing is
	// saved.
	t.Run("generation output", func(t *testing.T) {
		is := is.New(t)
		sample := `{"name":"Acme","deep":` + strings.Repeat(`{"a":`, 20) + `1` + strings.Repeat(`}`, 20) + `}`
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		r, err := s.do(ctx, "POST", "/api/schema/generate/sync", ten.key,
			`{"entity_samples":[`+sample+`],"model":"sandbox::echo","strict_field_conformance":false}`, nil)
		is.NoErr(err)
		is.True(r.status >= 400)
		is.Equal(r.err.Code, "model_output_invalid")
		is.True(strings.Contains(r.err.Detail, "schema nesting depth exceeds 32 (ENRICH_SCHEMA_MAX_DEPTH)")) // names the limit
	})
	t.Run("AI edit output", func(t *testing.T) {
		is := is.New(t)
		wide := s.createSchema(ten.key, "Widest", flatSchema(2000))
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		r, err := s.do(ctx, "POST", "/api/schema/saved/"+wide+"/prompt", ten.key, `{"prompt":"add a field extra","model":"sandbox::echo"}`, nil)
		is.NoErr(err)
		is.True(r.status >= 400)
		is.Equal(r.err.Code, "model_output_invalid")
		is.True(strings.Contains(r.err.Detail, "schema property count exceeds 2000 (ENRICH_SCHEMA_MAX_PROPERTIES)"))
		var got struct {
			Schema struct{ Properties map[string]any }
		}
		is.Equal(s.call("GET", "/api/schema/saved/"+wide, ten.key, nil, &got), 200)
		is.Equal(len(got.Schema.Properties), 2000) // the edit was not saved
	})

	is := is.New(t)
	var schemas struct{ Schemas []struct{ Name string } }
	is.Equal(s.call("GET", "/api/schema/saved", ten.key, nil, &schemas), 200)
	is.Equal(len(schemas.Schemas), 3) // Company, Wide, Widest: no bomb
	is.Equal(s.runningAfter(5*time.Second), 0)
}

// TestStoredSchemaPastLimits: a schema saved under higher limits (before
// they existed, or before an operator lowered them) is not duplicated,
// published or enriched against past the limits now in force: 400
// schema_too_complex. Two servers share one PostgreSQL database.
func TestStoredSchemaPastLimits(t *testing.T) {
	dsn := pgtest.Native(t)
	loose := testConfig(dsn)
	loose.SchemaMaxDepth = 100
	old := start(t, loose)
	ten := old.register("stored@example.com")
	deep := strings.Repeat(`{"type":"object","properties":{"a":`, 20) + `{"type":"string"}` + strings.Repeat(`}}`, 20)
	id := old.createSchema(ten.key, "Deep", deep) // depth 41: fine under 100
	old.stop()

	s := start(t, testConfig(dsn))
	for _, tt := range []struct{ name, method, path, body, field string }{
		{"duplicate", "POST", "/api/schema/saved/" + id + "/duplicate", "", "schema"},
		{"publish", "POST", "/api/schema/saved/" + id + "/publish", "", "schema"},
		{"enrich", "POST", "/api/single/enrich/sync", `{"entity_data":{"a":{"a":"x"}},"schema_id":"` + id + `","models":["sandbox::echo"]}`, "schema_id"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			status, e := s.refusal(t, tt.method, tt.path, ten.key, tt.body)
			is.Equal(status, 400)
			is.Equal(e.Code, "schema_too_complex")
			is.Equal(e.Field, tt.field)
			is.Equal(e.Limit.Name, "max_depth")
		})
	}
}

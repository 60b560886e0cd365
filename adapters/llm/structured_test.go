package llm_test

import (
	"context"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// TestResponseSchemaReachesTheProvider: a call that asks for the schema
// channel (enable_response_schema) is sent with response_format json_schema
// carrying its schema, strict where asked and supported; other calls, and
// models the catalog gives no such channel, keep json_object.
func TestResponseSchemaReachesTheProvider(t *testing.T) {
	fake := fakeopenai.New(t, fakeopenai.WithModels("full", "loose", "plain"))
	r, err := llm.NewRegistry(llm.Config{Timeout: 2 * time.Second,
		Providers: []llm.ProviderConfig{{Name: "local", Type: llm.TypeOpenAI, BaseURL: fake.URL(), APIKey: "k",
			Models: []string{"full", "loose", "plain"}}},
		Catalog: llm.Catalog{
			"full":  {Model: "full", StructuredOutput: true, StrictSchema: true},
			"loose": {Model: "loose", StructuredOutput: true},
			"plain": {Model: "plain"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		model          string
		schema, strict bool
		wantType       string
		wantStrict     bool
	}{
		{"full", true, true, "json_schema", true},
		{"full", true, false, "json_schema", false},
		{"full", false, true, "json_object", false},
		{"loose", true, true, "json_schema", false}, // strict asked, not supported
		{"plain", true, true, "json_object", false}, // no schema channel
	} {
		t.Run(tt.model, func(t *testing.T) {
			is := is.New(t)
			req := request(t, "local::"+tt.model, companySchema, acme)
			req.ResponseSchema, req.Strict = tt.schema, tt.strict
			resp, err := r.Generate(context.Background(), req)
			is.NoErr(err)
			is.NoErr(validate(t, req.Schema, resp.Text)) // answered to the schema
			got, _ := fake.LastRequest()
			is.Equal(got.ResponseFormat["type"], tt.wantType)
			if tt.wantType != "json_schema" {
				return
			}
			js, _ := got.ResponseFormat["json_schema"].(map[string]any)
			is.Equal(js["strict"], tt.wantStrict)
			is.Equal(js["name"], req.SchemaName)
			sch, _ := js["schema"].(map[string]any)
			is.Equal(sch["type"], req.Schema["type"])
			is.Equal(len(sch["properties"].(map[string]any)), len(req.Schema["properties"].(map[string]any)))
		})
	}
}

package httpapi

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/orgprovider"
)

// TestOrgProviderBodies: the generated ProviderCreate and ProviderUpdate map
// to the app's input; an update's api_key is tri-state (absent keeps the key,
// a string replaces it, null or "" removes it).
func TestOrgProviderBodies(t *testing.T) {
	on := true
	name := "mine"
	for _, tt := range []struct {
		body string
		want app.OrgProviderChange
	}{
		{`{}`, app.OrgProviderChange{}},
		{`{"name":"mine","is_enabled":true}`, app.OrgProviderChange{Name: &name, Enabled: &on}},
		{`{"api_key":"sk-new"}`, app.OrgProviderChange{SetKey: true, APIKey: "sk-new"}},
		{`{"api_key":null}`, app.OrgProviderChange{SetKey: true}},
		{`{"api_key":""}`, app.OrgProviderChange{SetKey: true}},
	} {
		t.Run(tt.body, func(t *testing.T) {
			is := is.New(t)
			var in api.ProviderUpdate
			is.NoErr(json.Unmarshal([]byte(tt.body), &in))
			is.Equal(toOrgProviderChange(in), tt.want)
		})
	}
	for _, tt := range []struct {
		body string
		want app.NewOrgProvider
	}{
		{`{"name":"mine","base_url":"https://x.example/v1"}`, app.NewOrgProvider{Name: "mine", BaseURL: "https://x.example/v1"}},
		{`{"name":"mine","base_url":"u","api_key":null,"type":"openai_compatible"}`, app.NewOrgProvider{Name: "mine", BaseURL: "u", Type: "openai_compatible"}},
		{`{"name":"mine","base_url":"u","api_key":"k","is_enabled":true,"models":[{"name":"m1"}]}`,
			app.NewOrgProvider{Name: "mine", BaseURL: "u", APIKey: "k", Enabled: &on, Models: []app.NewOrgModel{{Name: "m1"}}}},
	} {
		t.Run(tt.body, func(t *testing.T) {
			is := is.New(t)
			var in api.ProviderCreate
			is.NoErr(json.Unmarshal([]byte(tt.body), &in))
			is.Equal(toNewOrgProvider(in), tt.want)
		})
	}
}

// TestOrgProviderLimitsAgreeWithGo: the limits of organizations' providers
// written in the document are domain/orgprovider's.
func TestOrgProviderLimitsAgreeWithGo(t *testing.T) {
	doc, err := LoadSpec()
	if err != nil {
		t.Fatal(err)
	}
	prop := func(component, name string) map[string]any {
		t.Helper()
		s := doc.Components.Schemas[component].Value.Properties[name]
		if s == nil {
			t.Fatalf("%s.%s is not in the document", component, name)
		}
		v := s.Value
		out := map[string]any{"enum": fmt.Sprint(v.Enum)}
		if v.MaxLength != nil {
			out["maxLength"] = *v.MaxLength
		}
		if v.MaxItems != nil {
			out["maxItems"] = *v.MaxItems
		}
		if v.Max != nil {
			out["max"] = *v.Max
		}
		return out
	}
	tests := []struct {
		name      string
		doc, want any
	}{
		{"create name", prop("ProviderCreate", "name")["maxLength"], uint64(orgprovider.MaxName)},
		{"update name", prop("ProviderUpdate", "name")["maxLength"], uint64(orgprovider.MaxName)},
		{"create base_url", prop("ProviderCreate", "base_url")["maxLength"], uint64(orgprovider.MaxBaseURL)},
		{"update base_url", prop("ProviderUpdate", "base_url")["maxLength"], uint64(orgprovider.MaxBaseURL)},
		{"models per provider", prop("ProviderCreate", "models")["maxItems"], uint64(orgprovider.MaxModels)},
		{"types", prop("ProviderCreate", "type")["enum"], fmt.Sprint(orgprovider.Types())},
		{"response types", prop("ProviderResponse", "type")["enum"], fmt.Sprint(orgprovider.Types())},
		{"model name", prop("ModelCreate", "name")["maxLength"], uint64(orgprovider.MaxModelName)},
		{"model rename", prop("ModelUpdate", "name")["maxLength"], uint64(orgprovider.MaxModelName)},
		{"updated context length", prop("ModelUpdate", "context_length")["max"], float64(orgprovider.MaxContextLength)},
		{"updated input price", prop("ModelUpdate", "input_price")["max"], float64(orgprovider.MaxPricePerMTok / 1_000_000)},
		{"updated output price", prop("ModelUpdate", "output_price")["max"], float64(orgprovider.MaxPricePerMTok / 1_000_000)},
		{"context length", prop("ModelCreate", "context_length")["max"], float64(orgprovider.MaxContextLength)},
		{"input price", prop("ModelCreate", "input_price")["max"], float64(orgprovider.MaxPricePerMTok / 1_000_000)},
		{"output price", prop("ModelCreate", "output_price")["max"], float64(orgprovider.MaxPricePerMTok / 1_000_000)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is.New(t).Equal(fmt.Sprint(tt.doc), fmt.Sprint(tt.want))
		})
	}
}

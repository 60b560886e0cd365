package enrichment_test

import (
	"encoding/json"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/enrichment"
)

func TestLocalize(t *testing.T) {
	doc := map[string]any{}
	_ = json.Unmarshal([]byte(`{"type":"object","properties":{
		"name":{"type":"string"},
		"summary":{"type":"string","multilingual":true,"description":"d"},
		"hq":{"type":"object","properties":{"city":{"type":["string","null"],"multilingual":true}}},
		"tags":{"type":"array","items":{"type":"string","multilingual":true}}}}`), &doc)
	tests := []struct {
		name  string
		langs []string
		path  []string
		want  string
	}{
		{"plain stays", []string{"en", "fr"}, []string{"properties", "name"}, `{"type":"string"}`},
		{"top level", []string{"en", "fr"}, []string{"properties", "summary"},
			`{"additionalProperties":false,"description":"d","properties":{"en":{"description":"d","type":"string"},"fr":{"description":"d","type":"string"}},"required":["en","fr"],"type":"object","x-multilingual":true}`},
		{"nested", []string{"de"}, []string{"properties", "hq", "properties", "city"},
			`{"additionalProperties":false,"properties":{"de":{"type":["string","null"]}},"required":["de"],"type":"object","x-multilingual":true}`},
		{"array items", []string{"en"}, []string{"properties", "tags", "items"},
			`{"additionalProperties":false,"properties":{"en":{"type":"string"}},"required":["en"],"type":"object","x-multilingual":true}`},
		{"no languages: as is", nil, []string{"properties", "summary"}, `{"description":"d","multilingual":true,"type":"string"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var v any = enrichment.Localize(doc, tt.langs)
			for _, k := range tt.path {
				v = v.(map[string]any)[k]
			}
			b, _ := json.Marshal(v)
			is.Equal(string(b), tt.want)
		})
	}
	b, _ := json.Marshal(doc["properties"].(map[string]any)["summary"])
	is.New(t).Equal(string(b), `{"description":"d","multilingual":true,"type":"string"}`) // the input is untouched
}

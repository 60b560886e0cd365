package enrichment_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/enrichment"
)

func TestParseClassification(t *testing.T) {
	tests := []struct {
		name, text, err string
		status          enrichment.ClassificationStatus
	}{
		{"match", `{"status":"match","entity_description":"a company","expected_type":"Company","confidence":0.9,"reasoning":"r"}`, "", enrichment.ClassMatch},
		{"mismatch with alternatives", `{"status":"mismatch","entity_description":"a person","expected_type":"Company","confidence":0.8,"reasoning":"r","alternative_interpretations":["x"]}`, "", enrichment.ClassMismatch},
		{"not json", `{"status":`, "not a classification", ""},
		{"unknown field", `{"verdict":"?"}`, "not a classification", ""},
		{"bad status", `{"status":"maybe","entity_description":"a","expected_type":"b","confidence":0.5,"reasoning":"r"}`, "status", ""},
		{"confidence out of range", `{"status":"match","entity_description":"a","expected_type":"b","confidence":1.5,"reasoning":"r"}`, "confidence", ""},
		{"no description", `{"status":"match","entity_description":" ","expected_type":"b","confidence":0.5,"reasoning":"r"}`, "entity_description", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			c, err := enrichment.ParseClassification(tt.text)
			if tt.err != "" {
				is.True(err != nil && strings.Contains(err.Error(), tt.err))
				return
			}
			is.NoErr(err)
			is.Equal(c.Status, tt.status)
			is.True(c.AlternativeInterpretations != nil)
		})
	}
}

func TestClassificationVerdicts(t *testing.T) {
	is := is.New(t)
	for _, tt := range []struct {
		c                enrichment.Classification
		warns, confident bool
	}{
		{enrichment.Classification{Status: enrichment.ClassMatch, Confidence: 0.1}, false, false},
		{enrichment.Classification{Status: enrichment.ClassMismatch, Confidence: 0.8}, true, true},
		{enrichment.Classification{Status: enrichment.ClassMismatch, Confidence: 0.79}, true, false},
		{enrichment.Classification{Status: enrichment.ClassUnknown, Confidence: 0.99}, true, false},
		{enrichment.Classification{Status: enrichment.ClassAmbiguous, Confidence: 0.99}, true, false},
	} {
		is.Equal(tt.c.Warns(), tt.warns)
		is.Equal(tt.c.ConfidentMismatch(), tt.confident)
	}
}

func TestCutEntityAndPrompt(t *testing.T) {
	is := is.New(t)
	long := `{"name":"` + strings.Repeat("é", 5000) + `"}`
	cut := enrichment.CutEntity([]byte(long))
	is.Equal(len([]rune(cut)), enrichment.MaxClassifiedEntity)
	is.Equal(enrichment.CutEntity([]byte(`{"a":1}`)), `{"a":1}`)

	msgs := []enrichment.Message{{Role: "system", Content: "S"}, {Role: "user", Content: "U"}}
	is.Equal(enrichment.WithClassification(msgs, nil), msgs)
	c := &enrichment.Classification{Status: enrichment.ClassMismatch, EntityDescription: "a person", ExpectedType: "Company", Confidence: 0.4}
	out := enrichment.WithClassification(msgs, c)
	is.True(strings.HasPrefix(out[0].Content, "Pre-flight classification: the entity is a person"))
	is.True(strings.Contains(out[0].Content, "set properties that do not apply to it to null"))
	is.True(strings.HasSuffix(out[0].Content, "S"))
	is.Equal(msgs[0].Content, "S") // the original is untouched
	p := enrichment.ClassificationPrompt(enrichment.ClassificationInput{SchemaName: "Company", Entity: `{"a":1}`})
	is.True(strings.Contains(p[1].Content, enrichment.ClassificationMarker+` {"schema_name":"Company","entity":"{\"a\":1}"}`))
}

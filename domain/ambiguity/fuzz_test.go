package ambiguity_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/entityenrich/enrich/domain/ambiguity"
)

// FuzzAnalysis feeds arbitrary samples, schema documents, model answers
// and split requests to the domain: nothing panics, the input is never
// changed, and a report names only paths of its subject.
func FuzzAnalysis(f *testing.F) {
	f.Add(sample, schemaDoc, `{"findings":[{"path":"size","level":"high","interpretations":["a","b"],"suggested_names":["x"]}]}`, "board", "full_name", "Person")
	f.Add(`{"a":[[{"b":1}],{"c":{"d":[]}}]}`, `{"root":{"properties":{"x":{"$ref":"#/$defs/X"}}},"$defs":{"X":{"$ref":"#/$defs/X"}}}`, `{"identity_scoping":[{"path":"a","entity_fields":["b"],"pair_fields":["c"]}]}`, "a.c", "d", "D")
	f.Add(`{}`, `{}`, `null`, "", "", "")
	f.Fuzz(func(t *testing.T, sampleJSON, doc, answer, path, field, name string) {
		var s map[string]any
		_ = json.Unmarshal([]byte(sampleJSON), &s)
		before, _ := json.Marshal(s)
		subject := ambiguity.FromSample(s)
		var a ambiguity.Answer
		_ = json.Unmarshal([]byte(answer), &a)
		rep := ambiguity.Normalize(a, subject, []string{field})
		known := map[string]bool{}
		for _, site := range subject.Sites {
			known[site.Path] = true
		}
		for _, f := range rep.Findings {
			if !known[f.Path] {
				t.Fatalf("finding on unknown path %q", f.Path)
			}
		}
		var d map[string]any
		_ = json.Unmarshal([]byte(doc), &d)
		docBefore, _ := json.Marshal(d)
		_ = ambiguity.FromSchema(d)
		annotated := ambiguity.Annotate(d, &rep, ambiguity.Check{ContentHash: "h"})
		_ = ambiguity.ReadBack(annotated)
		res := ambiguity.SplitSamples([]any{s}, d, ambiguity.Split{Path: path, EntityFields: strings.Split(field, ","), EntityName: name})
		if res.Applied && len(res.Paths) == 0 {
			t.Fatal("applied without paths")
		}
		after, _ := json.Marshal(s)
		docAfter, _ := json.Marshal(d)
		if string(before) != string(after) || string(docBefore) != string(docAfter) {
			t.Fatal("input changed")
		}
	})
}

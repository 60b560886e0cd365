package enrichment_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/enrichment"
)

func doc(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

const company = `{
  "type": "object",
  "required": ["name", "headquarters"],
  "x-expertiseDomains": {"finance": {"name": "Finance", "description": "money matters"}},
  "$defs": {"person": {"type": "object", "properties": {"name": {"type": "string"}}}},
  "properties": {
    "name": {"type": "string"},
    "founded": {"type": ["integer", "null"]},
    "revenue": {"type": "number", "expertise": "finance"},
    "ticker": {"type": "string", "x-expertise": "finance"},
    "headquarters": {"type": "object", "properties": {"city": {"type": "string"}}},
    "executives": {"type": "array", "items": {"$ref": "#/$defs/person"}},
    "tags": {"type": "array", "items": {"type": "string"}},
    "ceo": {"$ref": "#/$defs/person"}
  }
}`

func TestPlan(t *testing.T) {
	is := is.New(t)
	ds, err := enrichment.Plan(doc(t, company))
	is.NoErr(err)
	got := map[string][]string{}
	var order []string
	for _, d := range ds {
		got[d.Key] = d.Properties
		order = append(order, d.Key)
	}
	is.Equal(order, []string{"general", "ceo", "executives", "finance", "headquarters"})
	is.Equal(got["general"], []string{"founded", "name", "tags"})
	is.Equal(got["finance"], []string{"revenue", "ticker"})
	is.Equal(ds[3].Name, "Finance")
	is.Equal(ds[3].Description, "money matters")
	// sub-schemas keep $defs and only their own required names
	is.Equal(ds[0].Schema["required"], []any{"name"})
	is.True(ds[1].Schema["$defs"] != nil)
	_, hasReq := ds[3].Schema["required"]
	is.True(!hasReq)
	is.Equal(ds[4].Schema["required"], []any{"headquarters"})
}

func TestPlanNoProperties(t *testing.T) {
	_, err := enrichment.Plan(doc(t, `{"type":"object"}`))
	is.New(t).True(errors.Is(err, enrichment.ErrNoProperties))
}

func TestChoose(t *testing.T) {
	big, _ := enrichment.Plan(doc(t, company))
	small, _ := enrichment.Plan(doc(t, `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number"}}}`))
	tests := []struct {
		name      string
		requested enrichment.Strategy
		domains   []enrichment.Domain
		want      enrichment.Strategy
	}{
		{"auto big", enrichment.Auto, big, enrichment.MultiExpertise},
		{"auto small", enrichment.Auto, small, enrichment.SinglePass},
		{"requested wins", enrichment.SinglePass, big, enrichment.SinglePass},
		{"requested multi on small", enrichment.MultiExpertise, small, enrichment.MultiExpertise},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			c := enrichment.Choose(tt.requested, tt.domains)
			is.Equal(c.Strategy, tt.want)
			is.True(c.Reason != "")
			is.True(c.Signals["property_count"].(int) > 0)
		})
	}
}

func TestCalls(t *testing.T) {
	is := is.New(t)
	d := doc(t, company)
	ds, _ := enrichment.Plan(d)
	is.Equal(len(enrichment.Calls(enrichment.MultiExpertise, d, ds)), 5)
	one := enrichment.Calls(enrichment.SinglePass, d, ds)
	is.Equal(len(one), 1)
	is.Equal(len(one[0].Properties), 8)
	is.Equal(len(one[0].Schema["required"].([]any)), 2)
}

func TestMerge(t *testing.T) {
	is := is.New(t)
	m, err := enrichment.Merge([]map[string]any{{"a": 1}, {"b": 2}})
	is.NoErr(err)
	is.Equal(m, map[string]any{"a": 1, "b": 2})
	_, err = enrichment.Merge([]map[string]any{{"a": 1}, {"a": 2}})
	is.True(err != nil)
}

func TestParseAnswer(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{`{"a":1}`, true},
		{"```json\n{\"a\":1}\n```", true},
		{"Here you go: {\"a\":1} hope it helps", true},
		{`[1,2]`, false},
		{`not json`, false},
		{`null`, false},
		{``, false},
	}
	for _, tt := range tests {
		is := is.New(t)
		m, err := enrichment.ParseAnswer(tt.in)
		if !tt.ok {
			is.True(err != nil)
			continue
		}
		is.NoErr(err)
		is.Equal(m["a"], 1.0)
	}
}

func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{`{"a":1}`, "```json\n{}\n```", "x{y}z", "", "{", "}{"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		m, err := enrichment.ParseAnswer(s)
		if err == nil && m == nil {
			t.Fatal("nil object without error")
		}
	})
}

func FuzzPlan(f *testing.F) {
	f.Add(company)
	f.Add(`{"type":"object","properties":{"a":{"type":["object","null"]}}}`)
	f.Add(`{"properties":{"a":{"$ref":"#/$defs/"}}}`)
	f.Fuzz(func(t *testing.T, s string) {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) != nil {
			return
		}
		ds, err := enrichment.Plan(m)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		for _, d := range ds {
			for _, p := range d.Properties {
				if seen[p] {
					t.Fatalf("property %q in two domains", p)
				}
				seen[p] = true
			}
		}
	})
}

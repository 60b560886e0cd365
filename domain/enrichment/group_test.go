package enrichment_test

import (
	"fmt"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/enrichment"
)

// objects is a schema of n object properties (n expertise domains) and one
// scalar (general).
func objects(n int) map[string]any {
	props := map[string]any{"name": map[string]any{"type": "string"}}
	for i := range n {
		props[fmt.Sprintf("o%04d", i)] = map[string]any{"type": "object", "properties": map[string]any{"v": map[string]any{"type": "string"}}}
	}
	return map[string]any{"type": "object", "properties": props}
}

func TestGroup(t *testing.T) {
	for _, tt := range []struct {
		name    string
		domains int // object properties: domains besides general
		max     int
		want    int // groups
	}{
		{"below the cap: unchanged", 3, 16, 4},
		{"at the cap: unchanged", 15, 16, 16},
		{"one over the cap", 16, 16, 16},
		{"2,000 object properties", 2000, 16, 16},
		{"cap of one: one call", 40, 1, 1},
		{"no cap", 2000, 0, 2001},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			doc := objects(tt.domains)
			ds, err := enrichment.Plan(doc)
			is.NoErr(err)
			got := enrichment.Group(doc, ds, tt.max)
			is.Equal(len(got), tt.want)
			// Every property is asked exactly once, and each domain's
			// properties stay in one group.
			seen := map[string]string{}
			for _, g := range got {
				is.True(len(g.Properties) > 0)
				for _, p := range g.Properties {
					_, dup := seen[p]
					is.True(!dup)
					seen[p] = g.Key
				}
				props, _ := g.Schema["properties"].(map[string]any)
				is.Equal(len(props), len(g.Properties))
			}
			is.Equal(len(seen), tt.domains+1)
			for _, d := range ds {
				for _, p := range d.Properties {
					is.Equal(seen[p], seen[d.Properties[0]])
				}
			}
			// Deterministic: the same plan every time.
			again := enrichment.Group(doc, ds, tt.max)
			for i := range got {
				is.Equal(got[i].Key, again[i].Key)
				is.Equal(got[i].Properties, again[i].Properties)
			}
			// The groups are balanced: none holds more than twice its share.
			if tt.max > 0 && len(ds) > tt.max {
				for _, g := range got {
					is.True(len(g.Properties) <= 2*((tt.domains+1+tt.max-1)/tt.max))
				}
			}
		})
	}
}

func TestGroupKeepsDomainsAndNames(t *testing.T) {
	is := is.New(t)
	d := doc(t, company) // general, ceo, executives, finance, headquarters
	ds, err := enrichment.Plan(d)
	is.NoErr(err)
	got := enrichment.Group(d, ds, 2)
	is.Equal(len(got), 2)
	is.Equal(got[0].Key, "general..ceo")
	is.Equal(got[0].Properties, []string{"ceo", "founded", "name", "tags"})
	is.Equal(got[1].Key, "executives..headquarters")
	is.Equal(got[1].Name, "executives, Finance, headquarters")
	is.Equal(got[1].Description, "Finance: money matters")
	is.Equal(got[1].Properties, []string{"executives", "headquarters", "revenue", "ticker"})
	// The sub-schema keeps its own required names and the $defs.
	is.Equal(got[1].Schema["required"], []any{"headquarters"})
	is.True(got[1].Schema["$defs"] != nil)
	// Its parts merge as before: domains own disjoint properties.
	_, err = enrichment.Merge([]map[string]any{{"name": "a"}, {"revenue": 1.0}})
	is.NoErr(err)
}

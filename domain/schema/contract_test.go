package schema_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/schema"
)

const contractDoc = `{"type":"object","properties":{
  "name":{"type":"string","identifying":true},
  "domain":{"type":"string","identifying":true},
  "internal_id":{"type":"string","preserve":true},
  "industry":{"type":"string"},
  "hq":{"type":"object","properties":{"city":{"type":"string","preserve":true},"country":{"type":"string"}}},
  "people":{"type":"array","items":{"$ref":"#/$defs/Person"}},
  "tags":{"type":"array","items":{"type":"string"}},
  "offices":{"type":"array","items":{"type":"object","properties":{"address":{"type":"object","properties":{"street":{"type":"string","identifying":true}}}}}}
 },
 "$defs":{"Person":{"type":"object","properties":{"full_name":{"type":"string","identifying":true},"email":{"type":"string","database_key":true},"role":{"type":"string"}}}}}`

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestContractOf(t *testing.T) {
	is := is.New(t)
	c := schema.ContractOfJSON(json.RawMessage(contractDoc))
	is.Equal(c.IdentifyingKeys, []string{"domain", "name"})
	is.Equal(c.Preserve, []string{"hq.city", "internal_id"})
	is.Equal(c.ArrayItemKeys, map[string][]string{"people": {"email", "full_name"}, "offices": {"address.street"}})
	is.True(!c.Empty())

	// The reference's internal form: a root entity definition.
	root := schema.ContractOfJSON(json.RawMessage(`{"root":{"type":"object","properties":{"sku":{"type":"string","identifying":true}}},"expertise_domains":{}}`))
	is.Equal(root.IdentifyingKeys, []string{"sku"})

	// No flags: the empty contract, which every entity satisfies.
	plain := schema.ContractOfJSON(json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`))
	is.True(plain.Empty())
	is.Equal(len(plain.Check(map[string]any{"anything": 1})), 0)
	is.True(schema.ContractOfJSON(json.RawMessage(`not json`)).Empty())

	// A recursive schema ends.
	rec := schema.ContractOfJSON(json.RawMessage(`{"type":"object","properties":{"node":{"$ref":"#/$defs/N"}},"$defs":{"N":{"type":"object","properties":{"id":{"type":"string","identifying":true},"child":{"$ref":"#/$defs/N"}}}}}`))
	is.True(len(rec.IdentifyingKeys) > 0)
	is.True(strings.HasPrefix(rec.IdentifyingKeys[0], "node.") && strings.HasSuffix(rec.IdentifyingKeys[0], ".id"))
}

func TestContractCheck(t *testing.T) {
	c := schema.ContractOfJSON(json.RawMessage(contractDoc))
	base := `"internal_id":"X-1","hq":{"city":"Paris"}`
	for _, tc := range []struct {
		name   string
		entity string
		want   []string
	}{
		{"satisfied", `{"name":"Acme",` + base + `}`, nil},
		{"either identifying key is enough", `{"domain":"acme.com",` + base + `}`, nil},
		{"no identifying value", `{"industry":"x",` + base + `}`, []string{"domain", "name"}},
		{"identifying values unusable", `{"name":"  ","domain":null,` + base + `}`, []string{"domain", "name"}},
		{"empty containers are unusable", `{"name":[],"domain":{},` + base + `}`, []string{"domain", "name"}},
		{"a number is usable", `{"name":0,` + base + `}`, nil},
		{"false is usable", `{"name":false,` + base + `}`, nil},
		{"preserved value missing", `{"name":"Acme","hq":{"city":"Paris"}}`, []string{"internal_id"}},
		{"nested preserved value missing", `{"name":"Acme","internal_id":"X-1","hq":{}}`, []string{"hq.city"}},
		{"nested preserved value null", `{"name":"Acme","internal_id":"X-1","hq":{"city":null}}`, []string{"hq.city"}},
		{"parent not an object", `{"name":"Acme","internal_id":"X-1","hq":"Paris"}`, []string{"hq.city"}},
		{"everything missing", `{}`, []string{"domain", "name", "hq.city", "internal_id"}},
		{"array items keyed", `{"name":"Acme",` + base + `,"people":[{"full_name":"Ann"},{"email":"b@x.io"}]}`, nil},
		{"array item without key", `{"name":"Acme",` + base + `,"people":[{"full_name":"Ann"},{"role":"CEO"},{"full_name":""}]}`, []string{"people.1", "people.2"}},
		{"array item not an object", `{"name":"Acme",` + base + `,"people":["Ann"]}`, []string{"people.0"}},
		{"nested item key", `{"name":"Acme",` + base + `,"offices":[{"address":{"street":"Main St"}},{"address":{}}]}`, []string{"offices.1"}},
		{"array not supplied", `{"name":"Acme",` + base + `}`, nil},
		{"empty array is open", `{"name":"Acme",` + base + `,"people":[]}`, nil},
		{"scalar arrays are not keyed", `{"name":"Acme",` + base + `,"tags":[null,""]}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			got := schema.Paths(c.Check(decode(t, tc.entity)))
			if tc.want == nil {
				tc.want = []string{}
			}
			is.Equal(got, tc.want)
		})
	}
}

func TestContractDottedNames(t *testing.T) {
	is := is.New(t)
	c := schema.ContractOfJSON(json.RawMessage(`{"type":"object","properties":{"a.b":{"type":"string","preserve":true}}}`))
	is.Equal(c.Preserve, []string{"a.b"})
	is.Equal(len(c.Check(map[string]any{"a.b": "v"})), 0)
	is.Equal(schema.Paths(c.Check(map[string]any{"a": map[string]any{"b": "v"}})), []string{"a.b"})
}

// FuzzContractCheck feeds arbitrary schema documents and entities to the
// contract: deriving and checking never panic, and a contract without
// flags accepts everything.
func FuzzContractCheck(f *testing.F) {
	f.Add(contractDoc, `{"name":"Acme","internal_id":"X","hq":{"city":"P"},"people":[{"role":1}]}`)
	f.Add(`{"type":"object","properties":{"x":{"type":"string"}}}`, `{}`)
	f.Add(`{"root":{"properties":{"k":{"identifying":true,"$ref":"#/$defs/A"}}},"$defs":{"A":{"$ref":"#/$defs/A"}}}`, `{"k":[]}`)
	f.Add(`{"properties":{"a":{"type":"array","items":{"properties":{"b":{"identifying":true}}}}}}`, `{"a":[1,null,{"b":{}}]}`)
	f.Fuzz(func(t *testing.T, doc, entity string) {
		c := schema.ContractOfJSON(json.RawMessage(doc))
		var e map[string]any
		_ = json.Unmarshal([]byte(entity), &e)
		vs := c.Check(e)
		if c.Empty() && len(vs) > 0 {
			t.Fatalf("empty contract refused %s: %v", entity, vs)
		}
		for _, v := range vs {
			if v.Path == "" {
				t.Fatalf("violation without a path: %v", v)
			}
		}
	})
}

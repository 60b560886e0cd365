package schema_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/schema"
)

func TestClearDatabaseModel(t *testing.T) {
	for _, c := range []struct {
		name, in, want string
		changed        bool
	}{
		{"flags of properties, nested objects, array items and $defs go; order and the rest stay",
			`{"title":"c","type":"object","properties":{
			  "z":{"type":"string","database_key":true,"identifying":true,"db_type":"text"},
			  "a":{"type":"object","properties":{"k":{"db_name":"kk","type":"integer","index":"search"}}},
			  "tags":{"type":"array","items":{"type":"string","db_type":"varchar","db_type_length":20}}},
			 "$defs":{"Office":{"type":"object","properties":{"city":{"unique_group":"g","type":"string"}}}}}`,
			`{"title":"c","type":"object","properties":{"z":{"type":"string","identifying":true},` +
				`"a":{"type":"object","properties":{"k":{"type":"integer"}}},"tags":{"type":"array","items":{"type":"string"}}},` +
				`"$defs":{"Office":{"type":"object","properties":{"city":{"type":"string"}}}}}`, true},
		{"a top-level keyword of the same name is not a property's", `{"db_type":"x","properties":{"a":{"type":"string"}}}`,
			`{"db_type":"x","properties":{"a":{"type":"string"}}}`, false},
		{"a property named like a flag stays", `{"properties":{"database_key":{"type":"string","semantic_id":true}}}`,
			`{"properties":{"database_key":{"type":"string","semantic_id":true}}}`, false},
		{"keys with <, > and & are not escaped", `{"properties":{"a<b>&":{"type":"string","db_type":"text"}}}`,
			`{"properties":{"a<b>&":{"type":"string"}}}`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			out, changed, err := schema.ClearDatabaseModel(json.RawMessage(c.in))
			is.NoErr(err)
			is.Equal(changed, c.changed)
			if !c.changed {
				is.Equal(string(out), c.in) // untouched, formatting included
				return
			}
			is.Equal(string(out), c.want)
		})
	}
	_, _, err := schema.ClearDatabaseModel(json.RawMessage(`{"properties":`))
	is.New(t).True(err != nil)
}

func TestSchemaClearDatabaseModel(t *testing.T) {
	is := is.New(t)
	now := time.Unix(500, 0)
	sc := &schema.Schema{}
	sc.SetContent(json.RawMessage(`{"type":"object","properties":{"d":{"type":"string","database_key":true}}}`))
	before := sc.ContentHash
	changed, err := sc.ClearDatabaseModel(now)
	is.NoErr(err)
	is.True(changed)
	is.Equal(string(sc.Content), `{"type":"object","properties":{"d":{"type":"string"}}}`)
	is.Equal(sc.ContentHash, schema.ContentHash(sc.Content)) // the one hash rule
	is.True(sc.ContentHash != before)
	is.Equal(sc.UpdatedAt, now)
	changed, err = sc.ClearDatabaseModel(now.Add(time.Hour))
	is.NoErr(err)
	is.True(!changed)
	is.Equal(sc.UpdatedAt, now)
}

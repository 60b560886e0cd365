package relmap

import (
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/matryer/is"
)

const acme = `{"name": "Acme", "country": "IE", "employees": 12, "hq": {"city": "Cork"},
	"tags": ["a", "b"], "people": [{"name": "Ann", "role": "ceo", "emails": ["ann@acme.ie"]}, null, {"name": "Bob"}]}`

func ops(w Write) []string {
	var out []string
	for _, s := range w.Statements {
		out = append(out, s.Op+" "+s.Table)
	}
	return out
}

func TestUpsertSurrogate(t *testing.T) {
	is := is.New(t)
	m := company(t, Options{})
	w, err := Upsert(m, json.RawMessage(acme), 3)
	is.NoErr(err)
	is.Equal(ops(w), []string{"upsert company", "delete company_people", "insert company_people", "insert company_people_emails",
		"delete company_tags", "insert company_tags"})
	id := SurrogateID(m, Key{"country": "IE", "name": "Acme"})
	root := w.Statements[0].SQL
	is.True(strings.HasPrefix(root, `INSERT INTO "company" ("ee_id", "ee_revision", "country", "employees", "founded", "hq_city"`))
	is.True(strings.Contains(root, `'`+id+`'::uuid, '3'::bigint, 'IE'::text, '12'::bigint, NULL::date, 'Cork'::text`))
	is.True(strings.HasSuffix(root, `WHERE "company"."ee_revision" < EXCLUDED."ee_revision"`))
	is.True(!strings.Contains(root, `SET "ee_id"`)) // the key is not updated
	guard := `EXISTS (SELECT 1 FROM "company" WHERE "ee_id" = '` + id + `'::uuid AND "ee_revision" = 3)`
	is.Equal(w.Statements[1].SQL, `DELETE FROM "company_people" WHERE "ee_parent_id" = '`+id+`'::uuid AND `+guard)
	for _, s := range w.Statements[1:] {
		is.True(strings.HasSuffix(s.SQL, guard)) // every child write is guarded by the revision
	}
	is.True(strings.Contains(w.Statements[2].SQL, `'0'::integer, 'Ann'::text, 'ceo'::text)`))
	is.True(strings.Contains(w.Statements[2].SQL, `'2'::integer, 'Bob'::text, NULL::text)`)) // the null item is skipped, positions kept

	// the payload says the same as data
	is.Equal(w.Payload.Op, "upsert")
	is.Equal(w.Payload.EntityType, "Company")
	is.Equal(w.Payload.Revision, int64(3))
	is.Equal(w.Payload.Key, map[string]any{ColID: id})
	is.Equal(len(w.Payload.Tables), 4)
	is.Equal(w.Payload.Tables[0].Rows[0]["hq_city"], "Cork")
	is.Equal(len(w.Payload.Tables[1].Rows), 2)
	_, err = json.Marshal(w.Payload)
	is.NoErr(err)

	// deterministic, and the same entity keyed the same way
	again, err := Upsert(m, json.RawMessage(acme), 3)
	is.NoErr(err)
	is.Equal(again.SQL(), w.SQL())
	k, err := KeyOf(m, map[string]any{"name": " Acme ", "country": "IE"})
	is.NoErr(err)
	is.Equal(SurrogateID(m, k), id) // key values are trimmed
}

func TestUpsertNatural(t *testing.T) {
	is := is.New(t)
	m := company(t, Options{PKStrategy: Natural})
	w, err := Upsert(m, json.RawMessage(acme), 7)
	is.NoErr(err)
	is.Equal(w.Payload.Key, map[string]any{"country": "IE", "name": "Acme"})
	is.True(strings.Contains(w.Statements[0].SQL, `ON CONFLICT ("country", "name") DO UPDATE`))
	is.Equal(w.Statements[1].SQL, `DELETE FROM "company_people" WHERE "country" = 'IE'::text AND "name" = 'Acme'::text AND `+
		`EXISTS (SELECT 1 FROM "company" WHERE "country" = 'IE'::text AND "name" = 'Acme'::text AND "ee_revision" = 7)`)
	is.True(strings.Contains(w.Statements[3].SQL, `('IE'::text, 'Acme'::text, '0'::integer, '0'::integer, 'ann@acme.ie'::text)`))

	_, err = Upsert(m, json.RawMessage(`{"name": "Acme"}`), 1)
	is.True(errors.Is(err, ErrNoKeyValue)) // natural needs every key value
}

func TestUpsertHostileValues(t *testing.T) {
	m := project(t, `{"name": {"type": "string", "identifying": true}, "order": {"type": "string"}, "n": {"type": "integer"},
		"d": {"type": "string", "format": "date"}, "meta": {"type": "object"},
		"xs": {"type": "array", "items": {"type": "object", "properties": {"v": {"type": "number"}}}}}`, Options{})
	cases := []struct {
		name, state string
		contains    string
		errPath     string
	}{
		{"quotes", `{"name": "a'b\"c"}`, `'a''b"c'::text`, ""},
		{"backslashes", `{"name": "a\\'); DROP TABLE thing; --"}`, `E'a\\''); DROP TABLE thing; --'::text`, ""},
		{"unicode", `{"name": "Ünïcødé \ud83d\ude80 \u2028 東京"}`, "'Ünïcødé 🚀 \u2028 東京'::text", ""},
		{"lone surrogate becomes U+FFFD", `{"name": "x\ud800y"}`, "'x\ufffdy'::text", ""},
		{"very long", `{"name": "` + strings.Repeat("ab'", 3000) + `"}`, strings.Repeat("ab''", 3000), ""},
		{"jsonb", `{"name": "k", "meta": {"it's": [1.50, "\\"]}}`, `E'{"it''s":[1.50,"\\\\"]}'::jsonb`, ""},
		{"nul", `{"name": "a\u0000b"}`, "", "name"},
		{"nul in jsonb", `{"name": "k", "meta": {"a": "\u0000"}}`, "", "meta"},
		{"fraction for integer", `{"name": "k", "n": 1.5}`, "", "n"},
		{"string for integer", `{"name": "k", "n": "12; DROP"}`, "", "n"},
		{"bad date", `{"name": "k", "d": "2024-13-01"}`, "", "d"},
		{"object for item", `{"name": "k", "xs": ["x"]}`, "", "xs.0"},
		{"bad item number", `{"name": "k", "xs": [{"v": 1}, {"v": "NaN"}]}`, "", "xs.1.v"},
		{"object key", `{"name": {"a": 1}}`, "", "name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			is := is.New(t)
			w, err := Upsert(m, json.RawMessage(c.state), 1)
			if c.errPath != "" {
				var ve *ValueError
				is.True(errors.As(err, &ve))
				is.Equal(ve.Path, c.errPath)
				is.True(errors.Is(err, ErrValue))
				return
			}
			is.NoErr(err)
			is.True(strings.Contains(w.SQL(), c.contains))
			is.True(!strings.ContainsRune(w.SQL(), 0))
		})
	}
}

func TestUpsertRefusals(t *testing.T) {
	is := is.New(t)
	m := company(t, Options{})
	_, err := Upsert(m, json.RawMessage(`[1]`), 1)
	is.True(errors.Is(err, ErrValue))
	_, err = Upsert(m, json.RawMessage(`{"employees": 3}`), 1)
	is.True(errors.Is(err, ErrNoKeyValue)) // no key value at all
	_, err = Upsert(m, json.RawMessage(`{"name": "  "}`), 1)
	is.True(errors.Is(err, ErrNoKeyValue)) // a blank key is no key
	_, err = Upsert(Map{}, json.RawMessage(`{}`), 1)
	is.True(errors.Is(err, ErrContract))
}

func TestUpsertMultilingualKey(t *testing.T) {
	is := is.New(t)
	m := project(t, `{"label": {"type": "string", "identifying": true, "multilingual": true}}`, Options{KeyLanguage: "de", PKStrategy: Natural})
	w, err := Upsert(m, json.RawMessage(`{"label": {"en": "Cologne", "de": "Köln"}}`), 2)
	is.NoErr(err)
	is.Equal(w.Payload.Key, map[string]any{"label_key": "Köln"})
	is.True(strings.Contains(w.SQL(), `'{"de":"Köln","en":"Cologne"}'::jsonb, 'Köln'::text`))
}

func TestDelete(t *testing.T) {
	is := is.New(t)
	m := company(t, Options{})
	k := Key{"country": "IE", "name": "O'Brien"}
	w, err := Delete(m, k, 9)
	is.NoErr(err)
	is.Equal(ops(w), []string{"delete company"})
	is.Equal(w.Statements[0].SQL, `DELETE FROM "company" WHERE "ee_id" = '`+SurrogateID(m, k)+`'::uuid AND "ee_revision" <= 9`)
	is.Equal(w.Payload.Op, "delete")

	n := company(t, Options{PKStrategy: Natural})
	w, err = Delete(n, k, 9)
	is.NoErr(err)
	is.Equal(w.SQL(), `DELETE FROM "company" WHERE "country" = 'IE'::text AND "name" = 'O''Brien'::text AND "ee_revision" <= 9;`+"\n")
	_, err = Delete(n, Key{"country": "IE", "name": "a\x00"}, 9)
	is.True(errors.Is(err, ErrValue))
}

func TestSurrogateID(t *testing.T) {
	is := is.New(t)
	m := company(t, Options{})
	a := SurrogateID(m, Key{"country": "IE", "name": "Acme"})
	is.True(regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(a))
	is.True(a != SurrogateID(m, Key{"country": "IE", "name": "Acme2"}))
	is.True(a != SurrogateID(m, Key{"country": nil, "name": "Acme"}))
	// a value cannot slide from one key column into another
	is.True(SurrogateID(m, Key{"country": "a", "name": "b"}) != SurrogateID(m, Key{"country": "ab", "name": ""}))
}

func TestUpsertWithID(t *testing.T) {
	is := is.New(t)
	m := company(t, Options{})
	const id = "0190a5c4-7b2e-7c3d-8e4f-0123456789ab"
	w, err := UpsertWithID(m, id, json.RawMessage(acme), 4)
	is.NoErr(err)
	is.Equal(w.Payload.Key, map[string]any{ColID: id})
	is.True(strings.HasPrefix(w.Statements[0].SQL, `INSERT INTO "company" ("ee_id", "ee_revision", "country", "employees", "founded", "hq_city", "hq_geo_lat", "id", "meta", "name", "public", "revenue", "website") VALUES ('`+id+`'::uuid`))
	is.True(strings.Contains(w.Statements[1].SQL, `"ee_parent_id" = '`+id+`'::uuid`))
	d, err := Delete(m, Key{ColID: id}, 5)
	is.NoErr(err)
	is.Equal(d.Statements[0].SQL, `DELETE FROM "company" WHERE "ee_id" = '`+id+`'::uuid AND "ee_revision" <= 5`)
	_, err = UpsertWithID(m, "x'; DROP", json.RawMessage(acme), 4)
	is.True(errors.Is(err, ErrValue)) // an id that is not a UUID is refused
	n := company(t, Options{PKStrategy: Natural})
	w, err = UpsertWithID(n, id, json.RawMessage(acme), 4)
	is.NoErr(err)
	is.Equal(w.Payload.Key, map[string]any{"country": "IE", "name": "Acme"}) // natural ignores it
}

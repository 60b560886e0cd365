package fetch_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/fetch"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, ct, body string
		max            int
		want           string // the entities as one JSON array
		format         fetch.Format
		err            error
	}{
		{"array", "application/json", `[{"name":"Acme"}, {"name":"Globex","n":2}]`, 10, `[{"name":"Acme"},{"name":"Globex","n":2}]`, fetch.JSON, nil},
		{"array, charset", "application/json; charset=utf-8", ` [ {"a":1} ] `, 10, `[{"a":1}]`, fetch.JSON, nil},
		{"array without content type", "", `[{"a":1}]`, 10, `[{"a":1}]`, fetch.JSON, nil},
		{"array as text/plain", "text/plain", `[{"a":1}]`, 10, `[{"a":1}]`, fetch.JSON, nil},
		{"empty array", "application/json", `[]`, 10, `[]`, fetch.JSON, nil},
		{"key order kept", "application/json", `[{"z":1,"a":{"y":2,"b":3}}]`, 10, `[{"z":1,"a":{"y":2,"b":3}}]`, fetch.JSON, nil},
		{"byte order mark", "application/json", "\xef\xbb\xbf[{\"a\":1}]", 10, `[{"a":1}]`, fetch.JSON, nil},
		{"under data", "application/json", `{"data":[{"a":1}],"next":"x"}`, 10, `[{"a":1}]`, fetch.JSON, nil},
		{"under results", "application/vnd.api+json", `{"count":1,"results":[{"a":1}]}`, 10, `[{"a":1}]`, fetch.JSON, nil},
		{"under items", "", `{"items":[{"a":1},{"b":2}]}`, 10, `[{"a":1},{"b":2}]`, fetch.JSON, nil},
		{"data wins over items", "", `{"items":[{"b":2}],"data":[{"a":1}]}`, 10, `[{"a":1}]`, fetch.JSON, nil},
		{"data not an array, items is", "", `{"data":{"x":1},"items":[{"b":2}]}`, 10, `[{"b":2}]`, fetch.JSON, nil},
		{"object without array", "application/json", `{"name":"Acme"}`, 10, "", "", fetch.ErrUnparseable},
		{"array of scalars", "application/json", `[{"a":1}, 2]`, 10, "", "", fetch.ErrUnparseable},
		{"scalar", "application/json", `42`, 10, "", "", fetch.ErrUnparseable},
		{"broken JSON", "application/json", `[{"a":1}`, 10, "", "", fetch.ErrUnparseable},
		{"array then garbage", "application/json", `[{"a":1}] x`, 10, "", "", fetch.ErrUnparseable},
		{"empty JSON body", "application/json", ``, 10, "", "", fetch.ErrUnparseable},
		{"too many in array", "application/json", `[{"a":1},{"a":2},{"a":3}]`, 2, "", "", fetch.ErrTooManyEntities},
		{"exactly max", "application/json", `[{"a":1},{"a":2}]`, 2, `[{"a":1},{"a":2}]`, fetch.JSON, nil},
		{"ndjson", "application/x-ndjson", "{\"a\":1}\n\n{\"b\": 2}\r\n", 10, `[{"a":1},{"b":2}]`, fetch.NDJSON, nil},
		{"ndjson single", "application/jsonl", `{"a":1}`, 10, `[{"a":1}]`, fetch.NDJSON, nil},
		{"ndjson labelled json", "application/json", "{\"a\":1}\n{\"b\":2}", 10, `[{"a":1},{"b":2}]`, fetch.NDJSON, nil},
		{"ndjson sniffed", "", "{\"a\":1}\n{\"b\":2}\n", 10, `[{"a":1},{"b":2}]`, fetch.NDJSON, nil},
		{"ndjson bad line", "application/x-ndjson", "{\"a\":1}\n[1]\n", 10, "", "", fetch.ErrUnparseable},
		{"ndjson broken line", "application/x-ndjson", "{\"a\":1}\n{\"b\":\n", 10, "", "", fetch.ErrUnparseable},
		{"ndjson too many", "application/x-ndjson", "{\"a\":1}\n{\"a\":2}\n{\"a\":3}", 2, "", "", fetch.ErrTooManyEntities},
		{"csv", "text/csv", "name,city\nAcme,Lyon\n\"Globex, Inc\",\"\"\n", 10, `[{"name":"Acme","city":"Lyon"},{"name":"Globex, Inc","city":""}]`, fetch.CSV, nil},
		{"csv sniffed", "text/plain", "name,city\r\nAcme,Lyon\r\n", 10, `[{"name":"Acme","city":"Lyon"}]`, fetch.CSV, nil},
		{"csv header only", "text/csv", "name,city\n", 10, `[]`, fetch.CSV, nil},
		{"csv semicolons sniffed", "", "name;city\nAcme;Lyon\n", 10, `[{"name":"Acme","city":"Lyon"}]`, fetch.CSV, nil},
		{"tsv", "text/tab-separated-values", "name\tcity\nAcme\tLyon\n", 10, `[{"name":"Acme","city":"Lyon"}]`, fetch.CSV, nil},
		{"csv trimmed header", "text/csv", " name , city\nAcme,Lyon\n", 10, `[{"name":"Acme","city":"Lyon"}]`, fetch.CSV, nil},
		{"csv short row", "text/csv", "name,city\nAcme\n", 10, "", "", fetch.ErrUnparseable},
		{"csv duplicate column", "text/csv", "name,name\na,b\n", 10, "", "", fetch.ErrUnparseable},
		{"csv empty column name", "text/csv", "name,\na,b\n", 10, "", "", fetch.ErrUnparseable},
		{"csv empty", "text/csv", "", 10, "", "", fetch.ErrUnparseable},
		{"csv too many", "text/csv", "a\n1\n2\n3\n", 2, "", "", fetch.ErrTooManyEntities},
		{"csv bad quote", "text/csv", "a,b\n\"x,y\n", 10, "", "", fetch.ErrUnparseable},
		{"not UTF-8", "text/csv", "a\n\xff\n", 10, "", "", fetch.ErrUnparseable},
		{"csv with unicode", "text/csv", "nom\nÉtoile ★\n", 10, `[{"nom":"Étoile ★"}]`, fetch.CSV, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, format, err := fetch.Parse([]byte(tt.body), tt.ct, tt.max)
			if tt.err != nil {
				is.True(errors.Is(err, tt.err))
				return
			}
			is.NoErr(err)
			is.Equal(format, tt.format)
			raw, _ := json.Marshal(got)
			is.Equal(string(raw), tt.want)
		})
	}
}

func TestParseDefaultMax(t *testing.T) {
	is := is.New(t)
	body := "a\n" + strings.Repeat("x\n", fetch.DefaultMaxEntities)
	got, _, err := fetch.Parse([]byte(body), "text/csv", 0)
	is.NoErr(err)
	is.Equal(len(got), fetch.DefaultMaxEntities)
	_, _, err = fetch.Parse([]byte(body+"y\n"), "text/csv", 0)
	is.True(errors.Is(err, fetch.ErrTooManyEntities))
}

func TestCheckURL(t *testing.T) {
	for _, tt := range []struct {
		url string
		ok  bool
	}{
		{"https://api.example.com/companies?page=1", true},
		{"http://api.example.com", true},
		{"", false},
		{"   ", false},
		{"ftp://api.example.com/x", false},
		{"file:///etc/passwd", false},
		{"gopher://x", false},
		{"https://", false},
		{"https://user:pw@api.example.com/", false},
		{"https://user@api.example.com/", false},
		{"//api.example.com/x", false},
		{"https://api.example.com/" + strings.Repeat("a", fetch.MaxURLLength), false},
		{"http://[::1", false},
	} {
		_, err := fetch.CheckURL(tt.url)
		if (err == nil) != tt.ok {
			t.Errorf("CheckURL(%q): err %v, want ok %v", tt.url, err, tt.ok)
		}
	}
}

// FuzzParse: whatever the document, Parse does not panic, and what it
// returns is at most max JSON objects.
func FuzzParse(f *testing.F) {
	for _, seed := range []struct{ body, ct string }{
		{`[{"a":1}]`, "application/json"},
		{`{"data":[{"a":1}]}`, ""},
		{"{\"a\":1}\n{\"b\":2}", "application/x-ndjson"},
		{"a,b\n1,2\n", "text/csv"},
		{"a;b\n1;2\n", ""},
		{"\"a\nb\",c\n", "text/csv"},
		{"\xef\xbb\xbf[]", ""},
		{`{"items":[1,2]}`, "application/json"},
	} {
		f.Add([]byte(seed.body), seed.ct)
	}
	f.Fuzz(func(t *testing.T, body []byte, ct string) {
		const max = 5
		got, _, err := fetch.Parse(body, ct, max)
		if err != nil {
			if !errors.Is(err, fetch.ErrUnparseable) && !errors.Is(err, fetch.ErrTooManyEntities) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		if len(got) > max {
			t.Fatalf("%d entities, max %d", len(got), max)
		}
		for _, e := range got {
			var m map[string]any
			if err := json.Unmarshal(e, &m); err != nil {
				t.Fatalf("entity %s is not a JSON object: %v", e, err)
			}
		}
	})
}

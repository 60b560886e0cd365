package jobcodec_test

import (
	"bufio"
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/app"
)

// fixtures reads testdata/requests-before-i7.tsv: each kind's stored request
// as the code before this package wrote it (json.Marshal of the app's tagged
// request types), one "name<TAB>json" a line.
func fixtures(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("testdata/requests-before-i7.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, body, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			t.Fatalf("bad fixture line %q", sc.Text())
		}
		out[name] = body
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFixtures: the values the fixtures were made from encode to the same
// bytes, and the fixtures decode back to the same values, for every kind.
func TestFixtures(t *testing.T) {
	fx := fixtures(t)
	b, f, i, s := true, 0.7, 30, "fr"
	f2 := false
	am, cm := "openai:gpt-4o", "auto"
	full := app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme","n":1}`), SchemaID: "sch-1", Models: []string{"a:b", "c:d"},
		Model: "a:b", Strategy: "multi_expertise", EnableWebSearch: true, Languages: []string{"en", "de"},
		EnableResponseSchema: &f2, EnableStrictStructuredOutput: true, DatabaseSync: &b, ClassificationModel: &cm,
		ArbitrationModel: &am, AttachmentIDs: []string{"att-1"}, TargetSchema: json.RawMessage(`{"type":"object"}`), PauseTimeoutSeconds: &i}
	c := jobcodec.New()
	type kind struct {
		encode func() ([]byte, error)
		decode func([]byte) (any, error)
		want   any
	}
	enrich := func(r app.EnrichRequest) kind {
		return kind{func() ([]byte, error) { return c.EncodeEnrich(r) },
			func(b []byte) (any, error) { return c.DecodeEnrich(b) }, r}
	}
	batch := func(r app.BatchRequest) kind {
		return kind{func() ([]byte, error) { return c.EncodeBatch(r) },
			func(b []byte) (any, error) { return c.DecodeBatch(b) }, r}
	}
	merge := func(r app.MergeRequest) kind {
		return kind{func() ([]byte, error) { return c.EncodeMerge(r) },
			func(b []byte) (any, error) { return c.DecodeMerge(b) }, r}
	}
	generate := func(r app.GenerateRequest) kind {
		return kind{func() ([]byte, error) { return c.EncodeGenerate(r) },
			func(b []byte) (any, error) { return c.DecodeGenerate(b) }, r}
	}
	edit := func(r app.EditRequest) kind {
		return kind{func() ([]byte, error) { return c.EncodeEdit(r) },
			func(b []byte) (any, error) { return c.DecodeEdit(b) }, r}
	}
	sample := func(r app.SampleRequest) kind {
		return kind{func() ([]byte, error) { return c.EncodeSample(r) },
			func(b []byte) (any, error) { return c.DecodeSample(b) }, r}
	}
	fullSample := app.SampleRequest{EntityType: "company", Fields: []string{"name", "founded"}, ExtraInstructions: &s, SampleCount: &i,
		TypicalObjects: []string{"Acme"}, NamingConvention: "snake_case", Language: &s, EnableWebSearch: true, AutoAnswer: &b,
		Model: "a:b", AttachmentIDs: []string{"att-1"}, PauseTimeoutSeconds: &i}
	// batch_min was made from a nil EntityData: it is written, and read
	// back, as null (as before).
	kinds := map[string]kind{
		"enrich_min":   enrich(app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme"}`), SchemaID: "sch-1"}),
		"enrich_full":  enrich(full),
		"batch_min":    batch(app.BatchRequest{EnrichRequest: app.EnrichRequest{EntityData: json.RawMessage(`null`), SchemaID: "sch-1"}, Entities: []json.RawMessage{json.RawMessage(`{"name":"A"}`)}}),
		"batch_full":   batch(app.BatchRequest{EnrichRequest: full, Entities: []json.RawMessage{json.RawMessage(`{"name":"A"}`), json.RawMessage(`{"name":"B"}`)}, SelectedIndices: []int{0, 1}}),
		"merge_min":    merge(app.MergeRequest{ResultIDs: []string{"r1", "r2"}}),
		"merge_full":   merge(app.MergeRequest{ResultIDs: []string{"r1", "r2"}, ArbitrationModel: &am, AttachmentIDs: []string{"att-1"}, DatabaseSync: &f2}),
		"generate_min": generate(app.GenerateRequest{EntitySamples: json.RawMessage(`[{"name":"Acme"}]`)}),
		"generate_full": generate(app.GenerateRequest{EntitySamples: json.RawMessage(`[{"name":"Acme"}]`), Model: "a:b", Language: &s,
			SampleCommonalityThreshold: &f, StrictFieldConformance: &f2, SaveSchema: &f2, GenerateSemanticIDs: true,
			AttachmentIDs: []string{"att-1"}, SampleInputs: json.RawMessage(`{"entity_type":"company"}`)}),
		"edit_min":    edit(app.EditRequest{SchemaID: "sch-1", Prompt: "add founded"}),
		"edit_full":   edit(app.EditRequest{SchemaID: "sch-1", Prompt: "add founded", Model: "a:b", AttachmentIDs: []string{"att-1"}}),
		"sample_min":  sample(app.SampleRequest{EntityType: "company"}),
		"sample_full": sample(fullSample),
	}
	if len(fx) != len(kinds) {
		t.Fatalf("%d fixtures, %d cases", len(fx), len(kinds))
	}
	for name, k := range kinds {
		t.Run(name, func(t *testing.T) {
			is := is.New(t)
			stored, ok := fx[name]
			is.True(ok) // a fixture per case
			got, err := k.encode()
			is.NoErr(err)
			is.Equal(string(got), stored) // byte for byte what was written before
			back, err := k.decode([]byte(stored))
			is.NoErr(err)
			is.Equal(back, k.want) // rows written before decode
		})
	}

	// Accept-Language is a header, never stored (it was json:"-").
	t.Run("sample drops accept_language", func(t *testing.T) {
		is := is.New(t)
		r := fullSample
		r.AcceptLanguage = "de"
		got, err := c.EncodeSample(r)
		is.NoErr(err)
		is.Equal(string(got), fx["sample_full"])
	})
}

// TestEveryFieldStored: each app request type has as many fields as its
// stored form (Accept-Language aside), so a field added to one is not
// silently dropped by the codec (TestFixtures then needs a new fixture).
func TestEveryFieldStored(t *testing.T) {
	is := is.New(t)
	count := func(v any) int { return reflect.TypeOf(v).NumField() }
	is.Equal(count(app.EnrichRequest{}), 15)
	is.Equal(count(app.BatchRequest{}), 3) // EnrichRequest, Entities, SelectedIndices
	is.Equal(count(app.MergeRequest{}), 4)
	is.Equal(count(app.GenerateRequest{}), 9)
	is.Equal(count(app.EditRequest{}), 4)
	is.Equal(count(app.SampleRequest{}), 13) // 12 stored + AcceptLanguage
}

// TestBadRows: a row that is not a request of the kind is an error.
func TestBadRows(t *testing.T) {
	is := is.New(t)
	c := jobcodec.New()
	_, err := c.DecodeEnrich([]byte(`{"models":"x"}`))
	is.True(err != nil)
	_, err = c.DecodeBatch([]byte(`[`))
	is.True(err != nil)
	_, err = c.DecodeSample([]byte(`{"sample_count":"many"}`))
	is.True(err != nil)
}

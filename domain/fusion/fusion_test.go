package fusion_test

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"testing/quick"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/fusion"
)

func obj(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

var schema = obj(`{"type":"object","properties":{
	"count":{"type":"integer"},
	"summary":{"type":"object","x-multilingual":true,"properties":{"en":{"type":"string"},"fr":{"type":"string"}}},
	"hq":{"type":"object","properties":{"city":{"type":"string"}}}}}`)

func TestFuseRules(t *testing.T) {
	tests := []struct {
		name    string
		a, b, c string // answers of models a, b, c ("" = none)
		path    string
		want    string
		models  []string
		agreed  bool
	}{
		{"string majority", `{"x":"Paris"}`, `{"x":" paris "}`, `{"x":"Lyon"}`, "x", `"Paris"`, []string{"m::a", "m::b"}, false},
		{"string tie goes to the longest", `{"x":"Paris"}`, `{"x":"Lyon"}`, `{"x":"Marseille"}`, "x", `"Marseille"`, []string{"m::c"}, false},
		{"string tie same length: first key", `{"x":"abc"}`, `{"x":"xyz"}`, ``, "x", `"abc"`, []string{"m::a"}, false},
		{"numbers median", `{"n":1}`, `{"n":7}`, `{"n":3}`, "n", `3`, []string{"m::c"}, false},
		{"numbers mean of the middles", `{"n":1}`, `{"n":2}`, ``, "n", `1.5`, []string{"m::a", "m::b"}, false},
		{"integer median stays integral", `{"count":1}`, `{"count":2}`, ``, "count", `1`, []string{"m::a"}, false},
		{"numbers agree after rounding", `{"n":3.14159}`, `{"n":3.14}`, ``, "n", `3.14159`, []string{"m::a", "m::b"}, true},
		{"boolean majority", `{"b":false}`, `{"b":false}`, `{"b":true}`, "b", `false`, []string{"m::a", "m::b"}, false},
		{"boolean tie: true", `{"b":false}`, `{"b":true}`, ``, "b", `true`, []string{"m::b"}, false},
		{"arrays as sets agree", `{"t":["a","B"]}`, `{"t":["b","a"]}`, ``, "t", `["a","B"]`, []string{"m::a", "m::b"}, true},
		{"arrays union", `{"t":["a","b"]}`, `{"t":["B","c"]}`, `{"t":[]}`, "t", `["a","b","c"]`, []string{"m::a", "m::b"}, false},
		{"value beats null", `{"x":null}`, `{"x":"v"}`, `{}`, "x", `"v"`, []string{"m::b"}, true},
		{"objects recursively", `{"hq":{"city":"Oslo"}}`, `{"hq":{"city":"oslo"}}`, `{"hq":{"city":"Bergen"}}`, "hq.city", `"Oslo"`, []string{"m::a", "m::b"}, false},
		{"translation only", `{"summary":{"en":"Big","fr":"Grand"}}`, `{"summary":{"en":"big","fr":"Gros"}}`, ``, "summary", `{"en":"Big","fr":"Grand"}`, []string{"m::a", "m::b"}, true},
		{"multilingual per language", `{"summary":{"en":"Big","fr":"Grand"}}`, `{"summary":{"en":"Small","fr":"Grand"}}`, `{"summary":{"en":"Big","fr":"Petit"}}`, "summary", `{"en":"Big","fr":"Grand"}`, []string{"m::a", "m::c"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			var cs []fusion.Candidate
			for i, s := range []string{tt.a, tt.b, tt.c} {
				if s != "" {
					cs = append(cs, fusion.Candidate{Model: fmt.Sprintf("m::%c", 'a'+i), Value: obj(s)})
				}
			}
			r := fusion.Fuse(cs, fusion.Options{Schema: schema})
			var v any = r.Merged
			for _, k := range splitPath(tt.path) {
				v = v.(map[string]any)[k]
			}
			is.Equal(js(v), tt.want)
			is.Equal(r.Provenance[tt.path].Models, tt.models)
			conflicted := false
			for _, c := range r.Report.Conflicts {
				if c.Path == tt.path && c.NeedsArbitration {
					conflicted = true
				}
			}
			is.Equal(conflicted, !tt.agreed)
			is.Equal(r.Summary.AgreedFields+r.Summary.ConflictedFields, r.Summary.TotalFields)
		})
	}
}

func splitPath(p string) []string {
	var out []string
	cur := ""
	for _, r := range p {
		if r == '.' {
			out = append(out, cur)
			cur = ""
			continue
		}
		cur += string(r)
	}
	return append(out, cur)
}

func TestPriceBreaksTies(t *testing.T) {
	is := is.New(t)
	cs := []fusion.Candidate{
		{Model: "a::cheap", Value: obj(`{"x":"abc"}`), OutputPrice: 1},
		{Model: "z::dear", Value: obj(`{"x":"xyz"}`), OutputPrice: 5},
	}
	r := fusion.Fuse(cs, fusion.Options{})
	is.Equal(r.Merged["x"], "xyz")
	cs[0].OutputPrice, cs[0].InputPrice = 5, 2
	r = fusion.Fuse(cs, fusion.Options{})
	is.Equal(r.Merged["x"], "abc") // same output price, higher input price
}

func TestTranslationOnlyReport(t *testing.T) {
	is := is.New(t)
	r := fusion.Fuse([]fusion.Candidate{
		{Model: "m::a", Value: obj(`{"summary":{"en":"Big","fr":"Grand"}}`)},
		{Model: "m::b", Value: obj(`{"summary":{"en":"Big","fr":"Gros"}}`)},
	}, fusion.Options{Schema: schema})
	is.Equal(len(r.Report.Conflicts), 1)
	c := r.Report.Conflicts[0]
	is.True(c.TranslationOnly)
	is.True(!c.NeedsArbitration)
	is.Equal(r.Summary, fusion.Summary{AgreedFields: 1, ConflictedFields: 0, TotalFields: 1, Method: "rule_based"})
	is.Equal(len(fusion.Arbitrable(r)), 0)
}

func TestWildNumbersEscalate(t *testing.T) {
	tests := []struct {
		a, b float64
		want bool
	}{{10, 101, true}, {10, 100, false}, {0, 1000, false}, {-5, 5, true}, {3, 4, false}}
	for _, tt := range tests {
		r := fusion.Fuse([]fusion.Candidate{{Model: "m::a", Value: map[string]any{"n": tt.a}}, {Model: "m::b", Value: map[string]any{"n": tt.b}}}, fusion.Options{})
		is.New(t).Equal(fusion.Escalate(r), tt.want)
	}
}

func TestApply(t *testing.T) {
	is := is.New(t)
	r := fusion.Fuse([]fusion.Candidate{
		{Model: "m::a", Value: obj(`{"x":"Paris","n":1,"hq":{"city":"Oslo"}}`)},
		{Model: "m::b", Value: obj(`{"x":"Lyon","n":1,"hq":{"city":"Bergen"}}`)},
	}, fusion.Options{})
	is.Equal(r.Merged["x"], "Paris")
	out, err := fusion.Apply(r, map[string]any{"x": "lyon", "hq.city": "Bergen"}, "m::judge")
	is.NoErr(err)
	is.Equal(out.Merged["x"], "lyon")
	is.Equal(out.Merged["hq"].(map[string]any)["city"], "Bergen")
	is.Equal(out.Provenance["x"], fusion.Provenance{Models: []string{"m::b"}, Arbitrated: true})
	is.Equal(out.Summary.Method, "llm")
	is.Equal(out.Summary.ArbitrationModel, "m::judge")
	is.Equal(r.Merged["x"], "Paris") // the rules' result is untouched

	_, err = fusion.Apply(r, map[string]any{"x": "Rome"}, "m::judge")
	is.True(err != nil) // not a candidate
	_, err = fusion.Apply(r, map[string]any{"n": 1.0}, "m::judge")
	is.True(err != nil) // not a conflict
}

// gen makes random answers: small key and value alphabets so that models
// often agree, sometimes only after normalization.
type answer map[string]any

func randValue(r *rand.Rand, depth int) any {
	switch r.Intn(8) {
	case 0:
		return nil
	case 1:
		return []string{"a", "A ", "b", "ccc"}[r.Intn(4)]
	case 2:
		return float64(r.Intn(5)) + []float64{0, 0.001, 0.5}[r.Intn(3)]
	case 3:
		return r.Intn(2) == 0
	case 4:
		n := r.Intn(4)
		arr := make([]any, n)
		for i := range arr {
			arr[i] = []string{"x", "y", "Y", "z"}[r.Intn(4)]
		}
		return arr
	case 5:
		return map[string]any{"en": []string{"one", "One", "two"}[r.Intn(3)], "fr": []string{"un", "deux"}[r.Intn(2)]}
	default:
		if depth > 2 {
			return "leaf"
		}
		return randObject(r, depth+1)
	}
}

func randObject(r *rand.Rand, depth int) map[string]any {
	m := map[string]any{}
	for _, k := range []string{"p", "q", "summary", "s"} {
		if r.Intn(3) > 0 {
			m[k] = randValue(r, depth)
		}
	}
	return m
}

func (answer) Generate(r *rand.Rand, _ int) reflect.Value {
	return reflect.ValueOf(answer(randObject(r, 0)))
}

var propSchema = obj(`{"type":"object","properties":{"summary":{"type":"object","x-multilingual":true}}}`)

func TestPropertySelfFusion(t *testing.T) {
	f := func(a answer) bool {
		self := fusion.Fuse([]fusion.Candidate{{Model: "m::a", Value: a}, {Model: "m::b", Value: a}}, fusion.Options{Schema: propSchema})
		one := fusion.Fuse([]fusion.Candidate{{Model: "m::a", Value: a}}, fusion.Options{Schema: propSchema})
		return reflect.DeepEqual(self.Merged, map[string]any(a)) && reflect.DeepEqual(one.Merged, map[string]any(a)) &&
			len(self.Report.Conflicts) == 0 && self.Summary.ConflictedFields == 0
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 500}); err != nil {
		t.Fatal(err)
	}
}

func TestPropertyOrderDoesNotMatter(t *testing.T) {
	f := func(a, b, c answer, prices [3]uint8, seed int64) bool {
		cs := []fusion.Candidate{
			{Model: "m::a", Value: a, OutputPrice: int64(prices[0] % 3)},
			{Model: "m::b", Value: b, OutputPrice: int64(prices[1] % 3)},
			{Model: "m::c", Value: c, OutputPrice: int64(prices[2] % 3)},
		}
		want := fusion.Fuse(cs, fusion.Options{Schema: propSchema})
		r := rand.New(rand.NewSource(seed))
		r.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
		got := fusion.Fuse(cs, fusion.Options{Schema: propSchema})
		return js(got.Merged) == js(want.Merged) && js(got.Provenance) == js(want.Provenance) && js(got.Report) == js(want.Report) &&
			got.Summary.AgreedFields+got.Summary.ConflictedFields == got.Summary.TotalFields
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 500}); err != nil {
		t.Fatal(err)
	}
}

func TestPropertyIdenticalAnswersAgree(t *testing.T) {
	f := func(a answer, n uint8) bool {
		var cs []fusion.Candidate
		for i := 0; i < 2+int(n%4); i++ {
			cs = append(cs, fusion.Candidate{Model: fmt.Sprintf("m::%d", i), Value: a})
		}
		r := fusion.Fuse(cs, fusion.Options{Schema: propSchema})
		return len(r.Report.Conflicts) == 0 && r.Summary.AgreedFields == r.Summary.TotalFields
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 300}); err != nil {
		t.Fatal(err)
	}
}

// TestAnnotated: the merged result as clients read it carries
// _arbitration_metadata {method, arbitration_model} from the summary; the
// result's own merged map stays clean.
func TestAnnotated(t *testing.T) {
	tests := []struct {
		name    string
		summary fusion.Summary
		want    map[string]any
	}{
		{"rules", fusion.Summary{Method: fusion.MethodRuleBased}, map[string]any{"method": "rule_based", "arbitration_model": nil}},
		{"arbiter", fusion.Summary{Method: fusion.MethodLLM, ArbitrationModel: "q::judge"},
			map[string]any{"method": "llm", "arbitration_model": "q::judge"}},
		{"failed arbiter", fusion.Summary{Method: fusion.MethodRuleBased, ArbitrationModel: "q::judge"},
			map[string]any{"method": "rule_based", "arbitration_model": "q::judge"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			is := is.New(t)
			r := fusion.Result{Merged: obj(`{"name":"Acme","hq":{"city":"Paris"}}`), Summary: tc.summary}
			got := r.Annotated()
			is.Equal(got[fusion.MetadataKey], tc.want)
			is.Equal(fusion.MetadataKey, "_arbitration_metadata")
			delete(got, fusion.MetadataKey)
			is.Equal(got, obj(`{"name":"Acme","hq":{"city":"Paris"}}`))
			_, dirty := r.Merged[fusion.MetadataKey]
			is.True(!dirty)
		})
	}
}

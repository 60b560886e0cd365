package sample_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/sample"
)

func TestConvention(t *testing.T) {
	for _, tt := range []struct {
		conv     sample.Convention
		in, want string
	}{
		{sample.ConventionSnake, "Product Name", "product_name"},
		{sample.ConventionSnake, "productName", "product_name"},
		{sample.ConventionSnake, "HTTPStatus", "http_status"},
		{sample.ConventionSnake, "founded-year", "founded_year"},
		{sample.ConventionCamel, "product_name", "productName"},
		{sample.ConventionCamel, "Product Name", "productName"},
		{sample.ConventionCamel, "name", "name"},
		{sample.ConventionAuto, "productName", "productName"},
		{sample.ConventionAuto, "product name", "product_name"},
		{sample.ConventionAuto, "", ""},
	} {
		if got := tt.conv.Apply(tt.in); got != tt.want {
			t.Errorf("%s(%q) = %q, want %q", tt.conv, tt.in, got, tt.want)
		}
	}
	for _, tt := range []struct {
		in   string
		want sample.Convention
		ok   bool
	}{{"", sample.ConventionAuto, true}, {"auto", sample.ConventionAuto, true}, {"snake_case", sample.ConventionSnake, true},
		{"camelCase", sample.ConventionCamel, true}, {"kebab-case", "", false}, {"CamelCase", "", false}} {
		got, err := sample.ParseConvention(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseConvention(%q) = %q, %v", tt.in, got, err)
		}
	}
}

func TestInstancesAndFieldSet(t *testing.T) {
	is := is.New(t)
	is.Equal(sample.Instances("company", []string{"Apple Inc.", " "}, 3), []string{"Apple Inc.", "company #2", "company #3"})
	first := map[string]any{"zeta": 1, "name": "x", "alpha": true, "size": 2}
	is.Equal(sample.FieldSet(first, []string{"Name", "size", "missing"}, sample.ConventionSnake), []string{"name", "size", "alpha", "zeta"})
	got, err := sample.Fit(map[string]any{"name": "y", "size": nil, "extra": 1}, []string{"name", "size"})
	is.NoErr(err)
	is.Equal(got, map[string]any{"name": "y", "size": nil}) // null allowed, extras dropped
	_, err = sample.Fit(map[string]any{"name": "y"}, []string{"name", "size"})
	is.True(err != nil)
}

func question(id string, def string, multi bool) job.SampleQuestion {
	return job.SampleQuestion{ID: id, Text: "which?", AllowMultiple: multi, DefaultOptionID: def,
		Options: []job.SampleOption{{ID: "a", Label: "A"}, {ID: "b", Label: "B"}}}
}

func TestResolve(t *testing.T) {
	is := is.New(t)
	qs := []job.SampleQuestion{question("q1", "b", false), question("q2", "a", true), question("q3", "", false), question("q4", "a", false)}
	got := sample.Resolve(qs, job.Answers{
		"q1": {OptionIDs: []string{"a", "b"}},       // one only
		"q2": {OptionIDs: []string{"b", "zz", "a"}}, // unknown dropped, several kept
		"q4": {Text: "my own words"},                // text instead of an option
		"qx": {OptionIDs: []string{"a"}},            // no such question
	})
	is.Equal(got, job.Answers{"q1": {OptionIDs: []string{"a"}}, "q2": {OptionIDs: []string{"b", "a"}},
		"q3": {OptionIDs: []string{"a"}}, "q4": {Text: "my own words"}})
	is.Equal(sample.Resolve(qs[:1], nil), job.Answers{"q1": {OptionIDs: []string{"b"}}}) // auto_answer: the default
}

func TestCheckQuestions(t *testing.T) {
	ok := question("q1", "a", false)
	for _, tt := range []struct {
		name string
		qs   []job.SampleQuestion
		bad  bool
	}{
		{"none", nil, false},
		{"good", []job.SampleQuestion{ok}, false},
		{"duplicate id", []job.SampleQuestion{ok, ok}, true},
		{"no text", []job.SampleQuestion{{ID: "q", Options: ok.Options}}, true},
		{"one option", []job.SampleQuestion{{ID: "q", Text: "t", Options: ok.Options[:1]}}, true},
		{"default not an option", []job.SampleQuestion{{ID: "q", Text: "t", Options: ok.Options, DefaultOptionID: "z"}}, true},
		{"too many", []job.SampleQuestion{question("1", "", false), question("2", "", false), question("3", "", false),
			question("4", "", false), question("5", "", false), question("6", "", false)}, true},
	} {
		if err := sample.CheckQuestions(tt.qs); (err != nil) != tt.bad {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

func TestParamsRoundTrip(t *testing.T) {
	is := is.New(t)
	p := sample.Params{EntityType: "company", Fields: []string{"name"}, Convention: sample.ConventionSnake, Index: 2, Total: 3,
		Instance: "Acme", AskQuestions: true, Answers: job.Answers{"q": {OptionIDs: []string{"a"}}}}
	var text string
	for _, m := range sample.Prompt(p) {
		text += m.Content + "\n"
	}
	got, ok := sample.ParseParams(text)
	is.True(ok)
	is.Equal(got.EntityType, "company")
	is.Equal(got.Index, 2)
	is.Equal(got.Answers["q"].OptionIDs, []string{"a"})
	_, ok = sample.ParseParams("no parameters here")
	is.True(!ok)
	s := sample.AnswerSchema(sample.Params{FieldSet: []string{"a", "b"}})
	is.Equal(s["required"], []any{"sample"}) // no questions once the field set is fixed
}

func TestAnswersCheck(t *testing.T) {
	long := make([]byte, job.MaxAnswerText+1)
	for _, tt := range []struct {
		a   job.Answers
		bad bool
	}{
		{nil, false},
		{job.Answers{"q": {OptionIDs: []string{"a"}, Text: "x"}}, false},
		{job.Answers{"": {}}, true},
		{job.Answers{"q": {Text: string(long)}}, true},
		{job.Answers{"q": {OptionIDs: make([]string, job.MaxAnswerOptions+1)}}, true},
	} {
		if err := tt.a.Check(); (err != nil) != tt.bad {
			t.Errorf("%v: %v", tt.a, err)
		}
	}
}

// FuzzConvention: naming never panics; a snake_case name is a fixed point of
// snake_case, and a camelCase name holds no separator.
func FuzzConvention(f *testing.F) {
	for _, s := range []string{"Product Name", "productName", "HTTPStatus", "a__b", "ÉtéÉlan", "x1Y2", "0 a0", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		snake := sample.ConventionSnake.Apply(s)
		if again := sample.ConventionSnake.Apply(snake); again != snake && snake != s {
			t.Errorf("snake_case: %q -> %q -> %q", s, snake, again)
		}
		if camel := sample.ConventionCamel.Apply(s); camel != s && strings.ContainsAny(camel, " _-") {
			t.Errorf("camelCase: %q -> %q", s, camel)
		}
		_, _ = sample.ParseConvention(s)
	})
}

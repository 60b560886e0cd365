package fusion_test

import (
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/fusion"
	"github.com/entityenrich/enrich/domain/job"
)

// TestArbiterView: the arbiter is shown each conflict's path, type (a
// scalar's value type when known) and non-null candidates, as the prompt
// showed them before the view moved here.
func TestArbiterView(t *testing.T) {
	is := is.New(t)
	got := fusion.ArbiterView([]fusion.Conflict{
		{Path: "founded", FieldType: "scalar", ValueType: "number", ValuesByModel: map[string]any{"a:b": 1947.0, "c:d": nil}},
		{Path: "tags", FieldType: "array", ValuesByModel: map[string]any{"a:b": []any{"x"}, "c:d": []any{"y"}}},
	})
	is.Equal(string(got), `[{"path":"founded","field_type":"number","candidates":{"a:b":1947}},`+
		`{"path":"tags","field_type":"array","candidates":{"a:b":["x"],"c:d":["y"]}}]`)
	is.Equal(string(fusion.ArbiterView(nil)), `[]`)
}

// TestParseDecisions: the arbiter's answer; decisions absent or null are
// nil (the rules then stand).
func TestParseDecisions(t *testing.T) {
	for _, tt := range []struct {
		answer string
		want   []job.Decision
		bad    bool
	}{
		{`{"decisions":[{"path":"a","value":1,"reason":"r"}]}`, []job.Decision{{Path: "a", Value: 1.0, Reason: "r"}}, false},
		{`{"decisions":[]}`, []job.Decision{}, false},
		{`{}`, nil, false},
		{`{"decisions":null}`, nil, false},
		{`not json`, nil, true},
	} {
		t.Run(tt.answer, func(t *testing.T) {
			is := is.New(t)
			got, err := job.ParseDecisions([]byte(tt.answer))
			is.Equal(err != nil, tt.bad)
			is.Equal(got, tt.want)
		})
	}
}

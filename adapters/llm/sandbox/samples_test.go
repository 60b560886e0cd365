package sandbox_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/matryer/is"
	"github.com/tmc/langchaingo/llms"

	"github.com/entityenrich/enrich/adapters/llm/sandbox"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/sample"
)

func askSample(t *testing.T, p sample.Params) sample.Answer {
	t.Helper()
	var msgs []llms.MessageContent
	for _, m := range sample.Prompt(p) {
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeHuman, m.Content))
	}
	resp, err := sandbox.New("echo", 0).GenerateContent(context.Background(), msgs,
		llms.WithMetadata(map[string]any{sandbox.MetadataTask: "sample_generation"}))
	if err != nil {
		t.Fatal(err)
	}
	var a sample.Answer
	if err := json.Unmarshal([]byte(resp.Choices[0].Content), &a); err != nil {
		t.Fatalf("answer %q: %v", resp.Choices[0].Content, err)
	}
	return a
}

// TestSandboxSamples: samples fit the fields and entity type asked, differ per
// instance, repeat for the same call, and the clarification rule asks about
// vague types and the fields "size" and "value" only.
func TestSandboxSamples(t *testing.T) {
	is := is.New(t)
	base := sample.Params{EntityType: "company", Convention: sample.ConventionAuto, Total: 3, AskQuestions: true}
	a := askSample(t, base)
	is.Equal(len(a.Questions), 0) // "company" is clear
	for _, f := range []string{"name", "industry", "founded_year", "employee_count"} {
		_, ok := a.Sample[f]
		is.True(ok)
	}
	is.Equal(askSample(t, base), a) // deterministic
	b := base
	b.Index, b.AskQuestions = 1, false
	b.FieldSet = []string{"name", "industry"}
	other := askSample(t, b)
	is.Equal(len(other.Sample), 2)
	is.True(other.Sample["name"] != a.Sample["name"]) // another instance

	named := base
	named.Instance, named.Fields, named.Convention = "Apple Inc.", []string{"Company Name", "website"}, sample.ConventionCamel
	n := askSample(t, named)
	is.Equal(n.Sample["companyName"], "Apple Inc.")
	is.Equal(n.Sample["website"], "https://www.apple-inc.example")

	vague := sample.Params{EntityType: "Thing", Fields: []string{"name", "size", "value"}, Total: 1, AskQuestions: true}
	q := askSample(t, vague)
	is.Equal(len(q.Questions), 3)
	is.Equal(q.Questions[0].ID, "entity_kind")
	is.NoErr(sample.CheckQuestions(q.Questions))
	_, isText := q.Sample["size"].(string)
	is.True(isText) // the default reading: dimensions
	vague.AskQuestions = false
	vague.Questions = q.Questions
	vague.Answers = job.Answers{"field_size": {OptionIDs: []string{"count"}}, "field_value": {OptionIDs: []string{"rating"}}}
	ans := askSample(t, vague)
	is.Equal(ans.Questions, nil)
	_, isNum := ans.Sample["size"].(float64)
	is.True(isNum)
	r, _ := ans.Sample["value"].(float64)
	is.True(r >= 1 && r <= 5)
}

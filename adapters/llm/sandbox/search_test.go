package sandbox_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/matryer/is"
	"github.com/tmc/langchaingo/llms"

	"github.com/entityenrich/enrich/adapters/llm/sandbox"
)

// TestSearchModel: sandbox::search, asked to search, answers as echo does
// with its own seed and reports one web search and the pages it cites, on
// .example, the same every time; not asked, it reports none; another
// sandbox model asked to search refuses.
func TestSearchModel(t *testing.T) {
	schema := `{"type":"object","required":["name","employees"],"properties":{"name":{"type":"string"},"employees":{"type":"integer","minimum":1}}}`
	prompt := "JSON Schema:\n" + schema + "\nKnown attributes of the entity:\n{\"name\":\"Acme Corp\"}\n"
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, prompt)}
	search := llms.WithMetadata(map[string]any{sandbox.MetadataWebSearch: true})
	want := []sandbox.Citation{
		{Type: "url_citation", URL: "https://acme-corp.example/", Title: "Acme Corp: official site"},
		{Type: "url_citation", URL: "https://encyclopedia.example/wiki/acme-corp", Title: "Acme Corp - Encyclopedia"},
	}
	tests := []struct {
		name      string
		model     string
		opts      []llms.CallOption
		searches  int
		citations []sandbox.Citation
		err       error
	}{
		{"searching", sandbox.SearchModel, []llms.CallOption{search}, 1, want, nil},
		{"not asked to search", sandbox.SearchModel, nil, 0, nil, nil},
		{"web search off", sandbox.SearchModel,
			[]llms.CallOption{llms.WithMetadata(map[string]any{sandbox.MetadataWebSearch: false})}, 0, nil, nil},
		{"echo cannot search", "echo", []llms.CallOption{search}, 0, nil, sandbox.ErrCannotSearch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			m := sandbox.New(tt.model, 0)
			resp, err := m.GenerateContent(context.Background(), msgs, tt.opts...)
			if tt.err != nil {
				is.True(errors.Is(err, tt.err))
				return
			}
			is.NoErr(err)
			c := resp.Choices[0]
			is.Equal(c.Content, marshal(t, sandbox.Generate(obj(t, schema), map[string]any{"name": "Acme Corp"}, tt.model)))
			is.Equal(sandbox.Searches(c.GenerationInfo), tt.searches)
			got, _ := c.GenerationInfo[sandbox.InfoCitations].([]sandbox.Citation)
			is.Equal(got, tt.citations)
			again, err := m.GenerateContent(context.Background(), msgs, tt.opts...)
			is.NoErr(err)
			is.Equal(again.Choices[0].Content, c.Content) // deterministic
			is.Equal(again.Choices[0].GenerationInfo, c.GenerationInfo)
		})
	}
}

// TestSearchSpec: sandbox::search is the one sandbox model that declares
// web search.
func TestSearchSpec(t *testing.T) {
	is := is.New(t)
	searching := 0
	for _, s := range sandbox.Specs() {
		if s.WebSearch {
			searching++
			is.Equal(s.Name, sandbox.SearchModel)
		}
	}
	is.Equal(searching, 1)
}

func marshal(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

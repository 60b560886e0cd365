package sandbox_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/matryer/is"
	"github.com/tmc/langchaingo/llms"

	"github.com/entityenrich/enrich/adapters/llm/sandbox"
)

func TestModelSchemaSources(t *testing.T) {
	schema := `{"type":"object","required":["n"],"properties":{"n":{"type":"integer","minimum":5,"maximum":5}}}`
	prompt := "JSON Schema:\n" + schema + "\nKnown attributes of the entity:\n{\"n\":5}\n"
	tests := []struct {
		name string
		msgs []llms.MessageContent
		opts []llms.CallOption
		want string
	}{
		{"from prompt", []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, prompt)}, nil, `{"n":5}`},
		{"from metadata map", []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")},
			[]llms.CallOption{llms.WithMetadata(map[string]any{sandbox.MetadataSchema: obj(t, schema)})}, `{"n":5}`},
		{"from metadata raw", []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")},
			[]llms.CallOption{llms.WithMetadata(map[string]any{sandbox.MetadataSchema: json.RawMessage(schema)})}, `{"n":5}`},
		{"metadata wins", []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "JSON Schema:\n{\"type\":\"object\"}")},
			[]llms.CallOption{llms.WithMetadata(map[string]any{sandbox.MetadataSchema: schema})}, `{"n":5}`},
		{"no schema", []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")}, nil, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			resp, err := sandbox.New("echo", 0).GenerateContent(context.Background(), tt.msgs, tt.opts...)
			is.NoErr(err)
			is.Equal(len(resp.Choices), 1)
			is.Equal(resp.Choices[0].Content, tt.want)
			info := resp.Choices[0].GenerationInfo
			is.True(info["PromptTokens"].(int) > 0)
			is.Equal(info["CompletionTokens"], (len(tt.want)+3)/4)
		})
	}
}

func TestModelCall(t *testing.T) {
	is := is.New(t)
	out, err := sandbox.New("alt", 0).Call(context.Background(), "JSON Schema:\n{\"type\":\"object\",\"properties\":{\"ok\":{\"const\":true}}}")
	is.NoErr(err)
	is.Equal(out, `{"ok":true}`)
}

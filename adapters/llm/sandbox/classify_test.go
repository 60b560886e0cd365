package sandbox_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/matryer/is"
	"github.com/tmc/langchaingo/llms"

	"github.com/entityenrich/enrich/adapters/llm/sandbox"
	"github.com/entityenrich/enrich/domain/enrichment"
)

func askClassification(t *testing.T, model string, entity map[string]any, retry bool) (enrichment.Classification, error) {
	t.Helper()
	raw, _ := json.Marshal(entity)
	p := enrichment.ClassificationPrompt(enrichment.ClassificationInput{SchemaName: "Company", Description: "businesses",
		Entity: string(raw)})
	msgs := []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeSystem, p[0].Content), llms.TextParts(llms.ChatMessageTypeHuman, p[1].Content)}
	if retry {
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeAI, "{}"))
	}
	resp, err := sandbox.New(model, 0).GenerateContent(context.Background(), msgs,
		llms.WithMetadata(map[string]any{sandbox.MetadataTask: "classification"}))
	if err != nil {
		t.Fatal(err)
	}
	return enrichment.ParseClassification(resp.Choices[0].Content)
}

func TestSandboxClassification(t *testing.T) {
	for _, tt := range []struct {
		name       string
		entity     map[string]any
		status     enrichment.ClassificationStatus
		confidence float64
	}{
		{"no kind", map[string]any{"name": "Acme"}, enrichment.ClassMatch, 0.9},
		{"kind in the schema's name", map[string]any{"kind": "Company"}, enrichment.ClassMatch, 0.95},
		{"kind in the description", map[string]any{"type": "business"}, enrichment.ClassMatch, 0.95},
		{"confident mismatch", map[string]any{"kind": "person"}, enrichment.ClassMismatch, 0.9},
		{"soft mismatch", map[string]any{"entity_type": "person?"}, enrichment.ClassMismatch, 0.4},
		{"unknown", map[string]any{"kind": "unknown"}, enrichment.ClassUnknown, 0.3},
		{"ambiguous", map[string]any{"kind": "ambiguous"}, enrichment.ClassAmbiguous, 0.5},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			c, err := askClassification(t, "echo", tt.entity, false)
			is.NoErr(err)
			is.Equal(c.Status, tt.status)
			is.Equal(c.Confidence, tt.confidence)
			is.Equal(c.ExpectedType, "Company")
		})
	}
	is := is.New(t)
	_, err := askClassification(t, "broken", map[string]any{"kind": "person"}, true)
	is.True(err != nil) // broken never answers one
	_, err = askClassification(t, "flaky", map[string]any{"kind": "person"}, false)
	is.True(err != nil) // flaky's first answer is unusable
	c, err := askClassification(t, "flaky", map[string]any{"kind": "person"}, true)
	is.NoErr(err) // its retry is fine
	is.Equal(c.Status, enrichment.ClassMismatch)
}

package sandbox_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/matryer/is"
	"github.com/tmc/langchaingo/llms"

	"github.com/entityenrich/enrich/adapters/llm/sandbox"
	"github.com/entityenrich/enrich/domain/ambiguity"
	"github.com/entityenrich/enrich/ports"
)

// askAmbiguity asks a sandbox model the ambiguity task about sample.
func askAmbiguity(t *testing.T, model string, sample string, describe, retry bool) ambiguity.Answer {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(sample), &m); err != nil {
		t.Fatal(err)
	}
	var msgs []llms.MessageContent
	for _, p := range ambiguity.Prompt(ambiguity.FromSample(m), nil, describe) {
		role := llms.ChatMessageTypeHuman
		if p.Role == "system" {
			role = llms.ChatMessageTypeSystem
		}
		msgs = append(msgs, llms.TextParts(role, p.Content))
	}
	if retry {
		msgs = append(msgs, llms.TextParts(llms.ChatMessageTypeAI, "{}"), llms.TextParts(llms.ChatMessageTypeHuman, "again"))
	}
	resp, err := sandbox.New(model, 0).GenerateContent(context.Background(), msgs, llms.WithMetadata(map[string]any{
		sandbox.MetadataSchema: ambiguity.AnswerSchema(describe), sandbox.MetadataTask: string(ports.TaskAmbiguity)}))
	if err != nil {
		t.Fatal(err)
	}
	var a ambiguity.Answer
	if err := json.Unmarshal([]byte(resp.Choices[0].Content), &a); err != nil {
		t.Fatalf("answer %q: %v", resp.Choices[0].Content, err)
	}
	return a
}

func TestSandboxAmbiguity(t *testing.T) {
	is := is.New(t)
	const sample = `{"name":"Acme","size":"large","Value":3,"website":"acme.com","board":[{"full_name":"Ann","role":"chair"}]}`
	a := askAmbiguity(t, "echo", sample, false, false)
	is.Equal(len(a.Findings), 2) // size and Value; name and website are clear
	is.Equal(a.Findings[0].Path, "Value")
	is.Equal(a.Findings[1].Path, "size")
	is.Equal(a.Findings[1].Level, ambiguity.High)
	is.True(len(a.Findings[1].Interpretations) >= 2 && len(a.Findings[1].Interpretations) <= 4)
	is.True(len(a.Findings[1].SuggestedNames) >= 1 && len(a.Findings[1].SuggestedNames) <= 3)
	is.Equal(a.Findings[1].SuggestedDescription, "") // not asked for
	is.Equal(len(a.IdentityScoping), 1)
	is.Equal(a.IdentityScoping[0].EntityFields, []string{"full_name"})
	is.Equal(a.IdentityScoping[0].PairFields, []string{"role"})
	is.Equal(a.IdentityScoping[0].SuggestedEntityName, "Board")

	// Deterministic, and the same for every seed.
	is.Equal(askAmbiguity(t, "alt", sample, false, false), a)
	// The saved-schema check asks for descriptions.
	d := askAmbiguity(t, "echo", sample, true, false)
	is.Equal(d.Findings[1].SuggestedDescription, "Number of employees of the entity.")
	// Nothing ambiguous: nothing reported.
	none := askAmbiguity(t, "echo", `{"name":"Acme","website":"acme.com"}`, false, false)
	is.Equal(len(none.Findings), 0)
	is.Equal(len(none.IdentityScoping), 0)
	// flaky is invalid once, broken always.
	is.Equal(askAmbiguity(t, "flaky", sample, false, false).Findings[0].Level, ambiguity.Level(""))
	is.Equal(len(askAmbiguity(t, "flaky", sample, false, true).Findings), 2)
	is.Equal(askAmbiguity(t, "broken", sample, false, true).Findings[0].Level, ambiguity.Level(""))
}

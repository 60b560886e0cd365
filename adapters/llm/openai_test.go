package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// TestResponseSchemaReachesTheProvider: a call that asks for the schema
// channel (enable_response_schema) is sent with response_format json_schema
// carrying its schema, strict where asked and supported; other calls, and
// models the catalog gives no such channel, keep json_object.
func TestResponseSchemaReachesTheProvider(t *testing.T) {
	fake := fakeopenai.New(t, fakeopenai.WithModels("full", "loose", "plain"))
	r, err := llm.NewRegistry(llm.Config{Timeout: 2 * time.Second,
		Providers: []llm.ProviderConfig{{Name: "local", Type: llm.TypeOpenAI, BaseURL: fake.URL(), APIKey: "k",
			Models: []string{"full", "loose", "plain"}}},
		Catalog: llm.Catalog{
			"full":  {Model: "full", StructuredOutput: true, StrictSchema: true},
			"loose": {Model: "loose", StructuredOutput: true},
			"plain": {Model: "plain"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		model          string
		schema, strict bool
		wantType       string
		wantStrict     bool
	}{
		{"full", true, true, "json_schema", true},
		{"full", true, false, "json_schema", false},
		{"full", false, true, "json_object", false},
		{"loose", true, true, "json_schema", false}, // strict asked, not supported
		{"plain", true, true, "json_object", false}, // no schema channel
	} {
		t.Run(tt.model, func(t *testing.T) {
			is := is.New(t)
			req := request(t, "local::"+tt.model, companySchema, acme)
			req.ResponseSchema, req.Strict = tt.schema, tt.strict
			resp, err := r.Generate(context.Background(), req)
			is.NoErr(err)
			is.NoErr(validate(t, req.Schema, resp.Text)) // answered to the schema
			got, _ := fake.LastRequest()
			is.Equal(got.ResponseFormat["type"], tt.wantType)
			if tt.wantType != "json_schema" {
				return
			}
			js, _ := got.ResponseFormat["json_schema"].(map[string]any)
			is.Equal(js["strict"], tt.wantStrict)
			is.Equal(js["name"], req.SchemaName)
			sch, _ := js["schema"].(map[string]any)
			is.Equal(sch["type"], req.Schema["type"])
			is.Equal(len(sch["properties"].(map[string]any)), len(req.Schema["properties"].(map[string]any)))
		})
	}
}

// TestOpenAIChatRequest: the chat completion on the wire carries the model,
// temperature 0 (omitted for a reasoning model, which refuses it), the
// call's token limit, and no enrich metadata.
func TestOpenAIChatRequest(t *testing.T) {
	fake := fakeopenai.New(t, fakeopenai.WithAPIKey("k"))
	r, err := llm.NewRegistry(llm.Config{Timeout: 2 * time.Second,
		Providers: []llm.ProviderConfig{{Name: "local", Type: llm.TypeOpenAI, BaseURL: fake.URL(), APIKey: "k",
			Models: []string{"plain", "thinker"}}},
		Catalog: llm.Catalog{"thinker": {Model: "thinker", Reasoning: true}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		model       string
		temperature any
	}{{"plain", 0.0}, {"thinker", nil}} {
		t.Run(tt.model, func(t *testing.T) {
			is := is.New(t)
			_, err := r.Generate(context.Background(), request(t, "local::"+tt.model, companySchema, acme))
			is.NoErr(err)
			got, _ := fake.LastRequest()
			var body map[string]any
			is.NoErr(json.Unmarshal(got.Body, &body))
			is.Equal(body["model"], tt.model)
			is.Equal(body["temperature"], tt.temperature)
			is.Equal(body["max_completion_tokens"], nil) // no limit unless the call sets one
			is.Equal(body["metadata"], nil)
			is.Equal(got.Authorization, "Bearer k")
		})
	}
	t.Run("TestKey sets a limit", func(t *testing.T) {
		is := is.New(t)
		is.NoErr(r.TestKey(context.Background(), "local", *cred("k1", 1, "k", nil)))
		got, _ := fake.LastRequest()
		var body map[string]any
		is.NoErr(json.Unmarshal(got.Body, &body))
		is.Equal(body["max_completion_tokens"], float64(16))
	})
}

// TestOpenAIEmbeddings: embeddings go through openai-go behind langchaingo's
// embeddings interface, in batches, paid by the credential's key, vectors in
// the texts' order (the fake lists them in reverse), usage summed; failures
// are classified like a chat's.
func TestOpenAIEmbeddings(t *testing.T) {
	is := is.New(t)
	fake := fakeopenai.New(t, fakeopenai.WithAPIKey("sk-embed-good-0001"))
	r := newRegistry(t, fake, nil)
	texts := make([]string, 300) // more than one batch
	for i := range texts {
		texts[i] = fmt.Sprintf("entity %d\nwith a second line", i)
	}
	req := ports.EmbedRequest{Model: key("local::text-embedding-3-small"), Texts: texts,
		Credential: cred("k1", 1, "sk-embed-good-0001", nil)}
	resp, err := r.Embed(context.Background(), req)
	is.NoErr(err)
	is.Equal(len(resp.Vectors), len(texts))
	for i, text := range texts {
		is.Equal(resp.Vectors[i], fakeopenai.Vector(text, fakeopenai.EmbeddingDims))
	}
	is.Equal(fake.Requests(), 2)
	want := 0
	for _, got := range fake.AllRequests() {
		is.Equal(got.API, "embeddings")
		is.Equal(got.Model, "text-embedding-3-small") // any model of the provider, declared or not
		is.Equal(got.Authorization, "Bearer sk-embed-good-0001")
		for _, in := range got.Input {
			want += (len(in) + 3) / 4
		}
	}
	is.Equal(resp.InputTokens, want)
	is.Equal(fake.AllRequests()[0].Input[0], texts[0]) // new lines kept

	t.Run("failures", func(t *testing.T) {
		is := is.New(t)
		fake.FailNext(1, http.StatusTooManyRequests)
		_, err := r.Embed(context.Background(), req)
		var rl *ports.RateLimitError
		is.True(errors.As(err, &rl))
		is.Equal(rl.RetryAfter, time.Second)
		bad := req
		bad.Credential = cred("k2", 1, "sk-embed-bad-0002", nil)
		_, err = r.Embed(context.Background(), bad)
		is.True(errors.Is(err, ports.ErrLLMAuth))
		is.True(!strings.Contains(err.Error(), "sk-embed-bad-0002"))
	})
	t.Run("no embeddings", func(t *testing.T) {
		is := is.New(t)
		_, err := r.Embed(context.Background(), ports.EmbedRequest{Model: key("sandbox::echo"), Texts: texts})
		is.True(errors.Is(err, ports.ErrInvalid))
		_, err = r.Embed(context.Background(), ports.EmbedRequest{Model: key("nope::m"), Texts: texts})
		is.True(errors.Is(err, ports.ErrUnknownModel))
	})
}

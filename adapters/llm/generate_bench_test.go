package llm_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/entityenrich/enrich/adapters/llm"
)

// cannedChat answers every request with one chat completion without a
// network, so that a benchmark measures the client's own work: encoding the
// request, reading the answer, classifying.
type cannedChat struct{}

const cannedAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,` +
	`"message":{"role":"assistant","content":"{\"name\":\"Acme Corp\",\"industry\":\"retail\",\"employees\":42,\"hq\":{\"city\":\"Lyon\"}}"},` +
	`"finish_reason":"stop"}],"usage":{"prompt_tokens":300,"completion_tokens":30,"total_tokens":330}}`

func (cannedChat) RoundTrip(r *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, r.Body)
	_ = r.Body.Close()
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(cannedAnswer)), Request: r}, nil
}

// BenchmarkGenerateOpenAI is the CPU one enrichment call costs in the
// OpenAI-compatible client, the provider path's part of enrich's own cost.
func BenchmarkGenerateOpenAI(b *testing.B) {
	for _, bc := range []struct {
		name   string
		schema bool
	}{{"json_object", false}, {"json_schema", true}} {
		b.Run(bc.name, func(b *testing.B) {
			r, err := llm.NewRegistry(llm.Config{HTTPClient: &http.Client{Transport: cannedChat{}},
				Providers: []llm.ProviderConfig{{Name: "local", Type: "openai", BaseURL: "http://127.0.0.1:9/v1", APIKey: "sk-test",
					Models: []string{"m"}}},
				Catalog: llm.Catalog{"m": {Model: "m", StructuredOutput: true, StrictSchema: true}}})
			if err != nil {
				b.Fatal(err)
			}
			req := request(b, "local::m", companySchema, acme)
			req.ResponseSchema = bc.schema
			b.ReportAllocs()
			for b.Loop() {
				resp, err := r.Generate(context.Background(), req)
				if err != nil || resp.Text == "" || resp.InputTokens != 300 {
					b.Fatal(resp, err)
				}
			}
		})
	}
}

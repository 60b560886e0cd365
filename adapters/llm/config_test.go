package llm_test

import (
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/llm"
)

func TestProvidersFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    []llm.ProviderConfig
		wantErr string
	}{
		{"none", []string{"PATH=/bin", "ENRICH_SANDBOX=true"}, []llm.ProviderConfig{}, ""},
		{"design example", []string{
			"ENRICH_PROVIDER_LOCAL_TYPE=openai",
			"ENRICH_PROVIDER_LOCAL_BASE_URL=http://127.0.0.1:8000/v1",
			"ENRICH_PROVIDER_LOCAL_MODELS=qwen3",
		}, []llm.ProviderConfig{{Name: "local", Type: "openai", BaseURL: "http://127.0.0.1:8000/v1", Models: []string{"qwen3"}}}, ""},
		{"several, sorted, trimmed", []string{
			"ENRICH_PROVIDER_Z_AI_TYPE=Anthropic",
			"ENRICH_PROVIDER_Z_AI_API_KEY=sk-ant-x",
			"ENRICH_PROVIDER_Z_AI_MODELS= claude-a , ,claude-b,claude-a",
			"ENRICH_PROVIDER_OL_TYPE=ollama",
			"ENRICH_PROVIDER_OL_MODELS=llama3.2:3b",
		}, []llm.ProviderConfig{
			{Name: "ol", Type: "ollama", Models: []string{"llama3.2:3b"}},
			{Name: "z_ai", Type: "anthropic", APIKey: "sk-ant-x", Models: []string{"claude-a", "claude-b"}},
		}, ""},
		{"value with =", []string{"ENRICH_PROVIDER_A_TYPE=openai", "ENRICH_PROVIDER_A_API_KEY=k=v", "ENRICH_PROVIDER_A_MODELS=m"},
			[]llm.ProviderConfig{{Name: "a", Type: "openai", APIKey: "k=v", Models: []string{"m"}}}, ""},
		{"keyless", []string{"ENRICH_PROVIDER_LOCAL_TYPE=openai", "ENRICH_PROVIDER_LOCAL_BASE_URL=http://127.0.0.1:8000/v1",
			"ENRICH_PROVIDER_LOCAL_MODELS=qwen3", "ENRICH_PROVIDER_LOCAL_KEYLESS=true"},
			[]llm.ProviderConfig{{Name: "local", Type: "openai", BaseURL: "http://127.0.0.1:8000/v1", Models: []string{"qwen3"}, Keyless: true}}, ""},
		{"concurrency", []string{"ENRICH_PROVIDER_A_TYPE=openai", "ENRICH_PROVIDER_A_MODELS=m", "ENRICH_PROVIDER_A_CONCURRENCY=3"},
			[]llm.ProviderConfig{{Name: "a", Type: "openai", Models: []string{"m"}, Concurrency: 3}}, ""},
		{"concurrency not a number", []string{"ENRICH_PROVIDER_A_TYPE=openai", "ENRICH_PROVIDER_A_MODELS=m", "ENRICH_PROVIDER_A_CONCURRENCY=-1"}, nil, "ENRICH_PROVIDER_A_CONCURRENCY"},
		{"keyless not a bool", []string{"ENRICH_PROVIDER_A_TYPE=openai", "ENRICH_PROVIDER_A_MODELS=m", "ENRICH_PROVIDER_A_KEYLESS=yes please"}, nil, "ENRICH_PROVIDER_A_KEYLESS"},
		{"keyless with a key", []string{"ENRICH_PROVIDER_A_TYPE=openai", "ENRICH_PROVIDER_A_MODELS=m", "ENRICH_PROVIDER_A_KEYLESS=1", "ENRICH_PROVIDER_A_API_KEY=k"}, nil, "both set"},
		{"typo suffix", []string{"ENRICH_PROVIDER_LOCAL_MODEL=qwen3"}, nil, "unknown variable ENRICH_PROVIDER_LOCAL_MODEL"},
		{"no type", []string{"ENRICH_PROVIDER_LOCAL_MODELS=qwen3"}, nil, "ENRICH_PROVIDER_LOCAL_TYPE is not set"},
		{"no models", []string{"ENRICH_PROVIDER_LOCAL_TYPE=openai"}, nil, "ENRICH_PROVIDER_LOCAL_MODELS lists no model"},
		{"bad type", []string{"ENRICH_PROVIDER_X_TYPE=gpt", "ENRICH_PROVIDER_X_MODELS=m"}, nil, `unknown provider type "gpt"`},
		{"reserved", []string{"ENRICH_PROVIDER_SANDBOX_TYPE=openai", "ENRICH_PROVIDER_SANDBOX_MODELS=m"}, nil, "reserved"},
		{"empty name", []string{"ENRICH_PROVIDER__TYPE=openai"}, nil, "provider name"},
		{"bad name", []string{"ENRICH_PROVIDER_A-B_TYPE=openai"}, nil, "provider name"},
		{"bad url", []string{"ENRICH_PROVIDER_A_TYPE=openai", "ENRICH_PROVIDER_A_MODELS=m", "ENRICH_PROVIDER_A_BASE_URL=ftp://x"}, nil, "not an http(s) URL"},
		{"model with separator", []string{"ENRICH_PROVIDER_A_TYPE=openai", "ENRICH_PROVIDER_A_MODELS=a::b"}, nil, "must not contain ::"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, err := llm.ProvidersFromEnv(tt.environ)
			if tt.wantErr != "" {
				is.True(err != nil)
				is.True(strings.Contains(err.Error(), tt.wantErr)) // error names the variable
				return
			}
			is.NoErr(err)
			is.Equal(got, tt.want)
		})
	}
}

func TestProviderConfigStringHidesKey(t *testing.T) {
	is := is.New(t)
	s := llm.ProviderConfig{Name: "a", Type: "openai", APIKey: "sk-secret-value-1234", Models: []string{"m"}}.String()
	is.True(!strings.Contains(s, "secret"))
	is.True(strings.Contains(s, "***1234"))
}

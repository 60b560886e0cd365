package llm

import (
	"sort"
	"testing"
	"time"

	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
)

// BenchmarkCredentialLookup is the cost that paying a call with a stored key
// adds to it (issue 8; goal: under 50 µs p50 with a warm client cache): the
// registry finds the model and the client built for that credential, as
// Generate does before every call. "operator" is the same lookup for the
// provider's own key, for comparison. No request is sent.
func BenchmarkCredentialLookup(b *testing.B) {
	r, err := NewRegistry(Config{Providers: []ProviderConfig{{Name: "local", Type: "openai", BaseURL: "http://127.0.0.1:9/v1",
		APIKey: "sk-operator", Models: []string{"m"}}}, Timeout: time.Second})
	if err != nil {
		b.Fatal(err)
	}
	stored := &ports.Credential{KeyID: "k1", Version: 1, Source: rotation.Organization,
		Open: func() (ports.Secret, error) { return ports.Secret("sk-stored-key-0001"), nil }}
	for _, bc := range []struct {
		name string
		cred *ports.Credential
	}{{"operator", nil}, {"stored-key", stored}} {
		b.Run(bc.name, func(b *testing.B) {
			req := ports.LLMRequest{Model: model.Key{Provider: "local", Model: "m"}, Credential: bc.cred}
			if _, _, err := r.resolve(req); err != nil { // warms the client cache
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				t0 := time.Now()
				if _, _, err := r.resolve(req); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1000, "p50-µs")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1000, "p99-µs")
		})
	}
}

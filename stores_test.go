package enrich

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/matryer/is"
)

// TestStoresWithoutProviderStores: stores that lack the provider-key or
// the organizations' provider store get a memory one only when they are
// memory stores, and the log says so; durable stores are refused, naming
// the missing field, rather than keeping those in memory without a word.
func TestStoresWithoutProviderStores(t *testing.T) {
	for _, tt := range []struct {
		name, kind, field string
		ok                bool
	}{
		{"memory stores without provider keys", "memory", "ProviderKeys", true},
		{"memory stores without own providers", "memory", "OrgProviders", true},
		{"durable stores without provider keys", "postgres", "ProviderKeys", false},
		{"durable stores without own providers", "postgres", "OrgProviders", false},
		{"unnamed stores without provider keys", "", "ProviderKeys", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			st := provideMemoryStores()
			st.Kind = tt.kind
			switch tt.field {
			case "ProviderKeys":
				st.ProviderKeys = nil
			case "OrgProviders":
				st.OrgProviders = nil
			}
			var logs bytes.Buffer
			cfg := Config{Sandbox: true, PasswordHashing: "fast", Logger: slog.New(slog.NewTextHandler(&logs, nil))}
			e, err := NewEmbeddedWithStores(context.Background(), cfg, st)
			if !tt.ok {
				is.True(err != nil)
				is.True(strings.Contains(err.Error(), "Stores."+tt.field)) // the error names the field
				return
			}
			is.NoErr(err)
			defer e.Close()
			is.True(strings.Contains(logs.String(), "kept in memory")) // the choice is logged
			is.True(st.ProviderKeys != nil && st.OrgProviders != nil)
		})
	}
}

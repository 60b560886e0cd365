package contract

import (
	"context"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/ports"
)

// RunEmbeddingSettings checks that a setting never made, a setting made,
// replaced and cleared are told apart, per organization.
func RunEmbeddingSettings(t *testing.T, newStore func(t *testing.T) ports.EmbeddingSettings) {
	ctx := context.Background()
	tests := []struct {
		name  string
		sets  []string // the settings made in turn
		want  string
		isSet bool
	}{
		{name: "never set", sets: nil, want: "", isSet: false},
		{name: "set", sets: []string{"builtin::ngram-384"}, want: "builtin::ngram-384", isSet: true},
		{name: "replaced", sets: []string{"builtin::ngram-384", "openai::text-embedding-3-small"}, want: "openai::text-embedding-3-small", isSet: true},
		{name: "cleared", sets: []string{"builtin::ngram-384", ""}, want: "", isSet: true},
		{name: "cleared then set", sets: []string{"", "builtin::ngram-384"}, want: "builtin::ngram-384", isSet: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			s := newStore(t)
			org, other := "org_es_"+TestUUID(), "org_es_"+TestUUID()
			for _, m := range tt.sets {
				is.NoErr(s.SetEmbeddingModel(ctx, org, m))
			}
			got, set, err := s.EmbeddingModel(ctx, org)
			is.NoErr(err)
			is.Equal(got, tt.want)
			is.Equal(set, tt.isSet)
			// Another organization's setting is its own.
			got, set, err = s.EmbeddingModel(ctx, other)
			is.NoErr(err)
			is.Equal(got, "")
			is.True(!set)
		})
	}
}

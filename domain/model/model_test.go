package model_test

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/model"
)

func TestParseKey(t *testing.T) {
	tests := []struct {
		in   string
		want model.Key
		ok   bool
	}{
		{"sandbox::echo", model.Key{"sandbox", "echo"}, true},
		{"local::qwen3:8b", model.Key{"local", "qwen3:8b"}, true},
		{"openai::gpt-4o::x", model.Key{"openai", "gpt-4o::x"}, true},
		{"sandbox", model.Key{}, false},
		{"::echo", model.Key{}, false},
		{"sandbox::", model.Key{}, false},
		{"a b::c", model.Key{}, false},
		{"", model.Key{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			is := is.New(t)
			got, err := model.ParseKey(tt.in)
			if !tt.ok {
				is.True(errors.Is(err, model.ErrInvalidKey))
				return
			}
			is.NoErr(err)
			is.Equal(got, tt.want)
			is.Equal(got.String(), tt.in)
		})
	}
}

func TestCost(t *testing.T) {
	is := is.New(t)
	p := model.Price{InputPerMTok: 2_500_000, OutputPerMTok: 10_000_000}
	is.Equal(p.Cost(1000, 500), int64(2500+5000))
	is.Equal(p.Cost(1, 0), int64(3)) // 2.5 rounds up
	is.Equal(model.Price{}.Cost(100, 100), int64(0))
}

func FuzzParseKey(f *testing.F) {
	for _, s := range []string{"sandbox::echo", "::", "a::b::c", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := model.ParseKey(s)
		if err == nil && k.String() != s {
			t.Fatalf("round trip %q -> %q", s, k.String())
		}
	})
}

func TestCallCost(t *testing.T) {
	is := is.New(t)
	p := model.Price{InputPerMTok: 2_500_000, OutputPerMTok: 10_000_000, PerSearch: 10_000}
	is.Equal(p.CallCost(1000, 100, 0), p.Cost(1000, 100)) // no search, no fee
	is.Equal(p.CallCost(1000, 100, 3), p.Cost(1000, 100)+30_000)
	is.Equal(model.Price{}.CallCost(1000, 100, 5), int64(0)) // a free model's searches are free too
}

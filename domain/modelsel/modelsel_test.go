package modelsel_test

import (
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/modelsel"
)

func info(key string, sandbox, web bool) model.Info {
	k, _ := model.ParseKey(key)
	return model.Info{Key: k, Sandbox: sandbox, WebSearch: web}
}

func TestSelect(t *testing.T) {
	echo, alt := info("sandbox::echo", true, false), info("sandbox::alt", true, false)
	gpt, local := info("openai::gpt", false, true), info("local::qwen", false, false)
	tests := []struct {
		name   string
		cands  []model.Info
		pinned string
		needs  modelsel.Needs
		want   string
		source string
		err    error
	}{
		{"sandbox only picks echo", []model.Info{alt, echo}, "", modelsel.Needs{}, "sandbox::echo", "sandbox", nil},
		{"real beats sandbox", []model.Info{echo, local, gpt}, "", modelsel.Needs{}, "local::qwen", "configured", nil},
		{"pinned wins", []model.Info{echo, local, gpt}, "openai::gpt", modelsel.Needs{}, "openai::gpt", "pinned", nil},
		{"web search filters", []model.Info{echo, local, gpt}, "", modelsel.Needs{WebSearch: true}, "openai::gpt", "configured", nil},
		{"pinned but incapable", []model.Info{local, gpt}, "local::qwen", modelsel.Needs{WebSearch: true}, "openai::gpt", "configured", nil},
		{"no capable real model never falls back to sandbox", []model.Info{echo, local}, "", modelsel.Needs{WebSearch: true}, "", "", modelsel.ErrNoCapableModel},
		{"sandbox cannot search", []model.Info{echo}, "", modelsel.Needs{WebSearch: true}, "", "", modelsel.ErrNoCapableModel},
		{"nothing", nil, "", modelsel.Needs{}, "", "", modelsel.ErrNoCapableModel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			p, err := modelsel.Select(tt.cands, tt.pinned, tt.needs)
			if tt.err != nil {
				is.True(errors.Is(err, tt.err))
				return
			}
			is.NoErr(err)
			is.Equal(p.Model.Key.String(), tt.want)
			is.Equal(p.Source, tt.source)
		})
	}
}

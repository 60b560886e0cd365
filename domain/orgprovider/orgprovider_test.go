package orgprovider_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/orgprovider"
)

func TestCheckName(t *testing.T) {
	tests := []struct {
		name string
		want error
	}{
		{"local", nil},
		{"my-llm_2", nil},
		{"0vllm", nil},
		{strings.Repeat("a", orgprovider.MaxName), nil},
		{"", orgprovider.ErrName},
		{strings.Repeat("a", orgprovider.MaxName+1), orgprovider.ErrName},
		{"Local", orgprovider.ErrName},
		{"-x", orgprovider.ErrName},
		{"a::b", orgprovider.ErrName},
		{"a b", orgprovider.ErrName},
		{"a\x00", orgprovider.ErrName},
		{"é", orgprovider.ErrName},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.name), func(t *testing.T) {
			is := is.New(t)
			err := orgprovider.CheckName(tt.name)
			is.True(errors.Is(err, tt.want))
			if tt.want != nil {
				is.True(strings.HasPrefix(err.Error(), "name: "))
			}
		})
	}
}

func TestCheckType(t *testing.T) {
	is := is.New(t)
	is.NoErr(orgprovider.CheckType(orgprovider.TypeOpenAICompatible))
	for _, bad := range []string{"", "openai", "anthropic", "OPENAI_COMPATIBLE"} {
		is.True(errors.Is(orgprovider.CheckType(bad), orgprovider.ErrType))
	}
}

func TestCheckBaseURL(t *testing.T) {
	tests := []struct {
		in, want string
		err      error
	}{
		{"https://llm.example.com/v1", "https://llm.example.com/v1", nil},
		{"https://llm.example.com/v1/", "https://llm.example.com/v1", nil},
		{"http://10.0.0.1:8000/v1", "http://10.0.0.1:8000/v1", nil}, // refused at dial time, not here
		{"https://[2001:db8::1]/v1", "https://[2001:db8::1]/v1", nil},
		{"", "", orgprovider.ErrBaseURL},
		{"llm.example.com/v1", "", orgprovider.ErrBaseURL},
		{"/v1", "", orgprovider.ErrBaseURL},
		{"ftp://llm.example.com", "", orgprovider.ErrBaseURL},
		{"file:///etc/passwd", "", orgprovider.ErrBaseURL},
		{"javascript:alert(1)", "", orgprovider.ErrBaseURL},
		{"https://", "", orgprovider.ErrBaseURL},
		{"https://user:pw@llm.example.com", "", orgprovider.ErrBaseURL},
		{"https://llm.example.com/v1?x=1", "", orgprovider.ErrBaseURL},
		{"https://llm.example.com/v1#f", "", orgprovider.ErrBaseURL},
		{" https://llm.example.com", "", orgprovider.ErrBaseURL},
		{"https://llm.example.com/\x00", "", orgprovider.ErrBaseURL},
		{"https://llm.example.com/\n", "", orgprovider.ErrBaseURL},
		{"https://" + strings.Repeat("a", orgprovider.MaxBaseURL), "", orgprovider.ErrBaseURL},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%q", tt.in), func(t *testing.T) {
			is := is.New(t)
			got, err := orgprovider.CheckBaseURL(tt.in)
			is.True(errors.Is(err, tt.err))
			is.Equal(got, tt.want)
		})
	}
}

func ptr(n int64) *int64 { return &n }

func TestCheckModel(t *testing.T) {
	tests := []struct {
		name string
		m    orgprovider.Model
		want error
	}{
		{"plain", orgprovider.Model{Name: "llama3:8b"}, nil},
		{"slashes and colons", orgprovider.Model{Name: "meta-llama/Llama-3.1-8B-Instruct"}, nil},
		{"with context and prices", orgprovider.Model{Name: "m", ContextLength: 128_000, InputPerMTok: ptr(150_000), OutputPerMTok: ptr(0)}, nil},
		{"empty", orgprovider.Model{}, orgprovider.ErrModelName},
		{"space", orgprovider.Model{Name: "a b"}, orgprovider.ErrModelName},
		{"leading space", orgprovider.Model{Name: " a"}, orgprovider.ErrModelName},
		{"NUL", orgprovider.Model{Name: "a\x00"}, orgprovider.ErrModelName},
		{"control", orgprovider.Model{Name: "a\x1b"}, orgprovider.ErrModelName},
		{"invalid UTF-8", orgprovider.Model{Name: "a\xff"}, orgprovider.ErrModelName},
		{"too long", orgprovider.Model{Name: strings.Repeat("m", orgprovider.MaxModelName+1)}, orgprovider.ErrModelName},
		{"negative context", orgprovider.Model{Name: "m", ContextLength: -1}, orgprovider.ErrContextLength},
		{"huge context", orgprovider.Model{Name: "m", ContextLength: orgprovider.MaxContextLength + 1}, orgprovider.ErrContextLength},
		{"negative price", orgprovider.Model{Name: "m", InputPerMTok: ptr(-1)}, orgprovider.ErrPrice},
		{"huge price", orgprovider.Model{Name: "m", OutputPerMTok: ptr(orgprovider.MaxPricePerMTok + 1)}, orgprovider.ErrPrice},
		{"schema channel", orgprovider.Model{Name: "m", Caps: orgprovider.Caps{ResponseSchema: true}}, nil},
		{"strict on the schema channel", orgprovider.Model{Name: "m", Caps: orgprovider.Caps{ResponseSchema: true, StrictOutput: true}}, nil},
		{"strict without the schema channel", orgprovider.Model{Name: "m", Caps: orgprovider.Caps{StrictOutput: true}}, orgprovider.ErrStrict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			err := orgprovider.CheckModel(tt.m)
			is.True(errors.Is(err, tt.want))
		})
	}
}

func TestAddModel(t *testing.T) {
	full := &orgprovider.Provider{}
	for i := range orgprovider.MaxModels {
		full.Models = append(full.Models, orgprovider.Model{Name: fmt.Sprintf("m%d", i)})
	}
	tests := []struct {
		name  string
		p     *orgprovider.Provider
		m     orgprovider.Model
		want  error
		count int
	}{
		{"first", &orgprovider.Provider{}, orgprovider.Model{Name: "a"}, nil, 1},
		{"second", &orgprovider.Provider{Models: []orgprovider.Model{{Name: "a"}}}, orgprovider.Model{Name: "b"}, nil, 2},
		{"duplicate", &orgprovider.Provider{Models: []orgprovider.Model{{Name: "a"}}}, orgprovider.Model{Name: "a"}, orgprovider.ErrDuplicateModel, 1},
		{"invalid", &orgprovider.Provider{}, orgprovider.Model{Name: ""}, orgprovider.ErrModelName, 0},
		{"full", full, orgprovider.Model{Name: "one more"}, orgprovider.ErrModelName, orgprovider.MaxModels},
		{"full, valid name", full, orgprovider.Model{Name: "onemore"}, orgprovider.ErrTooManyModels, orgprovider.MaxModels},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.True(errors.Is(tt.p.AddModel(tt.m), tt.want))
			is.Equal(len(tt.p.Models), tt.count)
		})
	}
}

func TestImport(t *testing.T) {
	now := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	n := 0
	newID := func() string { n++; return fmt.Sprintf("id%d", n) }
	tests := []struct {
		name     string
		have     []string
		offered  []string
		added    []string
		total    int
		capFirst bool
	}{
		{"into empty", nil, []string{"a", "b"}, []string{"a", "b"}, 2, false},
		{"known names are kept", []string{"a"}, []string{"a", "b"}, []string{"b"}, 2, false},
		{"invalid and repeated names are skipped", nil, []string{"", "x y", "c", "c", "bad\x00"}, []string{"c"}, 1, false},
		{"nothing new", []string{"a"}, []string{"a"}, nil, 1, false},
		{"stops at the cap", nil, nil, nil, orgprovider.MaxModels, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			p := &orgprovider.Provider{}
			for _, h := range tt.have {
				p.Models = append(p.Models, orgprovider.Model{ID: "old-" + h, Name: h})
			}
			offered := tt.offered
			if tt.capFirst {
				for i := range orgprovider.MaxModels + 10 {
					offered = append(offered, fmt.Sprintf("m%d", i))
				}
			}
			added := p.Import(offered, newID, now)
			is.Equal(len(p.Models), tt.total)
			if !tt.capFirst {
				var names []string
				for _, m := range added {
					names = append(names, m.Name)
					is.True(m.Discovered)
					is.True(m.ID != "")
					is.Equal(m.CreatedAt, now)
				}
				is.Equal(names, tt.added)
			}
		})
	}
}

func TestVersionChanges(t *testing.T) {
	tests := []struct {
		name   string
		change func(p *orgprovider.Provider)
		want   int
		key    bool
	}{
		{"same base URL", func(p *orgprovider.Provider) { p.SetBaseURL("https://a.example") }, 1, true},
		{"new base URL", func(p *orgprovider.Provider) { p.SetBaseURL("https://b.example") }, 2, true},
		{"new key", func(p *orgprovider.Provider) { p.SetKey([]byte("sealed2"), "wxyz") }, 2, true},
		{"key removed", func(p *orgprovider.Provider) { p.SetKey(nil, "") }, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			p := &orgprovider.Provider{BaseURL: "https://a.example", Sealed: []byte("sealed"), Suffix: "abcd", Version: 1}
			tt.change(p)
			is.Equal(p.Version, tt.want)
			is.Equal(p.HasKey(), tt.key)
		})
	}
}

func TestRedact(t *testing.T) {
	tests := []struct {
		name   string
		sealed []byte
		key    bool
	}{
		{"with a key", []byte("sealed"), true},
		{"without", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			p := &orgprovider.Provider{Sealed: tt.sealed}
			p.Redact()
			is.Equal(p.Sealed, nil)
			is.Equal(p.HasKey(), tt.key)
			p.Redact() // twice: the same
			is.Equal(p.HasKey(), tt.key)
			p.SetKey(nil, "")
			is.True(!p.HasKey())
		})
	}
}

func TestReplaceAndRemoveModel(t *testing.T) {
	base := func() *orgprovider.Provider {
		return &orgprovider.Provider{Models: []orgprovider.Model{{ID: "1", Name: "a"}, {ID: "2", Name: "b"}, {ID: "3", Name: "c"}}}
	}
	names := func(p *orgprovider.Provider) string {
		var out []string
		for _, m := range p.Models {
			out = append(out, m.ID+"="+m.Name)
		}
		return strings.Join(out, ",")
	}
	tests := []struct {
		name   string
		change func(p *orgprovider.Provider) error
		want   error
		after  string
	}{
		{"rename", func(p *orgprovider.Provider) error { return p.ReplaceModel(orgprovider.Model{ID: "2", Name: "z"}) }, nil, "1=a,2=z,3=c"},
		{"same name, new context", func(p *orgprovider.Provider) error {
			return p.ReplaceModel(orgprovider.Model{ID: "2", Name: "b", ContextLength: 10})
		}, nil, "1=a,2=b,3=c"},
		{"onto another's name", func(p *orgprovider.Provider) error { return p.ReplaceModel(orgprovider.Model{ID: "2", Name: "c"}) }, orgprovider.ErrDuplicateModel, "1=a,2=b,3=c"},
		{"invalid", func(p *orgprovider.Provider) error { return p.ReplaceModel(orgprovider.Model{ID: "2", Name: "b b"}) }, orgprovider.ErrModelName, "1=a,2=b,3=c"},
		{"unknown id", func(p *orgprovider.Provider) error { return p.ReplaceModel(orgprovider.Model{ID: "9", Name: "x"}) }, orgprovider.ErrNoModel, "1=a,2=b,3=c"},
		{"remove the middle", func(p *orgprovider.Provider) error { return p.RemoveModel("2") }, nil, "1=a,3=c"},
		{"remove the last", func(p *orgprovider.Provider) error { return p.RemoveModel("3") }, nil, "1=a,2=b"},
		{"remove unknown", func(p *orgprovider.Provider) error { return p.RemoveModel("9") }, orgprovider.ErrNoModel, "1=a,2=b,3=c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			p := base()
			is.True(errors.Is(tt.change(p), tt.want))
			is.Equal(names(p), tt.after)
			_, ok := p.ModelByID("1")
			is.True(ok)
		})
	}
}

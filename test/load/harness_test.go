package load_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/concept"
)

// These run in `make test` (no ENRICH_LOAD): the parts of the load tests
// that only `make bench` would otherwise take.

func TestPlanRounds(t *testing.T) {
	is := is.New(t)
	for _, c := range []struct {
		set          settings
		n            int
		each, later  time.Duration
		measuredTime time.Duration
	}{
		{settings{warmup: time.Second, duration: 5 * time.Second}, 5, time.Second, 200 * time.Millisecond, 5 * time.Second},
		{settings{warmup: 50 * time.Millisecond, duration: 3 * time.Second}, 2, 1500 * time.Millisecond, 50 * time.Millisecond, 3 * time.Second},
		{settings{warmup: time.Second, duration: 2 * time.Second}, 1, 2 * time.Second, 200 * time.Millisecond, 2 * time.Second},
	} {
		p := planRounds(c.set, c.n)
		is.Equal(p.round(0).duration, c.each)
		is.Equal(p.round(0).warmup, c.set.warmup) // the first round warms up fully
		is.Equal(p.round(1).duration, c.each)
		is.Equal(p.round(1).warmup, c.later)
		is.Equal(p.measured(), c.measuredTime)
	}
}

func TestMergedRounds(t *testing.T) {
	is := is.New(t)
	ms := func(n ...int) []time.Duration {
		var d []time.Duration
		for _, v := range n {
			d = append(d, time.Duration(v)*time.Millisecond)
		}
		return d
	}
	a := &scenario{path: "p", store: "memory", clients: 16, errs: 1, timeouts: 2, sent: 5, llm: 4, conns: 1,
		failures: map[string]int{"HTTP 500": 1}, lat: ms(1, 2)}
	b := &scenario{path: "p", store: "memory", clients: 16, errs: 2, sent: 6, llm: 6,
		failures: map[string]int{"HTTP 500": 1, "HTTP 503": 1}, lat: ms(3, 4, 5)}
	m := merged([]*scenario{a, b}, 2*time.Second)
	is.Equal(m.ok, 5)
	is.Equal(m.rps, 2.5) // 5 answered over the 2 s both rounds measured
	is.Equal(m.p50, 3*time.Millisecond)
	is.Equal(m.p99, 5*time.Millisecond)
	is.Equal(m.errs, 3)
	is.Equal(m.timeouts, 2)
	is.Equal(m.sent, 11)
	is.Equal(m.llm, 10)
	is.Equal(m.failures, map[string]int{"HTTP 500": 2, "HTTP 503": 1})
	is.Equal(len(m.parts), 2)
	is.Equal(m.path+m.store, "pmemory")
	is.Equal(roundRatios([]*scenario{{rps: 30}, {rps: 10}}, []*scenario{{rps: 60}, {rps: 10}}), "50% 100%") // lowest first
}

// A child process serves what it is told and stops when the test ends; one
// that cannot start says why.
func TestChildProcess(t *testing.T) {
	is := is.New(t)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "from upstream "+r.URL.Path)
	}))
	defer upstream.Close()

	base, err := startChild(t, childSpec{Kind: "proxy", FakeURL: upstream.URL + "/v1"}, nil)
	is.NoErr(err)
	resp, err := http.Get(base + "/v1/chat/completions")
	is.NoErr(err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	is.Equal(string(body), "from upstream /v1/chat/completions") // the bare proxy forwards

	_, err = startChild(t, childSpec{Kind: "nope"}, nil)
	is.True(err != nil)
	is.True(strings.Contains(err.Error(), `unknown kind "nope"`)) // the child's own words

	// With envChildProfile, a child writes its CPU profile when it stops.
	dir := t.TempDir()
	t.Run("profiled", func(t *testing.T) {
		t.Setenv(envChildProfile, dir)
		_, err := startChild(t, childSpec{Kind: "proxy", FakeURL: upstream.URL + "/v1"}, nil)
		is.NoErr(err)
	})
	profiles, err := filepath.Glob(filepath.Join(dir, "proxy-*.pprof"))
	is.NoErr(err)
	is.Equal(len(profiles), 1) // one profile, named after the child
	fi, err := os.Stat(profiles[0])
	is.NoErr(err)
	is.True(fi.Size() > 0) // and written out when the child stopped
}

// A child's JSON log lines are tallied; other lines are not taken for them.
func TestLogTallyLines(t *testing.T) {
	is := is.New(t)
	l := &logTally{counts: map[string]int{}}
	is.True(l.line([]byte(`{"time":"x","level":"WARN","msg":"slow","err":"boom"}`)))
	is.True(l.line([]byte(`{"time":"x","level":"WARN","msg":"slow"}`)))
	is.True(!l.line([]byte(`serve: listener closed`)))
	is.True(!l.line([]byte(`{"no":"level"}`)))
	is.Equal(l.summary(), []string{"2× WARN slow (e.g. err=boom)"})
}

// The concept bench's vocabulary is the same on every run, distinct once
// normalized, and its probe texts are spelled otherwise than the names
// they were made from.
func TestConceptVocabulary(t *testing.T) {
	is := is.New(t)
	names := conceptNames(2000, 30)
	is.Equal(names, conceptNames(2000, 30)) // deterministic
	seen := map[string]bool{}
	for _, n := range names {
		seen[concept.Normalize(n)] = true
	}
	is.Equal(len(seen), len(names)) // distinct once normalized
	texts := probeTexts(names, 200, 31)
	is.Equal(len(texts), 200)
	same := 0
	for _, q := range texts {
		if seen[concept.Normalize(q)] {
			same++
		}
	}
	is.True(same < len(texts)/10) // perturbed: almost none is a seeded name
	vecs := embedAll(names[:10])
	is.Equal(len(vecs[0]), concept.NgramDims)
	is.Equal(vecs[3], concept.NgramEmbed(concept.Normalize(names[3]), concept.NgramDims)) // the service's embedding
}

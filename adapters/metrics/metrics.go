package metrics

import (
	"context"
	"crypto/subtle"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/orgprovider"
	"github.com/entityenrich/enrich/ports"
)

// Other is the label value of anything outside a label's fixed set: a
// method no route takes, a provider or model the server's configuration
// does not declare (an organization's own names never become labels).
const Other = "other"

// Metrics holds one registry (not the global one, so that several services
// in one process keep their own).
type Metrics struct {
	reg         *prometheus.Registry
	httpSeconds *prometheus.HistogramVec
	jobsEnded   *prometheus.CounterVec
	llmSeconds  *prometheus.HistogramVec
	llmTokens   *prometheus.CounterVec
	llmErrors   *prometheus.CounterVec
}

// New registers every metric.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.httpSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "enrich_http_request_duration_seconds", Help: "HTTP request latency by method, route template and status.",
		Buckets: prometheus.DefBuckets,
	}, []string{"method", "route", "status"})
	m.jobsEnded = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "enrich_jobs_ended_total", Help: "Jobs that ended here, by type, state and error code.",
	}, []string{"type", "state", "code"})
	m.llmSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "enrich_llm_call_duration_seconds", Help: "LLM call latency by provider and model.",
		Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 20, 40, 80},
	}, []string{"provider", "model"})
	m.llmTokens = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "enrich_llm_tokens_total", Help: "LLM tokens by provider, model and direction (input, output).",
	}, []string{"provider", "model", "direction"})
	m.llmErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "enrich_llm_errors_total", Help: "Failed LLM calls by provider, model and kind.",
	}, []string{"provider", "model", "kind"})
	m.reg.MustRegister(m.httpSeconds, m.jobsEnded, m.llmSeconds, m.llmTokens, m.llmErrors,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus text format. With a token,
// a request without "Authorization: Bearer <token>" is answered 401
// (compared in constant time); without one, the metrics are open.
func (m *Metrics) Handler(token string) http.Handler {
	h := promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
	if token == "" {
		return h
	}
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := bearer(r.Header.Get("Authorization"))
		if !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="metrics"`)
			http.Error(w, "a bearer token is required (ENRICH_METRICS_TOKEN)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// bearer returns the token of an "Authorization: Bearer <token>" header.
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimSpace(tok)
	return tok, tok != ""
}

// WatchRunning exports the number of jobs running here, read at scrape
// time.
func (m *Metrics) WatchRunning(running func() int) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "enrich_jobs_running", Help: "Jobs running on this replica.",
	}, func() float64 { return float64(running()) }))
}

// methods are the HTTP methods that keep their name as a label; any other
// (a client may send any token as a method) is Other.
var methods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

// ObserveRequest records one HTTP request (httpapi.Observer). route is the
// matched route's template (a fixed set) or "unmatched".
func (m *Metrics) ObserveRequest(method, route string, status int, d time.Duration) {
	if !methods[method] {
		method = Other
	}
	if status < 100 || status > 599 {
		status = 0
	}
	m.httpSeconds.WithLabelValues(method, route, strconv.Itoa(status)).Observe(d.Seconds())
}

// JobEnded counts a job's end (app.JobObserver). The labels are the
// domain's own enumerations (job types, states, error codes): the code
// chooses them, never a caller.
func (m *Metrics) JobEnded(t job.Type, s job.State, code job.ErrorCode) {
	m.jobsEnded.WithLabelValues(string(t), string(s), string(code)).Inc()
}

func set(vs ...string) map[string]bool {
	m := make(map[string]bool, len(vs))
	for _, v := range vs {
		m[v] = true
	}
	return m
}

func known(v string, in map[string]bool) string {
	if in[v] {
		return v
	}
	return Other
}

// InstrumentLLM wraps an LLM port with the call metrics. Calls are
// labelled by the server's own provider and model names, which only its
// configuration declares (catalog lists them); a call to an
// organization's own endpoint is labelled "org:<type>" with model Other,
// and a provider or model the catalog does not list is Other: no name a
// tenant chooses becomes a label, and the series stay bounded.
func (m *Metrics) InstrumentLLM(next ports.LLM, catalog ports.ModelCatalog) ports.LLM {
	l := &llm{next: next, m: m, models: map[model.Key]bool{}, providers: map[string]bool{}}
	for _, info := range catalog.Models() {
		l.models[info.Key] = true
		l.providers[info.Key.Provider] = true
	}
	return l
}

type llm struct {
	next ports.LLM
	m    *Metrics
	// models and providers are the catalog's, read once: the labels'
	// fixed sets.
	models    map[model.Key]bool
	providers map[string]bool
}

var _ ports.LLM = (*llm)(nil)

// orgTypes are the types of organizations' own providers: a fixed set of
// the code's.
var orgTypes = set(orgprovider.Types()...)

// labels names a call's provider and model by the fixed sets.
func (l *llm) labels(req ports.LLMRequest) (provider, mod string) {
	if c := req.Credential; c != nil && c.Endpoint != nil {
		return "org:" + known(c.Endpoint.Type, orgTypes), Other
	}
	switch k := req.Model; {
	case l.models[k]:
		return k.Provider, k.Model
	case l.providers[k.Provider]:
		return k.Provider, Other
	}
	return Other, Other
}

func (l *llm) Generate(ctx context.Context, req ports.LLMRequest) (ports.LLMResponse, error) {
	start := time.Now()
	resp, err := l.next.Generate(ctx, req)
	p, mo := l.labels(req)
	l.m.llmSeconds.WithLabelValues(p, mo).Observe(time.Since(start).Seconds())
	l.m.llmTokens.WithLabelValues(p, mo, "input").Add(float64(resp.InputTokens))
	l.m.llmTokens.WithLabelValues(p, mo, "output").Add(float64(resp.OutputTokens))
	if err != nil {
		l.m.llmErrors.WithLabelValues(p, mo, kind(err)).Inc()
	}
	return resp, err
}

// kind names an LLM failure by its port sentinel.
func kind(err error) string {
	for _, k := range []struct {
		err  error
		name string
	}{
		{ports.ErrRateLimited, "rate_limited"}, {ports.ErrLLMTimeout, "timeout"}, {ports.ErrContextLength, "context_length"},
		{ports.ErrModelRetired, "model_retired"}, {ports.ErrUnknownModel, "unknown_model"},
		{ports.ErrLLMUnavailable, "unavailable"}, {context.Canceled, "cancelled"}, {context.DeadlineExceeded, "timeout"},
	} {
		if errors.Is(err, k.err) {
			return k.name
		}
	}
	return "other"
}

package metrics

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

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

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// WatchRunning exports the number of jobs running here, read at scrape
// time.
func (m *Metrics) WatchRunning(running func() int) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "enrich_jobs_running", Help: "Jobs running on this replica.",
	}, func() float64 { return float64(running()) }))
}

// ObserveRequest records one HTTP request (httpapi.Observer).
func (m *Metrics) ObserveRequest(method, route string, status int, d time.Duration) {
	m.httpSeconds.WithLabelValues(method, route, strconv.Itoa(status)).Observe(d.Seconds())
}

// JobEnded counts a job's end (app.JobObserver).
func (m *Metrics) JobEnded(t job.Type, s job.State, code job.ErrorCode) {
	m.jobsEnded.WithLabelValues(string(t), string(s), string(code)).Inc()
}

// InstrumentLLM wraps an LLM port with the call metrics.
func (m *Metrics) InstrumentLLM(next ports.LLM) ports.LLM { return &llm{next: next, m: m} }

type llm struct {
	next ports.LLM
	m    *Metrics
}

var _ ports.LLM = (*llm)(nil)

func (l *llm) Generate(ctx context.Context, req ports.LLMRequest) (ports.LLMResponse, error) {
	start := time.Now()
	resp, err := l.next.Generate(ctx, req)
	p, mo := req.Model.Provider, req.Model.Model
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

package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	ledger "github.com/entityenrich/enrich/domain/usage"
)

// Cost analytics on the reference's /api/costs/* paths: totals of the LLM
// call ledger. Money is in US dollars (JSON numbers), as the reference
// reports it.
func (s *Server) registerCostRoutes(r *mux.Router) {
	r.HandleFunc("/api/costs/summary", s.costSummary).Methods(http.MethodGet)
	r.HandleFunc("/api/costs/stats", s.costStats).Methods(http.MethodGet)
	r.HandleFunc("/api/costs/by-model", s.costByModel).Methods(http.MethodGet)
	r.HandleFunc("/api/costs/presets/{preset}", s.costPreset).Methods(http.MethodGet)
	r.HandleFunc("/api/costs/performance", s.costPerformance).Methods(http.MethodGet)
	r.HandleFunc("/api/costs/performance/presets/{preset}", s.costPerformancePreset).Methods(http.MethodGet)
}

// costQuery reads start_date (inclusive), end_date (exclusive),
// organization_id, all_orgs and record_type. A date is YYYY-MM-DD (UTC
// midnight) or RFC 3339.
func costQuery(r *http.Request) (app.CostQuery, error) {
	v := r.URL.Query()
	q := app.CostQuery{OrgID: v.Get("organization_id"), RecordType: v.Get("record_type")}
	for _, d := range []struct {
		field string
		dst   **time.Time
	}{{"start_date", &q.Start}, {"end_date", &q.End}} {
		raw := v.Get(d.field)
		if raw == "" {
			continue
		}
		t, err := parseDate(raw)
		if err != nil {
			return q, app.Invalid(d.field, "%s must be a date (YYYY-MM-DD) or an RFC 3339 time", d.field)
		}
		*d.dst = &t
	}
	if raw := v.Get("all_orgs"); raw != "" {
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return q, app.Invalid("all_orgs", "all_orgs must be true or false")
		}
		q.AllOrgs = b
	}
	return q, nil
}

func parseDate(s string) (time.Time, error) {
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

// toCostSummary maps the reference's CostSummary.
func toCostSummary(c app.CostSummary) api.CostSummary {
	return api.CostSummary{TotalCost: c.Total.CostUSD(), TotalCostMicro: int(c.Total.Cost), TotalRequests: int(c.Total.Requests),
		TotalInputTokens: int(c.Total.InputTokens), TotalOutputTokens: int(c.Total.OutputTokens),
		AvgCostPerRequest: c.Total.AvgCostUSD(), MostExpensiveModel: nilIfEmpty(c.MostExpensive), MostUsedModel: nilIfEmpty(c.MostUsed),
		EmbeddingTokens: int(c.Total.EmbeddingTokens), EmbeddingCostUsd: c.Total.EmbeddingCostUSD()}
}

// toCostStats maps the reference's CostStatsRow; period is the first day of
// the day, ISO week or month.
func toCostStats(ts []ledger.Total) []api.CostStatsRow {
	out := make([]api.CostStatsRow, 0, len(ts))
	for _, t := range ts {
		out = append(out, api.CostStatsRow{Period: t.Key, TotalCost: t.CostUSD(), TotalRequests: int(t.Requests),
			TotalInputTokens: int(t.InputTokens), TotalOutputTokens: int(t.OutputTokens), AvgCostPerRequest: t.AvgCostUSD(),
			EmbeddingTokens: int(t.EmbeddingTokens), EmbeddingCostUsd: t.EmbeddingCostUSD()})
	}
	return out
}

// toModelCosts maps the reference's ModelCostRow.
func toModelCosts(ts []ledger.Total) []api.ModelCostRow {
	out := make([]api.ModelCostRow, 0, len(ts))
	for _, t := range ts {
		out = append(out, api.ModelCostRow{CompositeKey: t.Key, ModelName: modelName(t.Key), TotalCost: t.CostUSD(),
			TotalRequests: int(t.Requests), TotalInputTokens: int(t.InputTokens), TotalOutputTokens: int(t.OutputTokens),
			EmbeddingTokens: int(t.EmbeddingTokens), EmbeddingCostUsd: t.EmbeddingCostUSD()})
	}
	return out
}

// modelName is the model part of a composite key provider::model.
func modelName(key string) string {
	for i := 0; i+1 < len(key); i++ {
		if key[i] == ':' && key[i+1] == ':' {
			return key[i+2:]
		}
	}
	return key
}

func (s *Server) costSummary(w http.ResponseWriter, r *http.Request) {
	q, err := costQuery(r)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	c, err := s.costs.Summary(r.Context(), principal(r), q)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toCostSummary(c))
}

func (s *Server) costStats(w http.ResponseWriter, r *http.Request) {
	q, err := costQuery(r)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	ts, err := s.costs.Stats(r.Context(), principal(r), q, r.URL.Query().Get("group_by"))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toCostStats(ts))
}

func (s *Server) costByModel(w http.ResponseWriter, r *http.Request) {
	q, err := costQuery(r)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	ts, err := s.costs.ByModel(r.Context(), principal(r), q)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toModelCosts(ts))
}

func (s *Server) costPreset(w http.ResponseWriter, r *http.Request) {
	q, err := costQuery(r)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	c, err := s.costs.Preset(r.Context(), principal(r), mux.Vars(r)["preset"], q)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.CostPresetResponse{Preset: c.Preset, StartDate: c.Start, EndDate: c.End,
		Summary: toCostSummary(c.Summary), Daily: toCostStats(c.Daily), ByModel: toModelCosts(c.Models)})
}

// toPerformance maps one model's calls: how many, how many failed, and how
// long they took on average.
func toPerformance(key string, t ledger.Total) api.ModelPerformance {
	rate := 0.0
	if t.Requests > 0 {
		rate = float64(t.Requests-t.Failed) / float64(t.Requests)
	}
	return api.ModelPerformance{CompositeKey: key, ModelName: modelName(key), TotalRequests: int(t.Requests),
		FailedRequests: int(t.Failed), SuccessRate: rate, AvgProcessingTimeMs: t.AvgLatencyMS(), TotalCost: t.CostUSD(),
		AvgCostPerRequest: t.AvgCostUSD()}
}

func writePerformance(w http.ResponseWriter, p app.Performance) {
	models := make([]api.ModelPerformance, 0, len(p.Models))
	for _, m := range p.Models {
		models = append(models, toPerformance(m.Key, m))
	}
	total := toPerformance("", p.Total)
	writeJSON(w, http.StatusOK, api.PerformanceStats{TotalRequests: total.TotalRequests, FailedRequests: total.FailedRequests,
		SuccessRate: total.SuccessRate, AvgProcessingTimeMs: total.AvgProcessingTimeMs, TotalCost: total.TotalCost,
		ByModel: models})
}

func (s *Server) costPerformance(w http.ResponseWriter, r *http.Request) {
	q, err := costQuery(r)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	p, err := s.costs.Performance(r.Context(), principal(r), q)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writePerformance(w, p)
}

func (s *Server) costPerformancePreset(w http.ResponseWriter, r *http.Request) {
	q, err := costQuery(r)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	p, err := s.costs.PerformancePreset(r.Context(), principal(r), mux.Vars(r)["preset"], q)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writePerformance(w, p)
}

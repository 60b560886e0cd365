package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/mux"

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

// costSummaryJSON is the reference's CostSummary.
type costSummaryJSON struct {
	TotalCost          float64  `json:"total_cost"`
	TotalCostMicro     int64    `json:"total_cost_micro"`
	TotalRequests      int64    `json:"total_requests"`
	TotalInputTokens   int64    `json:"total_input_tokens"`
	TotalOutputTokens  int64    `json:"total_output_tokens"`
	AvgCostPerRequest  float64  `json:"avg_cost_per_request"`
	AvgCostPerProperty *float64 `json:"avg_cost_per_property"`
	MostExpensiveModel *string  `json:"most_expensive_model"`
	MostUsedModel      *string  `json:"most_used_model"`
}

func toCostSummary(c app.CostSummary) costSummaryJSON {
	orNil := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	return costSummaryJSON{TotalCost: c.Total.CostUSD(), TotalCostMicro: c.Total.Cost, TotalRequests: c.Total.Requests,
		TotalInputTokens: c.Total.InputTokens, TotalOutputTokens: c.Total.OutputTokens,
		AvgCostPerRequest: c.Total.AvgCostUSD(), MostExpensiveModel: orNil(c.MostExpensive), MostUsedModel: orNil(c.MostUsed)}
}

// costStatsRowJSON is the reference's CostStatsRow; period is the first day
// of the day, ISO week or month.
type costStatsRowJSON struct {
	Period            string  `json:"period"`
	TotalCost         float64 `json:"total_cost"`
	TotalRequests     int64   `json:"total_requests"`
	TotalInputTokens  int64   `json:"total_input_tokens"`
	TotalOutputTokens int64   `json:"total_output_tokens"`
	AvgCostPerRequest float64 `json:"avg_cost_per_request"`
}

func toCostStats(ts []ledger.Total) []costStatsRowJSON {
	out := make([]costStatsRowJSON, 0, len(ts))
	for _, t := range ts {
		out = append(out, costStatsRowJSON{Period: t.Key, TotalCost: t.CostUSD(), TotalRequests: t.Requests,
			TotalInputTokens: t.InputTokens, TotalOutputTokens: t.OutputTokens, AvgCostPerRequest: t.AvgCostUSD()})
	}
	return out
}

// modelCostRowJSON is the reference's ModelCostRow.
type modelCostRowJSON struct {
	CompositeKey      string  `json:"composite_key"`
	ModelName         string  `json:"model_name"`
	TotalCost         float64 `json:"total_cost"`
	TotalRequests     int64   `json:"total_requests"`
	TotalInputTokens  int64   `json:"total_input_tokens"`
	TotalOutputTokens int64   `json:"total_output_tokens"`
}

func toModelCosts(ts []ledger.Total) []modelCostRowJSON {
	out := make([]modelCostRowJSON, 0, len(ts))
	for _, t := range ts {
		out = append(out, modelCostRowJSON{CompositeKey: t.Key, ModelName: modelName(t.Key), TotalCost: t.CostUSD(),
			TotalRequests: t.Requests, TotalInputTokens: t.InputTokens, TotalOutputTokens: t.OutputTokens})
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
	writeJSON(w, http.StatusOK, map[string]any{"preset": c.Preset, "start_date": c.Start, "end_date": c.End,
		"summary": toCostSummary(c.Summary), "daily": toCostStats(c.Daily), "by_model": toModelCosts(c.Models)})
}

// modelPerformanceJSON is one model's calls: how many, how many failed, and
// how long they took on average.
type modelPerformanceJSON struct {
	CompositeKey     string  `json:"composite_key"`
	ModelName        string  `json:"model_name"`
	TotalRequests    int64   `json:"total_requests"`
	FailedRequests   int64   `json:"failed_requests"`
	SuccessRate      float64 `json:"success_rate"`
	AvgProcessingMS  float64 `json:"avg_processing_time_ms"`
	TotalCost        float64 `json:"total_cost"`
	AvgCostPerResult float64 `json:"avg_cost_per_request"`
}

func toPerformance(key string, t ledger.Total) modelPerformanceJSON {
	rate := 0.0
	if t.Requests > 0 {
		rate = float64(t.Requests-t.Failed) / float64(t.Requests)
	}
	return modelPerformanceJSON{CompositeKey: key, ModelName: modelName(key), TotalRequests: t.Requests, FailedRequests: t.Failed,
		SuccessRate: rate, AvgProcessingMS: t.AvgLatencyMS(), TotalCost: t.CostUSD(), AvgCostPerResult: t.AvgCostUSD()}
}

func writePerformance(w http.ResponseWriter, p app.Performance) {
	models := make([]modelPerformanceJSON, 0, len(p.Models))
	for _, m := range p.Models {
		models = append(models, toPerformance(m.Key, m))
	}
	total := toPerformance("", p.Total)
	writeJSON(w, http.StatusOK, map[string]any{"total_requests": total.TotalRequests, "failed_requests": total.FailedRequests,
		"success_rate": total.SuccessRate, "avg_processing_time_ms": total.AvgProcessingMS, "total_cost": total.TotalCost,
		"by_model": models})
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

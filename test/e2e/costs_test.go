package e2e_test

import (
	"math"
	"testing"
	"time"

	"github.com/matryer/is"
)

// TestCostAnalytics: the /api/costs/* figures are the ledger's totals of the
// caller's own LLM calls, agree with the records' costs and with one
// another, and only a system administrator sees other organizations'.
func TestCostAnalytics(t *testing.T) {
	for _, b := range backends {
		if b.name == "pglite" {
			continue // the same adapter as postgres
		}
		t.Run(b.name, func(t *testing.T) { testCostAnalytics(t, b.dsn(t)) })
	}
}

type costSummary struct {
	TotalCost         float64 `json:"total_cost"`
	TotalCostMicro    int64   `json:"total_cost_micro"`
	TotalRequests     int64   `json:"total_requests"`
	TotalInputTokens  int64   `json:"total_input_tokens"`
	TotalOutputTokens int64   `json:"total_output_tokens"`
	AvgCostPerRequest float64 `json:"avg_cost_per_request"`
	MostExpensive     *string `json:"most_expensive_model"`
	MostUsed          *string `json:"most_used_model"`
}

type costRow struct {
	Period        string  `json:"period"`
	CompositeKey  string  `json:"composite_key"`
	ModelName     string  `json:"model_name"`
	TotalCost     float64 `json:"total_cost"`
	TotalRequests int64   `json:"total_requests"`
	TotalInput    int64   `json:"total_input_tokens"`
}

func testCostAnalytics(t *testing.T, dsn string) {
	is := is.New(t)
	s := start(t, testConfig(dsn))
	home := s.register("home@example.com")
	other := s.register("other@example.com")
	var adm struct {
		AccessToken string `json:"access_token"`
	}
	is.Equal(s.call("POST", "/api/auth/register", "", obj{"email": "admin@example.com", "password": "correct horse battery", "organization": "Ops"}, &adm), 201)

	// Nothing called yet: zeros, no models.
	var sum costSummary
	is.Equal(s.call("GET", "/api/costs/summary", home.key, nil, &sum), 200)
	is.Equal(sum.TotalRequests, int64(0))
	is.Equal(sum.MostUsed, nil)

	homeSchema := s.createSchema(home.key, "Company", companySchema)
	otherSchema := s.createSchema(other.key, "Company", companySchema)
	type syncOut struct {
		Cost         int64 `json:"cost"`
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	}
	var homeCost, homeIn int64
	for _, models := range [][]string{{"sandbox::echo"}, {"sandbox::echo", "sandbox::alt"}} {
		var out syncOut
		is.Equal(s.call("POST", "/api/single/enrich/sync", home.key, obj{"entity_data": obj{"name": "Acme"}, "schema_id": homeSchema, "models": models}, &out), 200)
		homeCost += out.Cost
		homeIn += out.InputTokens
	}
	var out syncOut
	is.Equal(s.call("POST", "/api/single/enrich/sync", other.key, obj{"entity_data": obj{"name": "Other"}, "schema_id": otherSchema, "models": []string{"sandbox::alt"}}, &out), 200)
	otherCost := out.Cost

	// The summary is the sum of what the runs reported.
	is.Equal(s.call("GET", "/api/costs/summary", home.key, nil, &sum), 200)
	is.Equal(sum.TotalCostMicro, homeCost)
	is.True(math.Abs(sum.TotalCost-float64(homeCost)/1e6) < 1e-9) // US dollars
	is.Equal(sum.TotalInputTokens, homeIn)
	is.True(sum.TotalRequests >= 3) // one call per expertise domain and model, at least
	is.Equal(*sum.MostUsed, "sandbox::echo")
	is.True(math.Abs(sum.AvgCostPerRequest-sum.TotalCost/float64(sum.TotalRequests)) < 1e-9)

	// Per model, costliest first, adding up to the summary.
	var models []costRow
	is.Equal(s.call("GET", "/api/costs/by-model", home.key, nil, &models), 200)
	is.Equal(len(models), 2)
	is.True(models[0].TotalCost >= models[1].TotalCost)
	is.Equal(models[0].TotalRequests+models[1].TotalRequests, sum.TotalRequests)
	is.Equal(models[0].ModelName, models[0].CompositeKey[len("sandbox::"):])

	// Per day (today only), per week and per month: one row each, the
	// same totals.
	today := time.Now().UTC().Format(time.DateOnly)
	for _, g := range []string{"", "day", "week", "month"} {
		var rows []costRow
		path := "/api/costs/stats"
		if g != "" {
			path += "?group_by=" + g
		}
		is.Equal(s.call("GET", path, home.key, nil, &rows), 200)
		is.Equal(len(rows), 1)
		is.Equal(rows[0].TotalRequests, sum.TotalRequests)
		if g == "" || g == "day" {
			is.Equal(rows[0].Period, today)
		}
	}
	// A period that holds nothing.
	var rows []costRow
	is.Equal(s.call("GET", "/api/costs/stats?start_date=2020-01-01&end_date=2020-02-01", home.key, nil, &rows), 200)
	is.Equal(len(rows), 0)

	// Presets agree with the summary.
	var preset struct {
		Preset  string      `json:"preset"`
		Summary costSummary `json:"summary"`
		Daily   []costRow   `json:"daily"`
		ByModel []costRow   `json:"by_model"`
	}
	is.Equal(s.call("GET", "/api/costs/presets/7d", home.key, nil, &preset), 200)
	is.Equal(preset.Summary.TotalCostMicro, homeCost)
	is.Equal(len(preset.Daily), 1)
	is.Equal(len(preset.ByModel), 2)

	// Performance: every call succeeded; narrowed to a kind of work.
	var perf struct {
		TotalRequests int64   `json:"total_requests"`
		SuccessRate   float64 `json:"success_rate"`
		ByModel       []struct {
			CompositeKey string `json:"composite_key"`
		} `json:"by_model"`
	}
	is.Equal(s.call("GET", "/api/costs/performance?record_type=enrichment", home.key, nil, &perf), 200)
	is.Equal(perf.TotalRequests, sum.TotalRequests)
	is.Equal(perf.SuccessRate, 1.0)
	is.Equal(s.call("GET", "/api/costs/performance/presets/90d?record_type=schema_generation", home.key, nil, &perf), 200)
	is.Equal(perf.TotalRequests, int64(0))

	// Each organization sees its own; all_orgs and another organization's
	// figures are for system administrators.
	var otherSum costSummary
	is.Equal(s.call("GET", "/api/costs/summary", other.key, nil, &otherSum), 200)
	is.Equal(otherSum.TotalCostMicro, otherCost)
	is.Equal(s.call("GET", "/api/costs/summary?all_orgs=true", home.key, nil, nil), 403)
	is.Equal(s.call("GET", "/api/costs/summary?organization_id="+other.orgID, home.key, nil, nil), 403)
	is.Equal(s.call("GET", "/api/costs/summary?organization_id="+home.orgID, home.key, nil, &sum), 200) // its own: fine
	var all costSummary
	is.Equal(s.call("GET", "/api/costs/summary?all_orgs=true", adm.AccessToken, nil, &all), 200)
	is.Equal(all.TotalCostMicro, homeCost+otherCost)
	is.Equal(s.call("GET", "/api/costs/summary?organization_id="+other.orgID, adm.AccessToken, nil, &all), 200)
	is.Equal(all.TotalCostMicro, otherCost)

	// Bad parameters are 400s naming them.
	for _, tc := range []struct{ path, field string }{
		{"/api/costs/summary?start_date=yesterday", "start_date"},
		{"/api/costs/summary?end_date=2026-13-01", "end_date"},
		{"/api/costs/summary?start_date=2026-02-01&end_date=2026-01-01", "end_date"},
		{"/api/costs/stats?group_by=year", "group_by"},
		{"/api/costs/presets/1y", "preset"},
		{"/api/costs/performance?record_type=fusion", "record_type"},
		{"/api/costs/summary?all_orgs=maybe", "all_orgs"},
	} {
		var e struct {
			Field string `json:"field"`
		}
		st := s.call("GET", tc.path, home.key, nil, &e)
		if st != 400 || e.Field != tc.field {
			t.Errorf("%s: got %d naming %q, want 400 naming %q", tc.path, st, e.Field, tc.field)
		}
	}
}

package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/rotation"
)

// Provider keys: the organization's own on /api/org-keys (owners), the
// global ones on /api/global-keys (system administrators). Both answer the
// reference's ProviderKeyResponse; the secret is never returned, only its
// last 4 characters.
func (s *Server) registerProviderKeyRoutes(r *mux.Router) {
	for _, sc := range []struct {
		base  string
		scope app.KeyScope
	}{{"/api/org-keys", app.OrgKeys}, {"/api/global-keys", app.GlobalKeys}} {
		scope := sc.scope
		r.HandleFunc(sc.base, func(w http.ResponseWriter, r *http.Request) { s.listProviderKeys(w, r, scope) }).Methods(http.MethodGet)
		r.HandleFunc(sc.base, func(w http.ResponseWriter, r *http.Request) { s.createProviderKey(w, r, scope) }).Methods(http.MethodPost)
		if scope == app.GlobalKeys {
			r.HandleFunc(sc.base+"/test-all", s.testAllGlobalKeys).Methods(http.MethodPost)
		}
		r.HandleFunc(sc.base+"/{key_id}", func(w http.ResponseWriter, r *http.Request) { s.updateProviderKey(w, r, scope) }).Methods(http.MethodPatch)
		r.HandleFunc(sc.base+"/{key_id}", func(w http.ResponseWriter, r *http.Request) { s.deleteProviderKey(w, r, scope) }).Methods(http.MethodDelete)
		r.HandleFunc(sc.base+"/{key_id}/enable", func(w http.ResponseWriter, r *http.Request) { s.enableProviderKey(w, r, scope) }).Methods(http.MethodPost)
		r.HandleFunc(sc.base+"/{key_id}/health-check", func(w http.ResponseWriter, r *http.Request) { s.testProviderKey(w, r, scope) }).Methods(http.MethodPost)
	}
}

// providerKeyJSON is the reference's ProviderKeyResponse.
type providerKeyJSON struct {
	ID                string     `json:"id"`
	OrganizationID    *string    `json:"organization_id"`
	Provider          string     `json:"provider"`
	Name              string     `json:"name"`
	KeySuffix         *string    `json:"key_suffix"`
	Source            string     `json:"source"`
	IsEnabled         bool       `json:"is_enabled"`
	DisabledReason    *string    `json:"disabled_reason"`
	HealthCheckStatus string     `json:"health_check_status"`
	LastHealthCheckAt *time.Time `json:"last_health_check_at"`
	ExpiresAt         *time.Time `json:"expires_at"`
	ExpiresSoon       bool       `json:"expires_soon"`
	RateLimitedUntil  *time.Time `json:"rate_limited_until"`
	LastUsedAt        *time.Time `json:"last_used_at"`
	TotalRequests     int64      `json:"total_requests"`
	TotalCostUSD      float64    `json:"total_cost_usd"`
	CreatedAt         time.Time  `json:"created_at"`
}

func toProviderKey(k *rotation.Key, now time.Time) providerKeyJSON {
	out := providerKeyJSON{ID: k.ID, Provider: k.Provider, Name: k.Name, Source: string(k.Source()),
		HealthCheckStatus: string(k.Health), LastHealthCheckAt: k.CheckedAt, ExpiresAt: k.ExpiresAt, ExpiresSoon: k.ExpiresSoon(now),
		LastUsedAt: k.LastUsedAt, TotalRequests: k.Uses, TotalCostUSD: model.USD(k.Spent), CreatedAt: k.CreatedAt}
	if k.OrgID != "" {
		org := k.OrgID
		out.OrganizationID = &org
	}
	if k.Suffix != "" {
		suffix := k.Suffix
		out.KeySuffix = &suffix
	}
	reason := k.Out(now)
	out.IsEnabled = reason == "" || reason == rotation.RateLimited
	if reason != "" && reason != rotation.RateLimited {
		r := string(reason)
		out.DisabledReason = &r
	}
	if reason == rotation.RateLimited {
		out.RateLimitedUntil = k.RestUntil
	}
	return out
}

// keyCheckJSON is the reference's KeyHealthCheckResponse.
type keyCheckJSON struct {
	KeyID     string          `json:"key_id"`
	Provider  string          `json:"provider"`
	Name      string          `json:"name"`
	Status    string          `json:"status"`
	IsValid   bool            `json:"is_valid"`
	Message   *string         `json:"message"`
	CheckedAt time.Time       `json:"checked_at"`
	Key       providerKeyJSON `json:"key"`
}

func toKeyCheck(c app.KeyCheck, now time.Time) keyCheckJSON {
	out := keyCheckJSON{KeyID: c.Key.ID, Provider: c.Key.Provider, Name: c.Key.Name, Status: c.Status, IsValid: c.Status == "valid",
		CheckedAt: c.CheckedAt, Key: toProviderKey(c.Key, now)}
	if c.Message != "" {
		m := c.Message
		out.Message = &m
	}
	return out
}

func (s *Server) listProviderKeys(w http.ResponseWriter, r *http.Request, scope app.KeyScope) {
	ks, err := s.keys.List(r.Context(), principal(r), scope)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	now := time.Now()
	out := make([]providerKeyJSON, len(ks))
	for i, k := range ks {
		out[i] = toProviderKey(k, now)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createProviderKey(w http.ResponseWriter, r *http.Request, scope app.KeyScope) {
	var in struct {
		Provider   string          `json:"provider"`
		ProviderID json.RawMessage `json:"provider_id"`
		APIKey     string          `json:"api_key"`
		Name       string          `json:"name"`
		ExpiresAt  *time.Time      `json:"expires_at"`
	}
	if !s.decode(w, r, &in) {
		return
	}
	k, err := s.keys.Create(r.Context(), principal(r), scope, app.NewProviderKey{Provider: in.Provider, ProviderID: in.ProviderID,
		APIKey: in.APIKey, Name: in.Name, ExpiresAt: in.ExpiresAt})
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, toProviderKey(k, time.Now()))
}

func (s *Server) updateProviderKey(w http.ResponseWriter, r *http.Request, scope app.KeyScope) {
	var in struct {
		Name      *string         `json:"name"`
		APIKey    *string         `json:"api_key"`
		IsEnabled *bool           `json:"is_enabled"`
		ExpiresAt json.RawMessage `json:"expires_at"`
	}
	if !s.decode(w, r, &in) {
		return
	}
	ch := app.ProviderKeyChange{Name: in.Name, APIKey: in.APIKey, Enabled: in.IsEnabled}
	if len(in.ExpiresAt) > 0 {
		ch.SetExpiry = true
		if !bytes.Equal(in.ExpiresAt, []byte("null")) {
			var t time.Time
			if err := json.Unmarshal(in.ExpiresAt, &t); err != nil {
				s.Error(w, r, app.Invalid("expires_at", "expires_at must be an RFC 3339 date-time or null"))
				return
			}
			ch.ExpiresAt = &t
		}
	}
	k, err := s.keys.Update(r.Context(), principal(r), scope, mux.Vars(r)["key_id"], ch)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toProviderKey(k, time.Now()))
}

func (s *Server) deleteProviderKey(w http.ResponseWriter, r *http.Request, scope app.KeyScope) {
	if err := s.keys.Delete(r.Context(), principal(r), scope, mux.Vars(r)["key_id"]); err != nil {
		s.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) enableProviderKey(w http.ResponseWriter, r *http.Request, scope app.KeyScope) {
	k, err := s.keys.Enable(r.Context(), principal(r), scope, mux.Vars(r)["key_id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toProviderKey(k, time.Now()))
}

func (s *Server) testProviderKey(w http.ResponseWriter, r *http.Request, scope app.KeyScope) {
	c, err := s.keys.Test(r.Context(), principal(r), scope, mux.Vars(r)["key_id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toKeyCheck(c, time.Now()))
}

func (s *Server) testAllGlobalKeys(w http.ResponseWriter, r *http.Request) {
	cs, err := s.keys.TestAll(r.Context(), principal(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	now := time.Now()
	out := make([]keyCheckJSON, len(cs))
	for i, c := range cs {
		out[i] = toKeyCheck(c, now)
	}
	writeJSON(w, http.StatusOK, out)
}

package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"
	"time"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
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

// toProviderKey maps a key to the reference's ProviderKeyResponse.
func toProviderKey(k *rotation.Key, now time.Time) api.ProviderKey {
	out := api.ProviderKey{Id: k.ID, Provider: k.Provider, Name: k.Name, Source: api.ProviderKeySource(k.Source()),
		HealthCheckStatus: api.ProviderKeyHealthCheckStatus(k.Health), LastHealthCheckAt: k.CheckedAt, ExpiresAt: k.ExpiresAt,
		ExpiresSoon: k.ExpiresSoon(now), LastUsedAt: k.LastUsedAt, TotalRequests: int(k.Uses), TotalCostUsd: model.USD(k.Spent),
		CreatedAt: k.CreatedAt, OrganizationId: nilIfEmpty(k.OrgID), KeySuffix: nilIfEmpty(k.Suffix)}
	reason := k.Out(now)
	out.IsEnabled = reason == "" || reason == rotation.RateLimited
	if reason != "" && reason != rotation.RateLimited {
		r := api.ProviderKeyDisabledReason(reason)
		out.DisabledReason = &r
	}
	if reason == rotation.RateLimited {
		out.RateLimitedUntil = k.RestUntil
	}
	return out
}

// toKeyCheck maps a health check to the reference's KeyHealthCheckResponse.
func toKeyCheck(c app.KeyCheck, now time.Time) api.KeyHealthCheck {
	return api.KeyHealthCheck{KeyId: c.Key.ID, Provider: c.Key.Provider, Name: c.Key.Name,
		Status: api.KeyHealthCheckStatus(c.Status), IsValid: c.Status == "valid", Message: nilIfEmpty(c.Message),
		CheckedAt: c.CheckedAt, Key: toProviderKey(c.Key, now)}
}

func toNewProviderKey(in api.CreateProviderKeyRequest) app.NewProviderKey {
	return app.NewProviderKey{Provider: deref(in.Provider), ProviderID: in.ProviderId, APIKey: in.ApiKey,
		Name: deref(in.Name), ExpiresAt: in.ExpiresAt}
}

// toProviderKeyChange maps an update; expires_at is absent (unchanged),
// null (no expiry) or a date-time.
func toProviderKeyChange(in api.UpdateProviderKeyRequest) (app.ProviderKeyChange, error) {
	ch := app.ProviderKeyChange{Name: in.Name, APIKey: in.ApiKey, Enabled: in.IsEnabled}
	if len(in.ExpiresAt) > 0 {
		ch.SetExpiry = true
		if !bytes.Equal(in.ExpiresAt, []byte("null")) {
			var t time.Time
			if err := json.Unmarshal(in.ExpiresAt, &t); err != nil {
				return ch, app.Invalid("expires_at", "expires_at must be an RFC 3339 date-time or null")
			}
			ch.ExpiresAt = &t
		}
	}
	return ch, nil
}

// deref is a pointer's value, or the zero value for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func (s *Server) listProviderKeys(w http.ResponseWriter, r *http.Request, scope app.KeyScope) {
	ks, err := s.keys.List(r.Context(), principal(r), scope)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	now := time.Now()
	out := make([]api.ProviderKey, len(ks))
	for i, k := range ks {
		out[i] = toProviderKey(k, now)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createProviderKey(w http.ResponseWriter, r *http.Request, scope app.KeyScope) {
	var in api.CreateProviderKeyRequest
	if !s.decode(w, r, &in) {
		return
	}
	k, err := s.keys.Create(r.Context(), principal(r), scope, toNewProviderKey(in))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, toProviderKey(k, time.Now()))
}

func (s *Server) updateProviderKey(w http.ResponseWriter, r *http.Request, scope app.KeyScope) {
	var in api.UpdateProviderKeyRequest
	if !s.decode(w, r, &in) {
		return
	}
	ch, err := toProviderKeyChange(in)
	if err != nil {
		s.Error(w, r, err)
		return
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
	out := make([]api.KeyHealthCheck, len(cs))
	for i, c := range cs {
		out[i] = toKeyCheck(c, now)
	}
	writeJSON(w, http.StatusOK, out)
}

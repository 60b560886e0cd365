package httpapi

import (
	"net/http"
	"strconv"

	"github.com/gorilla/mux"
	"github.com/oapi-codegen/nullable"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/orgprovider"
)

// An organization's own OpenAI-compatible providers, on the reference's
// /api/providers paths (owners). The key is never returned, only its last 4
// characters; every request to the endpoint goes through the SSRF guard.
func (s *Server) registerOrgProviderRoutes(r *mux.Router) {
	// Before /api/providers/{provider_id}/…: "models" is not a provider id.
	r.HandleFunc("/api/providers/models/{model_id}", s.getOrgProviderModel).Methods(http.MethodGet)
	r.HandleFunc("/api/providers/models/{model_id}", s.updateOrgProviderModel).Methods(http.MethodPatch)
	r.HandleFunc("/api/providers/models/{model_id}", s.deleteOrgProviderModel).Methods(http.MethodDelete)
	r.HandleFunc("/api/providers", s.listOrgProviders).Methods(http.MethodGet)
	r.HandleFunc("/api/providers", s.createOrgProvider).Methods(http.MethodPost)
	r.HandleFunc("/api/providers/{provider_id}", s.getOrgProvider).Methods(http.MethodGet)
	r.HandleFunc("/api/providers/{provider_id}", s.updateOrgProvider).Methods(http.MethodPatch)
	r.HandleFunc("/api/providers/{provider_id}", s.deleteOrgProvider).Methods(http.MethodDelete)
	r.HandleFunc("/api/providers/{provider_id}/models", s.addOrgProviderModel).Methods(http.MethodPost)
	r.HandleFunc("/api/providers/{provider_id}/test-connection", s.testOrgProvider).Methods(http.MethodPost)
	r.HandleFunc("/api/providers/{provider_id}/discover-models", s.discoverOrgProviderModels).Methods(http.MethodPost)
}

func usdPerMTok(micro *int64) *float64 {
	if micro == nil {
		return nil
	}
	v := model.USD(*micro)
	return &v
}

// toOrgModel is the document's ModelResponse: prices in USD per million
// tokens.
func toOrgModel(p *orgprovider.Provider, m orgprovider.Model) api.ModelResponse {
	out := api.ModelResponse{Id: m.ID, ProviderId: p.ID, ProviderName: p.Name, Name: m.Name,
		ModelKey: model.Key{Provider: p.Name, Model: m.Name}.String(), InputPrice: usdPerMTok(m.InputPerMTok),
		OutputPrice: usdPerMTok(m.OutputPerMTok), Source: "manual", IsEnabled: p.Enabled, CreatedAt: m.CreatedAt,
		SupportsResponseSchema: m.Caps.ResponseSchema, SupportsStrictStructuredOutput: m.Caps.StrictOutput,
		SupportsVision: m.Caps.Vision, SupportsPdfInput: m.Caps.PDFInput, SupportsReasoning: m.Caps.Reasoning,
		SupportsToolCalls: m.Caps.ToolCalls, SupportsAudioInput: m.Caps.AudioInput, SupportsVideoInput: m.Caps.VideoInput}
	// No commission is added to what an organization pays: billed is declared.
	out.InputPriceBilled, out.OutputPriceBilled = out.InputPrice, out.OutputPrice
	if m.ContextLength > 0 {
		n := m.ContextLength
		out.ContextLength = &n
	}
	if m.Discovered {
		out.Source = "discovered"
	}
	return out
}

// toOrgProvider is the document's ProviderResponse (never the key).
func toOrgProvider(p *orgprovider.Provider) api.ProviderResponse {
	out := api.ProviderResponse{Id: p.ID, OrganizationId: p.OrgID, Name: p.Name, Type: api.ProviderResponseType(p.Type),
		BaseUrl: p.BaseURL, HasApiKey: p.HasKey(), IsEnabled: p.Enabled, ModelCount: len(p.Models),
		Models: make([]api.ModelResponse, len(p.Models)), CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt}
	if p.Suffix != "" {
		suffix := p.Suffix
		out.KeySuffix = &suffix
	}
	for i, m := range p.Models {
		out.Models[i] = toOrgModel(p, m)
	}
	return out
}

// toNewOrgModel maps the document's ModelCreate.
func toNewOrgModel(m api.ModelCreate) app.NewOrgModel {
	return app.NewOrgModel{Name: m.Name, ContextLength: m.ContextLength, InputPrice: m.InputPrice, OutputPrice: m.OutputPrice,
		Caps: orgprovider.Caps{ResponseSchema: deref(m.SupportsResponseSchema), StrictOutput: deref(m.SupportsStrictStructuredOutput),
			Vision: deref(m.SupportsVision), PDFInput: deref(m.SupportsPdfInput), Reasoning: deref(m.SupportsReasoning),
			ToolCalls: deref(m.SupportsToolCalls), AudioInput: deref(m.SupportsAudioInput), VideoInput: deref(m.SupportsVideoInput)}}
}

// toNewOrgProvider maps the document's ProviderCreate (a null api_key is no
// key, as an absent one).
func toNewOrgProvider(in api.ProviderCreate) app.NewOrgProvider {
	np := app.NewOrgProvider{Name: in.Name, Type: string(deref(in.Type)), BaseURL: in.BaseUrl, Enabled: in.IsEnabled,
		APIKey: deref(in.ApiKey)}
	for _, m := range deref(in.Models) {
		np.Models = append(np.Models, toNewOrgModel(m))
	}
	return np
}

// toOrgProviderChange maps the document's ProviderUpdate: an absent api_key
// keeps the key, a string replaces it, null (or "") removes it.
func toOrgProviderChange(in api.ProviderUpdate) app.OrgProviderChange {
	ch := app.OrgProviderChange{Name: in.Name, BaseURL: in.BaseUrl, Enabled: in.IsEnabled}
	var key *string
	ch.SetKey, key = specified(in.ApiKey)
	ch.APIKey = deref(key)
	return ch
}

func (s *Server) listOrgProviders(w http.ResponseWriter, r *http.Request) {
	inactive := false
	if raw := r.URL.Query().Get("include_inactive"); raw != "" {
		b, err := strconv.ParseBool(raw)
		if err != nil {
			s.Error(w, r, app.Invalid("include_inactive", "include_inactive must be true or false"))
			return
		}
		inactive = b
	}
	ps, err := s.orgProviders.List(r.Context(), principal(r), inactive)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := make([]api.ProviderResponse, len(ps))
	for i, p := range ps {
		out[i] = toOrgProvider(p)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createOrgProvider(w http.ResponseWriter, r *http.Request) {
	var in api.ProviderCreate
	if !s.decode(w, r, &in) {
		return
	}
	p, err := s.orgProviders.Create(r.Context(), principal(r), toNewOrgProvider(in))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, toOrgProvider(p))
}

func (s *Server) getOrgProvider(w http.ResponseWriter, r *http.Request) {
	p, err := s.orgProviders.Get(r.Context(), principal(r), mux.Vars(r)["provider_id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toOrgProvider(p))
}

func (s *Server) updateOrgProvider(w http.ResponseWriter, r *http.Request) {
	var in api.ProviderUpdate
	if !s.decode(w, r, &in) {
		return
	}
	p, err := s.orgProviders.Update(r.Context(), principal(r), mux.Vars(r)["provider_id"], toOrgProviderChange(in))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toOrgProvider(p))
}

func (s *Server) deleteOrgProvider(w http.ResponseWriter, r *http.Request) {
	if err := s.orgProviders.Delete(r.Context(), principal(r), mux.Vars(r)["provider_id"]); err != nil {
		s.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) addOrgProviderModel(w http.ResponseWriter, r *http.Request) {
	var in api.ModelCreate
	if !s.decode(w, r, &in) {
		return
	}
	p, m, err := s.orgProviders.AddModel(r.Context(), principal(r), mux.Vars(r)["provider_id"], toNewOrgModel(in))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, toOrgModel(p, m))
}

func (s *Server) testOrgProvider(w http.ResponseWriter, r *http.Request) {
	id := mux.Vars(r)["provider_id"]
	c, err := s.orgProviders.TestConnection(r.Context(), principal(r), id)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := api.TestConnectionResponse{ProviderId: id, Success: c.Success, Message: c.Message, LatencyMs: int(c.Latency.Milliseconds())}
	if c.Model != "" {
		out.Model = &c.Model
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) discoverOrgProviderModels(w http.ResponseWriter, r *http.Request) {
	d, err := s.orgProviders.DiscoverModels(r.Context(), principal(r), mux.Vars(r)["provider_id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := api.DiscoverModelsResponse{ProviderId: d.Provider.ID, DiscoveredCount: d.Listed, ImportedCount: len(d.Imported),
		Imported: make([]api.ModelResponse, len(d.Imported)), Provider: toOrgProvider(d.Provider)}
	for i, m := range d.Imported {
		out.Imported[i] = toOrgModel(d.Provider, m)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) getOrgProviderModel(w http.ResponseWriter, r *http.Request) {
	p, m, err := s.orgProviders.GetModel(r.Context(), principal(r), mux.Vars(r)["model_id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toOrgModel(p, m))
}

func (s *Server) updateOrgProviderModel(w http.ResponseWriter, r *http.Request) {
	var in api.ModelUpdate
	if !s.decode(w, r, &in) {
		return
	}
	p, m, err := s.orgProviders.UpdateModel(r.Context(), principal(r), mux.Vars(r)["model_id"], toOrgModelChange(in))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toOrgModel(p, m))
}

// toOrgModelChange maps the document's ModelUpdate: an absent field keeps
// its value, null clears a context size (unknown) or a price (none).
func toOrgModelChange(in api.ModelUpdate) app.OrgModelChange {
	ch := app.OrgModelChange{Name: in.Name, Caps: app.OrgCapsChange{ResponseSchema: in.SupportsResponseSchema,
		StrictOutput: in.SupportsStrictStructuredOutput, Vision: in.SupportsVision, PDFInput: in.SupportsPdfInput,
		Reasoning: in.SupportsReasoning, ToolCalls: in.SupportsToolCalls, AudioInput: in.SupportsAudioInput,
		VideoInput: in.SupportsVideoInput}}
	if set, n := specified(in.ContextLength); set {
		known := deref(n) // null: unknown (0)
		ch.ContextLength = &known
	}
	ch.SetInputPrice, ch.InputPrice = specified(in.InputPrice)
	ch.SetOutputPrice, ch.OutputPrice = specified(in.OutputPrice)
	return ch
}

// specified reads a tri-state field: whether it was given, and its value
// (nil for null).
func specified[T any](v nullable.Nullable[T]) (bool, *T) {
	if !v.IsSpecified() || v.IsNull() {
		return v.IsSpecified(), nil
	}
	x := v.MustGet()
	return true, &x
}

func (s *Server) deleteOrgProviderModel(w http.ResponseWriter, r *http.Request) {
	if err := s.orgProviders.DeleteModel(r.Context(), principal(r), mux.Vars(r)["model_id"]); err != nil {
		s.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

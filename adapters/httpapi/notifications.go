package httpapi

import (
	"encoding/json"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/ports"
)

// registerNotificationRoutes adds schema event subscriptions and the links'
// delta webhooks.
func (s *Server) registerNotificationRoutes(r *mux.Router) {
	r.HandleFunc("/api/schemas/{schema_id}/subscriptions", s.listSubscriptions).Methods(http.MethodGet)
	r.HandleFunc("/api/schemas/{schema_id}/subscriptions", s.createSubscription).Methods(http.MethodPost)
	r.HandleFunc("/api/schemas/{schema_id}/subscriptions", s.deleteSubscriptions).Methods(http.MethodDelete)
	r.HandleFunc("/api/databases/{database_id}/schemas/{saved_schema_id}/webhook", s.setLinkWebhook).Methods(http.MethodPut)
	r.HandleFunc("/api/databases/{database_id}/webhook-secret", s.getWebhookSecret).Methods(http.MethodGet)
}

func toSubscription(sub *ports.Subscription) api.SchemaEventSubscription {
	return api.SchemaEventSubscription{Id: sub.ID, SavedSchemaId: sub.SchemaID, Url: sub.URL, Source: sub.Source,
		CreatedAt: sub.CreatedAt}
}

func (s *Server) listSubscriptions(w http.ResponseWriter, r *http.Request) {
	subs, err := s.notifications.ListSubscriptions(r.Context(), principal(r), mux.Vars(r)["schema_id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := make([]api.SchemaEventSubscription, 0, len(subs))
	for _, sub := range subs {
		out = append(out, toSubscription(sub))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) createSubscription(w http.ResponseWriter, r *http.Request) {
	var in api.SchemaEventSubscriptionCreateRequest
	if !s.decode(w, r, &in) {
		return
	}
	input := app.SubscriptionInput{URL: in.Url}
	if in.Source != nil {
		input.Source = string(*in.Source)
	}
	sub, secret, err := s.notifications.CreateSubscription(r.Context(), principal(r), mux.Vars(r)["schema_id"], input)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusCreated, api.SchemaEventSubscriptionCreateResponse{Subscription: toSubscription(sub), Secret: secret})
}

func (s *Server) deleteSubscriptions(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	m := ports.SubscriptionMatch{ID: q.Get("subscription_id"), URL: q.Get("url")}
	if err := s.notifications.DeleteSubscriptions(r.Context(), principal(r), mux.Vars(r)["schema_id"], m); err != nil {
		s.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) setLinkWebhook(w http.ResponseWriter, r *http.Request) {
	var in api.LinkWebhookRequest
	if !s.decode(w, r, &in) {
		return
	}
	v := mux.Vars(r)
	secret, err := s.notifications.SetLinkWebhook(r.Context(), principal(r), v["database_id"], v["saved_schema_id"], in.WebhookUrl)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.WebhookSecretResponse{WebhookSecret: secret})
}

func (s *Server) getWebhookSecret(w http.ResponseWriter, r *http.Request) {
	secret, err := s.notifications.WebhookSecret(r.Context(), principal(r), mux.Vars(r)["database_id"],
		r.URL.Query().Get("saved_schema_id"))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.WebhookSecretResponse{WebhookSecret: secret})
}

// RecordEventData is a record as GET /api/records/{id} shows it: the data
// of its schema events (app.SchemaEvents.Render).
func RecordEventData(rc *enrichment.Record) (json.RawMessage, error) {
	return json.Marshal(toRecordDetail(rc))
}

package webhook

import "encoding/json"

// Event names a notification.
type Event string

const (
	// EnrichmentResult is sent to a schema's subscriptions for every
	// enrichment record a job stores under the schema.
	EnrichmentResult Event = "enrichment_result"
	// RejectedForDatabaseSave is sent to a schema's subscriptions when the
	// entity layer refused a record (its database outcome says why).
	RejectedForDatabaseSave Event = "rejected_for_database_save"
	// DeltasAvailable is sent to a link's webhook when deltas are waiting
	// in the registration's feed.
	DeltasAvailable Event = "deltas_available"
)

// Envelope is the JSON body of every delivery.
type Envelope struct {
	Event Event           `json:"event"`
	Data  json.RawMessage `json:"data"`
}

// Body is the raw body of an event with data.
func Body(e Event, data json.RawMessage) []byte {
	if len(data) == 0 {
		data = json.RawMessage("{}")
	}
	b, _ := json.Marshal(Envelope{Event: e, Data: data})
	return b
}

// DeltasData is the data of a DeltasAvailable notification: the consumer
// pulls GET /api/databases/{database_id}/changes; max_delta_id is the
// newest delta of the link's schema when it was sent.
type DeltasData struct {
	DatabaseID    string `json:"database_id"`
	SavedSchemaID string `json:"saved_schema_id"`
	MaxDeltaID    int64  `json:"max_delta_id"`
}

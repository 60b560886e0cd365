package jobcodec

// The stored format of the jobs' requests (the job row's request column):
// app.JobRequests in JSON. The tagged types below are the format, written
// exactly as the app's request types were marshalled before they lost
// their tags, so rows written by earlier versions decode and new rows are
// byte for byte the same (TestFixtures).

import (
	"encoding/json"

	"github.com/entityenrich/enrich/app"
)

// Codec implements app.JobRequests with encoding/json.
type Codec struct{}

var _ app.JobRequests = Codec{}

// New returns the codec (a Wire provider).
func New() Codec { return Codec{} }

type enrichRequest struct {
	EntityData                   json.RawMessage `json:"entity_data"`
	SchemaID                     string          `json:"schema_id"`
	Models                       []string        `json:"models,omitempty"`
	Model                        string          `json:"model,omitempty"`
	Strategy                     string          `json:"strategy,omitempty"`
	EnableWebSearch              bool            `json:"enable_web_search,omitempty"`
	Languages                    []string        `json:"languages,omitempty"`
	EnableResponseSchema         *bool           `json:"enable_response_schema,omitempty"`
	EnableStrictStructuredOutput bool            `json:"enable_strict_structured_output,omitempty"`
	DatabaseSync                 *bool           `json:"database_sync,omitempty"`
	ClassificationModel          *string         `json:"classification_model,omitempty"`
	ArbitrationModel             *string         `json:"arbitration_model,omitempty"`
	AttachmentIDs                []string        `json:"attachment_ids,omitempty"`
	TargetSchema                 json.RawMessage `json:"target_schema,omitempty"`
	PauseTimeoutSeconds          *int            `json:"pause_timeout_seconds,omitempty"`
}

func fromEnrich(r app.EnrichRequest) enrichRequest {
	return enrichRequest{EntityData: r.EntityData, SchemaID: r.SchemaID, Models: r.Models, Model: r.Model,
		Strategy: r.Strategy, EnableWebSearch: r.EnableWebSearch, Languages: r.Languages,
		EnableResponseSchema: r.EnableResponseSchema, EnableStrictStructuredOutput: r.EnableStrictStructuredOutput,
		DatabaseSync: r.DatabaseSync, ClassificationModel: r.ClassificationModel, ArbitrationModel: r.ArbitrationModel,
		AttachmentIDs: r.AttachmentIDs, TargetSchema: r.TargetSchema, PauseTimeoutSeconds: r.PauseTimeoutSeconds}
}

func (d enrichRequest) app() app.EnrichRequest {
	return app.EnrichRequest{EntityData: d.EntityData, SchemaID: d.SchemaID, Models: d.Models, Model: d.Model,
		Strategy: d.Strategy, EnableWebSearch: d.EnableWebSearch, Languages: d.Languages,
		EnableResponseSchema: d.EnableResponseSchema, EnableStrictStructuredOutput: d.EnableStrictStructuredOutput,
		DatabaseSync: d.DatabaseSync, ClassificationModel: d.ClassificationModel, ArbitrationModel: d.ArbitrationModel,
		AttachmentIDs: d.AttachmentIDs, TargetSchema: d.TargetSchema, PauseTimeoutSeconds: d.PauseTimeoutSeconds}
}

// batchRequest embeds the enrich request: its keys come first, as they did.
type batchRequest struct {
	enrichRequest
	Entities        []json.RawMessage `json:"entities"`
	SelectedIndices []int             `json:"selected_indices,omitempty"`
}

type mergeRequest struct {
	ResultIDs        []string `json:"result_ids"`
	ArbitrationModel *string  `json:"arbitration_model,omitempty"`
	AttachmentIDs    []string `json:"attachment_ids,omitempty"`
	DatabaseSync     *bool    `json:"database_sync,omitempty"`
}

type generateRequest struct {
	EntitySamples              json.RawMessage `json:"entity_samples"`
	Model                      string          `json:"model,omitempty"`
	Language                   *string         `json:"language,omitempty"`
	SampleCommonalityThreshold *float64        `json:"sample_commonality_threshold,omitempty"`
	StrictFieldConformance     *bool           `json:"strict_field_conformance,omitempty"`
	SaveSchema                 *bool           `json:"save_schema,omitempty"`
	GenerateSemanticIDs        bool            `json:"generate_semantic_ids,omitempty"`
	AttachmentIDs              []string        `json:"attachment_ids,omitempty"`
	SampleInputs               json.RawMessage `json:"sample_inputs,omitempty"`
}

type editRequest struct {
	SchemaID      string   `json:"schema_id"`
	Prompt        string   `json:"prompt"`
	Model         string   `json:"model,omitempty"`
	AttachmentIDs []string `json:"attachment_ids,omitempty"`
}

// sampleRequest has no Accept-Language: the stored request keeps the
// language the app resolved it to.
type sampleRequest struct {
	EntityType          string   `json:"entity_type"`
	Fields              []string `json:"fields,omitempty"`
	ExtraInstructions   *string  `json:"extra_instructions,omitempty"`
	SampleCount         *int     `json:"sample_count,omitempty"`
	TypicalObjects      []string `json:"typical_objects,omitempty"`
	NamingConvention    string   `json:"naming_convention,omitempty"`
	Language            *string  `json:"language,omitempty"`
	EnableWebSearch     bool     `json:"enable_web_search,omitempty"`
	AutoAnswer          *bool    `json:"auto_answer,omitempty"`
	Model               string   `json:"model,omitempty"`
	AttachmentIDs       []string `json:"attachment_ids,omitempty"`
	PauseTimeoutSeconds *int     `json:"pause_timeout_seconds,omitempty"`
}

// decode reads a stored request into its format type.
func decode[T any](b []byte) (T, error) {
	var d T
	err := json.Unmarshal(b, &d)
	return d, err
}

func (Codec) EncodeEnrich(r app.EnrichRequest) ([]byte, error) { return json.Marshal(fromEnrich(r)) }

func (Codec) DecodeEnrich(b []byte) (app.EnrichRequest, error) {
	d, err := decode[enrichRequest](b)
	return d.app(), err
}

func (Codec) EncodeBatch(r app.BatchRequest) ([]byte, error) {
	return json.Marshal(batchRequest{enrichRequest: fromEnrich(r.EnrichRequest), Entities: r.Entities,
		SelectedIndices: r.SelectedIndices})
}

func (Codec) DecodeBatch(b []byte) (app.BatchRequest, error) {
	d, err := decode[batchRequest](b)
	return app.BatchRequest{EnrichRequest: d.app(), Entities: d.Entities, SelectedIndices: d.SelectedIndices}, err
}

func (Codec) EncodeMerge(r app.MergeRequest) ([]byte, error) {
	return json.Marshal(mergeRequest{ResultIDs: r.ResultIDs, ArbitrationModel: r.ArbitrationModel,
		AttachmentIDs: r.AttachmentIDs, DatabaseSync: r.DatabaseSync})
}

func (Codec) DecodeMerge(b []byte) (app.MergeRequest, error) {
	d, err := decode[mergeRequest](b)
	return app.MergeRequest{ResultIDs: d.ResultIDs, ArbitrationModel: d.ArbitrationModel,
		AttachmentIDs: d.AttachmentIDs, DatabaseSync: d.DatabaseSync}, err
}

func (Codec) EncodeGenerate(r app.GenerateRequest) ([]byte, error) {
	return json.Marshal(generateRequest{EntitySamples: r.EntitySamples, Model: r.Model, Language: r.Language,
		SampleCommonalityThreshold: r.SampleCommonalityThreshold, StrictFieldConformance: r.StrictFieldConformance,
		SaveSchema: r.SaveSchema, GenerateSemanticIDs: r.GenerateSemanticIDs, AttachmentIDs: r.AttachmentIDs,
		SampleInputs: r.SampleInputs})
}

func (Codec) DecodeGenerate(b []byte) (app.GenerateRequest, error) {
	d, err := decode[generateRequest](b)
	return app.GenerateRequest{EntitySamples: d.EntitySamples, Model: d.Model, Language: d.Language,
		SampleCommonalityThreshold: d.SampleCommonalityThreshold, StrictFieldConformance: d.StrictFieldConformance,
		SaveSchema: d.SaveSchema, GenerateSemanticIDs: d.GenerateSemanticIDs, AttachmentIDs: d.AttachmentIDs,
		SampleInputs: d.SampleInputs}, err
}

func (Codec) EncodeEdit(r app.EditRequest) ([]byte, error) {
	return json.Marshal(editRequest{SchemaID: r.SchemaID, Prompt: r.Prompt, Model: r.Model, AttachmentIDs: r.AttachmentIDs})
}

func (Codec) DecodeEdit(b []byte) (app.EditRequest, error) {
	d, err := decode[editRequest](b)
	return app.EditRequest{SchemaID: d.SchemaID, Prompt: d.Prompt, Model: d.Model, AttachmentIDs: d.AttachmentIDs}, err
}

func (Codec) EncodeSample(r app.SampleRequest) ([]byte, error) {
	return json.Marshal(sampleRequest{EntityType: r.EntityType, Fields: r.Fields, ExtraInstructions: r.ExtraInstructions,
		SampleCount: r.SampleCount, TypicalObjects: r.TypicalObjects, NamingConvention: r.NamingConvention,
		Language: r.Language, EnableWebSearch: r.EnableWebSearch, AutoAnswer: r.AutoAnswer, Model: r.Model,
		AttachmentIDs: r.AttachmentIDs, PauseTimeoutSeconds: r.PauseTimeoutSeconds})
}

func (Codec) DecodeSample(b []byte) (app.SampleRequest, error) {
	d, err := decode[sampleRequest](b)
	return app.SampleRequest{EntityType: d.EntityType, Fields: d.Fields, ExtraInstructions: d.ExtraInstructions,
		SampleCount: d.SampleCount, TypicalObjects: d.TypicalObjects, NamingConvention: d.NamingConvention,
		Language: d.Language, EnableWebSearch: d.EnableWebSearch, AutoAnswer: d.AutoAnswer, Model: d.Model,
		AttachmentIDs: d.AttachmentIDs, PauseTimeoutSeconds: d.PauseTimeoutSeconds}, err
}

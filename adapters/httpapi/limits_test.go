package httpapi

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/matryer/is"

	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/modelsel"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/domain/sample"
	"github.com/entityenrich/enrich/domain/schema"
)

// TestLimitsAgreeWithGo: every limit, enum and default written both in the
// document and in Go is the same in both places (Go decides; the document
// is checked against it).
func TestLimitsAgreeWithGo(t *testing.T) {
	doc, err := LoadSpec()
	if err != nil {
		t.Fatal(err)
	}
	prop := func(component, name string) *openapi3.Schema {
		t.Helper()
		s := doc.Components.Schemas[component].Value.Properties[name]
		if s == nil {
			t.Fatalf("%s.%s is not in the document", component, name)
		}
		return s.Value
	}
	param := func(name string) *openapi3.Schema { return doc.Components.Parameters[name].Value.Schema.Value }
	// set is an enum or a list of names as a sorted list (order is not part
	// of the contract); null, the document's "absent" member, is left out.
	set := func(vs ...any) string {
		var out []string
		for _, v := range vs {
			if v != nil {
				out = append(out, fmt.Sprint(v))
			}
		}
		slices.Sort(out)
		return fmt.Sprint(out)
	}
	setOf := func(vs []string) string {
		as := make([]any, len(vs))
		for i, v := range vs {
			as[i] = v
		}
		return set(as...)
	}
	enum := func(component, name string) string { return set(prop(component, name).Enum...) }
	names := func(component string) string {
		var ns []string
		for n := range doc.Components.Schemas[component].Value.Properties {
			ns = append(ns, n)
		}
		return setOf(ns)
	}
	roles, healths := []string{}, []string{}
	for _, r := range access.Roles() {
		roles = append(roles, string(r))
	}
	for _, h := range rotation.Healths() {
		healths = append(healths, string(h))
	}
	pause := app.MaxPauseTimeout.Seconds()
	strategies := fmt.Sprint(enrichment.Strategies())
	recordTypes := fmt.Sprint(enrichment.RecordTypes())
	listType := doc.Paths.Find("/api/records").Get.Parameters.GetByInAndName("query", "type").Schema.Value
	tests := []struct {
		name      string
		doc, want any
	}{
		{"models per request", *prop("EnrichRequest", "models").MaxItems, uint64(app.MaxModels)},
		{"models per sync request", *prop("SyncEnrichRequest", "models").MaxItems, uint64(app.MaxModels)},
		{"strategies", fmt.Sprint(prop("EnrichRequest", "strategy").Enum), strategies},
		{"sync strategies", fmt.Sprint(prop("SyncEnrichRequest", "strategy").Enum), strategies},
		{"options strategies", fmt.Sprint(prop("Strategy", "name").Enum), strategies},
		{"languages per request", *prop("EnrichRequest", "languages").MaxItems, uint64(len(app.Languages))},
		{"sync timeout default", prop("SyncEnrichRequest", "timeout_seconds").Default, DefaultSyncTimeout.Seconds()},
		{"sync timeout max", *prop("SyncEnrichRequest", "timeout_seconds").Max, MaxSyncTimeout.Seconds()},
		{"schema name", *prop("CreateSchemaRequest", "name").MaxLength, uint64(schema.MaxNameLen)},
		{"schema description", *prop("CreateSchemaRequest", "description").MaxLength, uint64(schema.MaxDescriptionLen)},
		{"register password", prop("RegisterRequest", "password").MinLength, uint64(app.MinPasswordLen)},
		{"member password", prop("NewUserRequest", "password").MinLength, uint64(app.MinPasswordLen)},
		{"page size max", *param("PageSize").Max, float64(page.MaxSize)},
		{"page size default", param("PageSize").Default, float64(page.DefaultSize)},
		{"limit max", *param("Limit").Max, float64(page.MaxSize)},
		{"record types", fmt.Sprint(listType.Enum), recordTypes},
		{"record summary types", fmt.Sprint(prop("RecordSummary", "type").Enum), recordTypes},
		{"batch models", *prop("BatchRequest", "models").MaxItems, uint64(app.MaxModels)},
		{"batch languages", *prop("BatchRequest", "languages").MaxItems, uint64(len(app.Languages))},
		{"sync sample timeout max", *prop("SyncGenerateSampleRequest", "timeout_seconds").Max, MaxSyncTimeout.Seconds()},
		{"sync schema generation timeout max", *prop("SyncGenerateSchemaRequest", "timeout_seconds").Max, MaxSyncTimeout.Seconds()},
		{"enrich pause timeout", *prop("EnrichRequest", "pause_timeout_seconds").Max, pause},
		{"sync enrich pause timeout", *prop("SyncEnrichRequest", "pause_timeout_seconds").Max, pause},
		{"sample pause timeout", *prop("GenerateSampleRequest", "pause_timeout_seconds").Max, pause},
		{"sync sample pause timeout", *prop("SyncGenerateSampleRequest", "pause_timeout_seconds").Max, pause},
		{"schema update name", *prop("UpdateSchemaRequest", "name").MaxLength, uint64(schema.MaxNameLen)},
		{"schema update description", *prop("UpdateSchemaRequest", "description").MaxLength, uint64(schema.MaxDescriptionLen)},
		{"schema tags", *prop("CreateSchemaRequest", "tags").MaxItems, uint64(schema.MaxTags)},
		{"schema update tags", *prop("UpdateSchemaRequest", "tags").MaxItems, uint64(schema.MaxTags)},
		{"schema prompt", *prop("SchemaPromptRequest", "prompt").MaxLength, uint64(app.MaxEditPromptLen)},
		{"register email", *prop("RegisterRequest", "email").MaxLength, uint64(app.MaxEmailLen)},
		{"member email", *prop("NewUserRequest", "email").MaxLength, uint64(app.MaxEmailLen)},
		{"organization name", *prop("RegisterRequest", "organization").MaxLength, uint64(app.MaxOrgNameLen)},
		{"access key name", *prop("CreateAPIKeyRequest", "name").MaxLength, uint64(app.MaxKeyNameLen)},
		{"access key expiry days", *prop("CreateAPIKeyRequest", "expires_in_days").Max, float64(app.MaxKeyExpiryDays)},
		{"roles", set(doc.Components.Schemas["Role"].Value.Enum...), setOf(roles)},
		{"access key roles", enum("CreateAPIKeyRequest", "role"), setOf(roles)},
		{"provider key name", *prop("CreateProviderKeyRequest", "name").MaxLength, uint64(app.MaxProviderKeyName)},
		{"provider key rename", *prop("UpdateProviderKeyRequest", "name").MaxLength, uint64(app.MaxProviderKeyName)},
		{"provider key secret", *prop("CreateProviderKeyRequest", "api_key").MaxLength, uint64(app.MaxProviderKeySecret)},
		{"provider key new secret", *prop("UpdateProviderKeyRequest", "api_key").MaxLength, uint64(app.MaxProviderKeySecret)},
		{"provider key health", enum("ProviderKey", "health_check_status"), setOf(healths)},
		{"provider key disabled reasons", enum("ProviderKey", "disabled_reason"),
			set(string(rotation.Manual), string(rotation.InvalidKey), string(rotation.Expired))},
		{"model default tasks", names("ModelDefaults"), setOf(modelsel.Tasks())},
		{"model default change tasks", names("ModelDefaultsChange"), setOf(modelsel.Tasks())},
		{"protected fields", *prop("AnalyzeSampleRequest", "protected_fields").MaxItems, uint64(app.MaxProtectedFields)},
		{"split fields", *prop("ScopingSplitRequest", "fields").MaxItems, uint64(app.MaxSplitFields)},
		{"split entity fields", *prop("ScopingSplitRequest", "entity_fields").MaxItems, uint64(app.MaxSplitFields)},
		{"split samples", *prop("ScopingSplitRequest", "entity_samples").MaxItems, uint64(app.MaxSplitSamples)},
		{"merge records min", prop("FusionRequest", "result_ids").MinItems, uint64(app.MinMergeRecords)},
		{"merge records max", *prop("FusionRequest", "result_ids").MaxItems, uint64(app.MaxMergeRecords)},
		{"continue answers", *prop("ContinueJobRequest", "answers").MaxProps, uint64(job.MaxAnswers)},
		{"answer options", *prop("QuestionAnswer", "option_ids").MaxItems, uint64(job.MaxAnswerOptions)},
		{"answer text", *prop("QuestionAnswer", "text").MaxLength, uint64(job.MaxAnswerText)},
		{"sample entity type", *prop("GenerateSampleRequest", "entity_type").MaxLength, uint64(sample.MaxEntityType)},
		{"sample fields", *prop("GenerateSampleRequest", "fields").MaxItems, uint64(sample.MaxFields)},
		{"sample instructions", *prop("GenerateSampleRequest", "extra_instructions").MaxLength, uint64(sample.MaxInstructions)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is.New(t).Equal(fmt.Sprint(tt.doc), fmt.Sprint(tt.want))
		})
	}
	// Limits the document states in prose only (the app refuses with its
	// own field and wording): the prose must say Go's number.
	prose := []struct {
		name, text, want string
	}{
		{"record deletes", prop("BatchDeleteRequest", "ids").Description, fmt.Sprintf("1 to %d", app.MaxRecordDeletes)},
		{"sample count", prop("GenerateSampleRequest", "sample_count").Description, fmt.Sprintf("%d to %d", sample.MinCount, sample.MaxCount)},
		{"sync sample count", prop("SyncGenerateSampleRequest", "sample_count").Description, fmt.Sprintf("%d to %d", sample.MinCount, sample.MaxCount)},
		{"tag length", prop("CreateSchemaRequest", "tags").Description, fmt.Sprintf("at most %d characters", schema.MaxTagLen)},
		{"generation samples", prop("GenerateSchemaRequest", "entity_samples").Description, fmt.Sprintf("at most %d", schema.MaxSamples)},
	}
	for _, tt := range prose {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(tt.text, tt.want) {
				t.Errorf("the document says %q; Go's limit is %q", tt.text, tt.want)
			}
		})
	}
}

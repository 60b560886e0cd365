package httpapi

import (
	"fmt"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/matryer/is"

	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/domain/page"
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is.New(t).Equal(fmt.Sprint(tt.doc), fmt.Sprint(tt.want))
		})
	}
}

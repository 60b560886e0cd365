package app_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/attachment"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/schema"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeports"
)

type twoModels []model.Info

func (c twoModels) Models() []model.Info { return c }
func (c twoModels) Model(k model.Key) (model.Info, error) {
	for _, m := range c {
		if m.Key == k {
			return m, nil
		}
	}
	return model.Info{}, ports.ErrUnknownModel
}

// attachmentsFixture is an Enricher over a text-only model (p::plain) and a
// model that reads PDFs and images (p::vision), with three attachments of
// org: a PDF with a text layer, a PDF without, and a PNG.
func attachmentsFixture(t *testing.T) (*app.Enricher, *scriptLLM, *memory.AttachmentStore) {
	t.Helper()
	ctx := context.Background()
	store := memory.NewSchemaStore()
	sc := &schema.Schema{ID: "sch", OrgID: "org", Name: "Company",
		Content: json.RawMessage(`{"type":"object","required":["name"],"properties":{"name":{"type":"string"}}}`)}
	if err := store.CreateSchema(ctx, sc); err != nil {
		t.Fatal(err)
	}
	llm := &scriptLLM{answer: `{"name":"Acme"}`}
	cat := twoModels{{Key: model.Key{Provider: "p", Model: "plain"}},
		{Key: model.Key{Provider: "p", Model: "vision"}, Vision: true, PDFInput: true}}
	e := testEnricher(store, nil, llm, cat, nil, nil)
	atts, blobs := memory.NewAttachmentStore(), memory.NewBlobStore()
	e.Attachments = &app.AttachmentLoader{Store: atts, Blobs: blobs}
	for _, a := range []struct{ id, name, mt, text string }{
		{"pdf", "report.pdf", "application/pdf", "name: Acme"},
		{"scan", "scan.pdf", "application/pdf", ""},
		{"png", "logo.png", "image/png", ""},
	} {
		data := fakeports.PNG(4, 2)
		if a.mt == "application/pdf" {
			data = fakeports.PDF(a.text)
		}
		if _, err := fakeports.SeedAttachment(ctx, atts, blobs, "org", a.id, a.name, a.mt, data, a.text); err != nil {
			t.Fatal(err)
		}
	}
	return e, llm, atts
}

// TestAttachmentsAreCheckedAtSubmit: unknown and foreign ids are 400
// attachment_not_found naming the index, a named model that cannot read
// an attachment without text is 400 model_lacks_capability naming the
// model's field, and auto picks a model that reads them: all before any
// call.
func TestAttachmentsAreCheckedAtSubmit(t *testing.T) {
	tests := []struct {
		name      string
		org       string
		ids       []string
		models    []string
		code      string
		field     string
		wantModel string
	}{
		{"unknown id", "org", []string{"pdf", "nope"}, nil, "attachment_not_found", "attachment_ids.1", ""},
		{"another organization's", "other", []string{"pdf"}, nil, "attachment_not_found", "attachment_ids.0", ""},
		{"empty id", "org", []string{" "}, nil, "invalid_request", "attachment_ids.0", ""},
		{"image to a text model", "org", []string{"png"}, []string{"p::plain"}, app.CodeModelLacksCapability, "models.0", ""},
		{"scanned PDF to a text model", "org", []string{"scan"}, []string{"p::vision", "p::plain"}, app.CodeModelLacksCapability, "models.1", ""},
		{"PDF with text to a text model", "org", []string{"pdf"}, []string{"p::plain"}, "", "", "p::plain"},
		{"auto without attachments", "org", nil, nil, "", "", "p::plain"},
		{"auto with an image", "org", []string{"png"}, nil, "", "", "p::vision"},
		{"auto with a PDF", "org", []string{"pdf"}, []string{"auto"}, "", "", "p::vision"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			e, llm, _ := attachmentsFixture(t)
			ms, err := e.PlannedModels(context.Background(), tt.org, app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme"}`),
				SchemaID: "sch", Models: tt.models, AttachmentIDs: tt.ids})
			is.Equal(len(llm.reqs), 0) // nothing is spent at submit
			if tt.code != "" {
				ae, ok := app.AsError(err)
				is.True(ok)
				is.Equal(ae.Code, tt.code)
				is.Equal(ae.Field, tt.field)
				return
			}
			if tt.org == "other" {
				return
			}
			is.NoErr(err)
			is.Equal(ms[0].Key.String(), tt.wantModel)
		})
	}
}

// TestAttachmentsReachTheModel: a model with the capability gets the bytes
// as files; one without gets the extracted text as a delimited block; the
// records list the attachments.
func TestAttachmentsReachTheModel(t *testing.T) {
	is := is.New(t)
	e, llm, _ := attachmentsFixture(t)
	out, _ := run(t, e, app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme"}`), SchemaID: "sch",
		Models: []string{"p::vision"}, AttachmentIDs: []string{"pdf", "png"}})
	is.True(out.Failure == nil)
	is.Equal(len(llm.reqs), 1)
	user := llm.reqs[0].Messages[1]
	is.Equal(user.Role, "user")
	is.True(strings.Contains(user.Content, attachment.PromptIntro))
	is.True(!strings.Contains(user.Content, "BEGIN ATTACHMENT"))
	is.Equal(len(user.Files), 2)
	is.Equal(user.Files[0].MediaType, "application/pdf")
	is.Equal(user.Files[0].Filename, "report.pdf")
	is.True(strings.HasPrefix(string(user.Files[0].Data), "%PDF-"))
	is.Equal(user.Files[1].MediaType, "image/png")
	is.Equal(len(out.Records), 1)
	refs := out.Records[0].Attachments
	is.Equal(len(refs), 2)
	is.Equal(refs[0].ID, "pdf")
	is.Equal(refs[0].Mode, "binary")
	is.Equal(refs[0].Kind, "extracted")
	is.Equal(refs[0].Capability, attachment.CapPDF)
	is.Equal(refs[1].Filename, "logo.png")
	is.Equal(len(refs[1].SHA256), 64)

	llm.reqs = nil
	out, _ = run(t, e, app.EnrichRequest{EntityData: json.RawMessage(`{"name":"Acme"}`), SchemaID: "sch",
		Models: []string{"p::plain"}, AttachmentIDs: []string{"pdf"}})
	is.True(out.Failure == nil)
	user = llm.reqs[0].Messages[1]
	is.Equal(len(user.Files), 0)
	is.True(strings.Contains(user.Content, `BEGIN ATTACHMENT 1: "report.pdf" (application/pdf, extracted text)`))
	is.True(strings.Contains(user.Content, "\nname: Acme\n"))
}

package sandbox_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/matryer/is"
	"github.com/tmc/langchaingo/llms"

	"github.com/entityenrich/enrich/adapters/llm/sandbox"
	"github.com/entityenrich/enrich/domain/attachment"
	"github.com/entityenrich/enrich/domain/enrichment"
	"github.com/entityenrich/enrich/test/fakeports"
)

// TestPDFText: the sandbox's own reader gives the text layer of a simple
// PDF, a line per text line.
func TestPDFText(t *testing.T) {
	is := is.New(t)
	text, err := sandbox.PDFText(fakeports.PDF("name: Quillon (Holdings)", "founded_year: 1987"))
	is.NoErr(err)
	is.Equal(text, "name: Quillon (Holdings)\nfounded_year: 1987\n")
}

// TestAttachmentsGroundTheAnswer: an enrichment that carries a PDF (as a
// file), an image (as a file) and a text attachment (inlined) is answered
// with their facts: the PDF's lines, the image's format and size, the
// text's lines.
func TestAttachmentsGroundTheAnswer(t *testing.T) {
	is := is.New(t)
	atts := []attachment.Loaded{
		{Attachment: attachment.Attachment{Filename: "report.pdf", MediaType: "application/pdf", Mode: attachment.Binary,
			Capability: attachment.CapPDF, SHA256: strings.Repeat("a", 64)}, Data: fakeports.PDF("name: Quillon Holdings", "founded_year: 1987")},
		{Attachment: attachment.Attachment{Filename: "logo.png", MediaType: "image/png", Mode: attachment.Binary,
			Capability: attachment.CapVision, SHA256: strings.Repeat("b", 64)}, Data: fakeports.PNG(64, 32)},
		{Attachment: attachment.Attachment{Filename: "notes.txt", MediaType: "text/plain", Mode: attachment.InlineText,
			Kind: attachment.KindInlineText, Text: "headquarters_city: Porto", SHA256: strings.Repeat("c", 64)}},
	}
	text, files := attachment.ForModel(atts, func(string) bool { return true })
	is.Equal(len(files), 2)
	schema := map[string]any{"type": "object", "properties": map[string]any{
		"name": map[string]any{"type": "string"}, "founded_year": map[string]any{"type": "integer"},
		"headquarters_city": map[string]any{"type": "string"}, "image_format": map[string]any{"type": "string"},
		"image_width": map[string]any{"type": "integer"}}}
	sb, _ := json.Marshal(schema)
	user := enrichment.WithAttachments([]enrichment.Message{{Role: "user",
		Content: sandbox.SchemaMarker + "\n" + string(sb) + "\n" + sandbox.EntityMarker + "\n{\"name\":\"Q\"}\n"}}, text, files)[0]
	parts := []llms.ContentPart{llms.TextContent{Text: user.Content}}
	for _, f := range user.Files {
		parts = append(parts, llms.BinaryContent{MIMEType: f.MediaType, Data: f.Data})
	}
	resp, err := sandbox.New("echo", 0).GenerateContent(context.Background(), []llms.MessageContent{{Role: llms.ChatMessageTypeHuman, Parts: parts}})
	is.NoErr(err)
	var got map[string]any
	is.NoErr(json.Unmarshal([]byte(resp.Choices[0].Content), &got))
	is.Equal(got["name"], "Quillon Holdings")
	is.Equal(got["founded_year"], 1987.0)
	is.Equal(got["headquarters_city"], "Porto")
	is.Equal(got["image_format"], "png")
	is.Equal(got["image_width"], 64.0)
}

// TestCoherence: documents of one type naming one thing are a single
// entity, naming several are instances, and of two types incoherent.
func TestCoherence(t *testing.T) {
	doc := func(lines ...string) attachment.Loaded {
		return attachment.Loaded{Attachment: attachment.Attachment{Filename: "d.txt", MediaType: "text/plain",
			Mode: attachment.InlineText, Kind: attachment.KindInlineText, Text: strings.Join(lines, "\n")}}
	}
	tests := []struct {
		name string
		docs []attachment.Loaded
		want string
	}{
		{"same thing", []attachment.Loaded{doc("type: company", "name: Acme"), doc("name: Acme")}, "single_entity"},
		{"two of a type", []attachment.Loaded{doc("type: company", "name: Acme"), doc("type: company", "name: Bolt")}, "instances_of_type"},
		{"two types", []attachment.Loaded{doc("type: company"), doc("type: recipe")}, "incoherent"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			text, _ := attachment.ForModel(tt.docs, func(string) bool { return false })
			resp, err := sandbox.New("echo", 0).GenerateContent(context.Background(),
				[]llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "Subject: x\n\n"+text)},
				llms.WithMetadata(map[string]any{sandbox.MetadataTask: "attachment_coherence"}))
			is.NoErr(err)
			v, err := attachment.ParseVerdict(resp.Choices[0].Content, len(tt.docs))
			is.NoErr(err)
			is.Equal(string(v.Mode), tt.want)
		})
	}
}

// TestImagesOfEveryDefaultType: the sandbox reads the format and size of
// every image type the default policies accept, WebP included.
func TestImagesOfEveryDefaultType(t *testing.T) {
	for _, tt := range []struct{ file, format string }{
		{"acme-logo.png", "png"}, {"acme-photo.jpg", "jpeg"}, {"acme-pixel.webp", "webp"},
	} {
		t.Run(tt.format, func(t *testing.T) {
			is := is.New(t)
			data, err := os.ReadFile(filepath.Join("..", "..", "inspect", "testdata", tt.file))
			is.NoErr(err)
			schema := `{"type":"object","properties":{"image_format":{"type":"string"},"image_width":{"type":"integer"}}}`
			parts := []llms.ContentPart{llms.TextContent{Text: sandbox.SchemaMarker + "\n" + schema + "\n" + sandbox.EntityMarker + "\n{}\n"},
				llms.BinaryContent{MIMEType: "image/" + tt.format, Data: data}}
			resp, err := sandbox.New("echo", 0).GenerateContent(context.Background(), []llms.MessageContent{{Role: llms.ChatMessageTypeHuman, Parts: parts}})
			is.NoErr(err)
			var got map[string]any
			is.NoErr(json.Unmarshal([]byte(resp.Choices[0].Content), &got))
			is.Equal(got["image_format"], tt.format)
			is.True(got["image_width"].(float64) >= 1)
		})
	}
}

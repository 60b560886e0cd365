package llm

import (
	"context"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/matryer/is"
	"github.com/tmc/langchaingo/llms"

	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeanthropic"
	"github.com/entityenrich/enrich/test/fakeopenai"
)

// Attachments reach models as langchaingo content parts; these tests send
// them through the provider clients and read what the fakes received.

var (
	png = []byte("\x89PNG\r\n\x1a\nfake image")
	pdf = []byte("%PDF-1.7 fake document")
	wav = []byte("RIFF....WAVEfmt fake sound")
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// partsMessages is a system prompt and a user turn carrying every kind of
// part.
func partsMessages(parts ...llms.ContentPart) []llms.MessageContent {
	return []llms.MessageContent{
		llms.TextParts(llms.ChatMessageTypeSystem, "Describe the attachments."),
		{Role: llms.ChatMessageTypeHuman, Parts: append([]llms.ContentPart{llms.TextContent{Text: "Here they are."}}, parts...)},
	}
}

func clientOf(t *testing.T, r *Registry, k string) llms.Model {
	t.Helper()
	key, err := model.ParseKey(k)
	if err != nil {
		t.Fatal(err)
	}
	_, m, err := r.resolve(ports.LLMRequest{Model: key})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOpenAIPartsOnTheWire(t *testing.T) {
	fake := fakeopenai.New(t)
	r, err := NewRegistry(Config{Providers: []ProviderConfig{{Name: "oa", Type: TypeOpenAI, BaseURL: fake.URL(), Keyless: true,
		Models: []string{"gpt-4o"}}}})
	if err != nil {
		t.Fatal(err)
	}
	m := clientOf(t, r, "oa::gpt-4o")
	msgs := partsMessages(
		llms.ImageURLContent{URL: "https://img.example/a.png", Detail: "low"},
		llms.BinaryContent{MIMEType: "image/png", Data: png},
		llms.BinaryContent{MIMEType: "application/pdf", Data: pdf},
		llms.BinaryContent{MIMEType: "audio/wav", Data: wav},
	)
	t.Run("chat", func(t *testing.T) {
		is := is.New(t)
		_, err := m.GenerateContent(context.Background(), msgs, llms.WithJSONMode())
		is.NoErr(err)
		got, _ := fake.LastRequest()
		is.Equal(got.API, "chat")
		is.Equal(got.Messages[0].Content, "Describe the attachments.")
		is.Equal(got.Messages[0].Parts, nil) // text alone stays a string
		p := got.Messages[1].Parts
		is.Equal(len(p), 5)
		is.Equal(p[0], map[string]any{"type": "text", "text": "Here they are."})
		is.Equal(p[1], map[string]any{"type": "image_url", "image_url": map[string]any{"url": "https://img.example/a.png", "detail": "low"}})
		is.Equal(p[2], map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64," + b64(png)}})
		is.Equal(p[3], map[string]any{"type": "file", "file": map[string]any{"file_data": "data:application/pdf;base64," + b64(pdf),
			"filename": "attachment.pdf"}})
		is.Equal(p[4], map[string]any{"type": "input_audio", "input_audio": map[string]any{"data": b64(wav), "format": "wav"}})
	})
	t.Run("responses", func(t *testing.T) {
		is := is.New(t)
		_, err := m.GenerateContent(context.Background(), msgs[:2:2], llms.WithMetadata(map[string]any{MetadataWebSearch: true}))
		is.NoErr(err)
		got, _ := fake.LastRequest()
		is.Equal(got.API, "responses")
		p := got.Messages[1].Parts
		is.Equal(len(p), 5)
		is.Equal(p[0], map[string]any{"type": "input_text", "text": "Here they are."})
		is.Equal(p[1], map[string]any{"type": "input_image", "image_url": "https://img.example/a.png", "detail": "low"})
		is.Equal(p[2], map[string]any{"type": "input_image", "image_url": "data:image/png;base64," + b64(png), "detail": "auto"})
		is.Equal(p[3], map[string]any{"type": "input_file", "file_data": "data:application/pdf;base64," + b64(pdf),
			"filename": "attachment.pdf"})
	})
	t.Run("refused", func(t *testing.T) {
		is := is.New(t)
		n := fake.Requests()
		bad := []llms.MessageContent{{Role: llms.ChatMessageTypeSystem, Parts: []llms.ContentPart{llms.BinaryContent{MIMEType: "image/png", Data: png}}}}
		_, err := m.GenerateContent(context.Background(), bad)
		is.True(errors.Is(err, errPart))
		is.True(errors.Is(classify(context.Background(), model.Key{}, err), ports.ErrInvalid))
		is.Equal(fake.Requests(), n) // nothing sent
	})
}

func TestAnthropicPartsOnTheWire(t *testing.T) {
	fake := fakeanthropic.New(t)
	r, err := NewRegistry(Config{Providers: []ProviderConfig{{Name: "claude", Type: TypeAnthropic, BaseURL: fake.URL(), Keyless: true,
		Models: []string{"claude-sonnet-4-5"}}}})
	if err != nil {
		t.Fatal(err)
	}
	m := clientOf(t, r, "claude::claude-sonnet-4-5")
	is := is.New(t)
	_, err = m.GenerateContent(context.Background(), partsMessages(
		llms.ImageURLContent{URL: "https://img.example/a.png"},
		llms.ImageURLContent{URL: "data:image/png;base64," + b64(png)},
		llms.BinaryContent{MIMEType: "image/png", Data: png},
		llms.BinaryContent{MIMEType: "application/pdf", Data: pdf},
		llms.BinaryContent{MIMEType: "text/plain; charset=utf-8", Data: []byte("plain notes")},
	))
	is.NoErr(err)
	got, _ := fake.LastRequest()
	is.Equal(got.System, "Describe the attachments.")
	b := got.Messages[0].Blocks
	is.Equal(len(b), 6)
	is.Equal(b[0], map[string]any{"type": "text", "text": "Here they are."})
	is.Equal(b[1], map[string]any{"type": "image", "source": map[string]any{"type": "url", "url": "https://img.example/a.png"}})
	base64PNG := map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": b64(png)}}
	is.Equal(b[2], base64PNG)
	is.Equal(b[3], base64PNG)
	is.Equal(b[4], map[string]any{"type": "document", "source": map[string]any{"type": "base64", "media_type": "application/pdf", "data": b64(pdf)}})
	is.Equal(b[5], map[string]any{"type": "document", "source": map[string]any{"type": "text", "media_type": "text/plain", "data": "plain notes"}})

	n := fake.Requests()
	_, err = m.GenerateContent(context.Background(), partsMessages(llms.BinaryContent{MIMEType: "audio/wav", Data: wav}))
	is.True(errors.Is(err, errPart)) // Anthropic takes no audio
	is.Equal(fake.Requests(), n)
}

package llm

import (
	"encoding/base64"
	"mime"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// Helpers the provider clients share to map langchaingo's content parts
// (TextContent, ImageURLContent, BinaryContent) onto their protocols.

// textOnly joins parts that are all text; false when one is not.
func textOnly(parts []llms.ContentPart) (string, bool) {
	if len(parts) == 1 {
		t, ok := parts[0].(llms.TextContent)
		return t.Text, ok
	}
	var sb strings.Builder
	for _, p := range parts {
		t, ok := p.(llms.TextContent)
		if !ok {
			return "", false
		}
		sb.WriteString(t.Text)
	}
	return sb.String(), true
}

// mediaType is a MIME type without its parameters, lower-cased;
// application/octet-stream when there is none.
func mediaType(v string) string {
	mt, _, err := mime.ParseMediaType(v)
	if err != nil || mt == "" {
		return "application/octet-stream"
	}
	return mt
}

// dataURL is data as an RFC 2397 URL of type mt, base64-encoded.
func dataURL(mt string, data []byte) string {
	return "data:" + mt + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// parseDataURL splits a base64 data URL into its media type and its
// base64 data; false for any other URL.
func parseDataURL(u string) (mt, b64 string, ok bool) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", "", false
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", false
	}
	mt, ok = strings.CutSuffix(meta, ";base64")
	if !ok {
		return "", "", false
	}
	return mediaType(mt), data, true
}

// fileName names an attachment of type mt for the protocols that want a
// name with the bytes (langchaingo's BinaryContent carries none).
func fileName(mt string) string {
	ext := ""
	switch mt {
	case "application/pdf":
		ext = ".pdf"
	case "text/plain":
		ext = ".txt"
	default:
		if exts, _ := mime.ExtensionsByType(mt); len(exts) > 0 {
			ext = exts[0]
		}
	}
	return "attachment" + ext
}

// Package inspect is the FileInspector of attachments (issue 29): it
// sniffs an upload's media type from its bytes and extracts the text
// models read.
package inspect

import (
	"context"
	"io"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/entityenrich/enrich/domain/attachment"
	"github.com/entityenrich/enrich/ports"
)

// Inspector implements ports.FileInspector.
type Inspector struct {
	// MaxText bounds the text extracted from one file, in bytes.
	MaxText int64
}

var _ ports.FileInspector = Inspector{}

// New returns an Inspector with the default bounds.
func New() Inspector { return Inspector{MaxText: 8 << 20} }

// Sniff implements ports.FileInspector.
func (Inspector) Sniff(_ context.Context, f io.ReaderAt, size int64, filename string) (string, error) {
	head := make([]byte, min(size, 512))
	if _, err := f.ReadAt(head, 0); err != nil && err != io.EOF {
		return "", err
	}
	mt, _, _ := strings.Cut(http.DetectContentType(head), ";")
	if mt == "text/plain" && strings.HasSuffix(strings.ToLower(filename), ".md") {
		return "text/markdown", nil
	}
	return mt, nil
}

// Extract implements ports.FileInspector.
func (in Inspector) Extract(_ context.Context, f io.ReaderAt, size int64, mt string) (string, error) {
	switch mt {
	case "text/plain", "text/markdown":
		if size > in.MaxText {
			return "", attachment.ErrBomb
		}
		b := make([]byte, size)
		if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
			return "", err
		}
		if !utf8.Valid(b) {
			return "", attachment.ErrUnreadable
		}
		return string(b), nil
	}
	return "", nil
}

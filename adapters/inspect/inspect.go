// Package inspect is the FileInspector of attachments (issue 29): it
// sniffs an upload's media type from its bytes and extracts the text
// models read. Every format lives in its own file; the bounds against
// hostile documents (zip bombs, endless text) live here and in zip.go.
package inspect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/entityenrich/enrich/domain/attachment"
	"github.com/entityenrich/enrich/ports"
)

// The media types the Inspector tells apart.
const (
	TypePDF      = "application/pdf"
	TypePNG      = "image/png"
	TypeJPEG     = "image/jpeg"
	TypeWebP     = "image/webp"
	TypeGIF      = "image/gif"
	TypeText     = "text/plain"
	TypeMarkdown = "text/markdown"
	TypeHTML     = "text/html"
	TypeCSV      = "text/csv"
	TypeRTF      = "application/rtf"
	TypeDOCX     = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
	TypeXLSX     = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
	TypePPTX     = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
	TypeODT      = "application/vnd.oasis.opendocument.text"
	TypeEPUB     = "application/epub+zip"
	TypeDOC      = "application/msword"
	TypeZip      = "application/zip"
	TypeUnknown  = "application/octet-stream"
)

// The default bounds of New.
const (
	DefaultMaxText     = 8 << 20
	DefaultMaxEntries  = 10_000
	DefaultMaxUnzipped = 256 << 20
	DefaultMaxRatio    = 200
)

// Inspector implements ports.FileInspector. A zero field takes its
// default bound.
type Inspector struct {
	// MaxText bounds the text extracted from one file, in bytes.
	MaxText int64
	// MaxEntries bounds the entries of a zip-based document.
	MaxEntries int
	// MaxUnzipped bounds the declared uncompressed size of a zip-based
	// document (and what a PDF's page contents inflate to), in bytes.
	MaxUnzipped int64
	// MaxRatio bounds one zip entry's compression ratio (entries past
	// ratioFloor bytes only: tiny entries compress well legitimately).
	MaxRatio int64
}

var _ ports.FileInspector = Inspector{}

// New returns an Inspector with the default bounds.
func New() Inspector {
	return Inspector{MaxText: DefaultMaxText, MaxEntries: DefaultMaxEntries, MaxUnzipped: DefaultMaxUnzipped, MaxRatio: DefaultMaxRatio}
}

// withDefaults fills the zero bounds, so Inspector{} is safe to use.
func (in Inspector) withDefaults() Inspector {
	d := New()
	if in.MaxText <= 0 {
		in.MaxText = d.MaxText
	}
	if in.MaxEntries <= 0 {
		in.MaxEntries = d.MaxEntries
	}
	if in.MaxUnzipped <= 0 {
		in.MaxUnzipped = d.MaxUnzipped
	}
	if in.MaxRatio <= 0 {
		in.MaxRatio = d.MaxRatio
	}
	return in
}

// Sniff implements ports.FileInspector.
func (in Inspector) Sniff(_ context.Context, f io.ReaderAt, size int64, filename string) (string, error) {
	return in.withDefaults().sniff(f, size, filename)
}

// Extract implements ports.FileInspector.
func (in Inspector) Extract(ctx context.Context, f io.ReaderAt, size int64, mt string) (text string, err error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	in = in.withDefaults()
	// The parsers below read hostile bytes, and some third-party ones
	// (the PDF reader) report malformed input by panicking: that is an
	// unreadable document, not a crashed server.
	defer func() {
		if r := recover(); r != nil {
			text, err = "", fmt.Errorf("%w: %v", attachment.ErrUnreadable, r)
		}
	}()
	out := &textOut{max: in.MaxText}
	if err := in.extract(ctx, f, size, mt, out); err != nil {
		return "", classify(err)
	}
	// Cleaning replaces each invalid byte with a three-byte U+FFFD, so the
	// bound is checked again on what is returned.
	if text = out.String(); int64(len(text)) > in.MaxText {
		return "", fmt.Errorf("%w: more than %d bytes of text", attachment.ErrBomb, in.MaxText)
	}
	return text, nil
}

// extract writes the text of a file of type mt to out.
func (in Inspector) extract(ctx context.Context, f io.ReaderAt, size int64, mt string, out *textOut) error {
	switch mt {
	case TypeText, TypeMarkdown:
		return extractText(f, size, out)
	case TypeHTML:
		return extractHTML(f, size, out)
	case TypeCSV:
		return extractCSV(f, size, out)
	case TypeRTF:
		return extractRTF(f, size, out)
	case TypePDF:
		return in.extractPDF(ctx, f, size, out)
	case TypeDOCX, TypePPTX, TypeODT, TypeEPUB, TypeXLSX:
		z, err := in.openZip(f, size)
		if err != nil {
			return err
		}
		switch mt {
		case TypeDOCX:
			return extractDOCX(z, out)
		case TypePPTX:
			return extractPPTX(ctx, z, out)
		case TypeODT:
			return extractODT(z, out)
		case TypeEPUB:
			return extractEPUB(ctx, z, out)
		default:
			return in.extractXLSX(ctx, f, size, out)
		}
	}
	return nil
}

// classify keeps the attachment sentinels and the context's errors, and
// turns every other failure of a parser into ErrUnreadable.
func classify(err error) error {
	switch {
	case errors.Is(err, attachment.ErrBomb), errors.Is(err, attachment.ErrUnreadable),
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	}
	return fmt.Errorf("%w: %v", attachment.ErrUnreadable, err)
}

// textOut gathers extracted text up to max bytes: past it the document is
// refused as ErrBomb rather than silently cut, so a prompt never reads a
// truncated document as if it were whole.
type textOut struct {
	b   strings.Builder
	max int64
}

// WriteString appends s; past the bound it fails with ErrBomb.
func (t *textOut) WriteString(s string) (int, error) {
	if int64(t.b.Len())+int64(len(s)) > t.max {
		return 0, fmt.Errorf("%w: more than %d bytes of text", attachment.ErrBomb, t.max)
	}
	return t.b.WriteString(s)
}

// Write appends p (io.Writer, for copying decoded text).
func (t *textOut) Write(p []byte) (int, error) { return t.WriteString(string(p)) }

// Newline ends the current line unless the text is empty or already
// ends one, so block ends never pile up blank lines.
func (t *textOut) Newline() error {
	s := t.b.String()
	if s == "" || strings.HasSuffix(s, "\n") {
		return nil
	}
	_, err := t.WriteString("\n")
	return err
}

// Break ends the current paragraph with one blank line.
func (t *textOut) Break() error {
	s := t.b.String()
	if s == "" || strings.HasSuffix(s, "\n\n") {
		return nil
	}
	if strings.HasSuffix(s, "\n") {
		_, err := t.WriteString("\n")
		return err
	}
	_, err := t.WriteString("\n\n")
	return err
}

// String is the text as it may be stored: valid UTF-8, without NUL
// (PostgreSQL text refuses it) and trimmed.
func (t *textOut) String() string { return clean(t.b.String()) }

// clean makes s valid UTF-8 without NUL, with trailing spaces of lines,
// runs of blank lines and surrounding blank lines removed.
func clean(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\x00", "")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	lines := strings.Split(s, "\n")
	kept, blank := lines[:0], false
	for _, l := range lines {
		l = strings.TrimRight(l, " \t\r")
		if l == "" && blank {
			continue // one blank line separates blocks; more say nothing
		}
		blank = l == ""
		kept = append(kept, l)
	}
	return strings.Trim(strings.Join(kept, "\n"), "\n")
}

package inspect

import (
	"bytes"
	"encoding/csv"
	"io"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"
)

// sniffLen is how much of a file's start is read to judge it.
const sniffLen = 8 << 10

// magic is a signature at the start of a binary format.
type magic struct {
	prefix string
	mt     string
}

var magics = []magic{
	{"%PDF-", TypePDF},
	{"\x89PNG\r\n\x1a\n", TypePNG},
	{"\xFF\xD8\xFF", TypeJPEG},
	{"GIF87a", TypeGIF},
	{"GIF89a", TypeGIF},
	{"{\\rtf", TypeRTF},
	// OLE2 compound files: the legacy .doc (and .xls/.ppt, which share the
	// container; all are off by default, so the finer split is moot).
	{"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1", TypeDOC},
}

// sniff judges a file's media type from its bytes; the filename only
// breaks the ties the bytes leave (Markdown or CSV over plain text, the
// kind of a zip document whose directory is unreadable).
func (in Inspector) sniff(f io.ReaderAt, size int64, filename string) (string, error) {
	head := make([]byte, min(size, sniffLen))
	n, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return "", err
	}
	head = head[:n]
	for _, m := range magics {
		if bytes.HasPrefix(head, []byte(m.prefix)) {
			return m.mt, nil
		}
	}
	ext := strings.ToLower(path.Ext(filename))
	switch {
	case len(head) >= 12 && string(head[:4]) == "RIFF" && string(head[8:12]) == "WEBP":
		return TypeWebP, nil
	case bytes.HasPrefix(head, []byte("PK\x03\x04")):
		return in.sniffZip(f, size, ext)
	case !isText(head):
		return TypeUnknown, nil
	}
	return sniffText(head, size > int64(len(head)), ext), nil
}

// isText says whether head is the start of a text file: a UTF-16 BOM, or
// no byte that only binary formats hold (the control bytes
// http.DetectContentType treats as binary, NUL among them).
func isText(head []byte) bool {
	if len(head) == 0 {
		return false
	}
	if bytes.HasPrefix(head, bomUTF16LE) || bytes.HasPrefix(head, bomUTF16BE) {
		return true
	}
	for _, c := range head {
		if c <= 0x08 || c == 0x0B || (c >= 0x0E && c <= 0x1A) || (c >= 0x1C && c <= 0x1F) {
			return false
		}
	}
	return true
}

// sniffText tells HTML, CSV and Markdown from plain text.
func sniffText(head []byte, truncated bool, ext string) string {
	if ext == ".md" || ext == ".markdown" {
		// Markdown may well open with an HTML comment or tag; the bytes
		// cannot tell it from a page, so the name decides.
		return TypeMarkdown
	}
	body := head
	if bytes.HasPrefix(body, bomUTF8) {
		body = body[len(bomUTF8):]
	}
	if mt, _, _ := strings.Cut(http.DetectContentType(body), ";"); mt == TypeHTML || mt == "text/xml" && isXHTML(body) {
		return TypeHTML
	}
	if (ext == ".csv" || ext == ".tsv") && csvDelimiter(body, truncated) != 0 {
		return TypeCSV
	}
	return TypeText
}

// isXHTML says whether an XML document is an XHTML page.
func isXHTML(head []byte) bool {
	return bytes.Contains(bytes.ToLower(head), []byte("<html"))
}

// csvDelimiters are the separators a CSV file is tried with, in order.
var csvDelimiters = []rune{',', ';', '\t', '|'}

// csvDelimiter returns the delimiter that splits every record of head into
// the same number (two or more) of fields, or 0 when none does. A
// truncated head loses its last, possibly partial, line.
func csvDelimiter(head []byte, truncated bool) rune {
	if truncated {
		if i := bytes.LastIndexByte(head, '\n'); i >= 0 {
			head = head[:i+1]
		}
	}
	if !utf8.Valid(head) {
		head = []byte(decodeText(head))
	}
	for _, d := range csvDelimiters {
		r := csv.NewReader(bytes.NewReader(head))
		r.Comma, r.FieldsPerRecord, r.LazyQuotes = d, 0, true
		recs, err := r.ReadAll()
		if err == nil && len(recs) > 0 && len(recs[0]) >= 2 {
			return d
		}
	}
	return 0
}

package inspect

import (
	"bytes"
	"fmt"
	"io"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
	"golang.org/x/text/encoding/unicode"

	"github.com/entityenrich/enrich/domain/attachment"
)

// The byte order marks a text file may start with.
var (
	bomUTF8    = []byte{0xEF, 0xBB, 0xBF}
	bomUTF16LE = []byte{0xFF, 0xFE}
	bomUTF16BE = []byte{0xFE, 0xFF}
)

// readAllBounded reads the whole file, refusing one larger than max bytes.
func readAllBounded(f io.ReaderAt, size, max int64) ([]byte, error) {
	if size > max {
		return nil, fmt.Errorf("%w: %d bytes is more than %d", attachment.ErrBomb, size, max)
	}
	b := make([]byte, size)
	n, err := f.ReadAt(b, 0)
	if err != nil && err != io.EOF {
		return nil, err
	}
	return b[:n], nil
}

// decodeText turns a text file's bytes into UTF-8: a BOM names UTF-8 or
// UTF-16; without one, bytes that are not valid UTF-8 are read as
// Windows-1252, the usual legacy encoding of documents from Western
// desktops (its every byte decodes, so nothing is lost silently).
func decodeText(b []byte) string {
	switch {
	case bytes.HasPrefix(b, bomUTF8):
		return string(b[len(bomUTF8):])
	case bytes.HasPrefix(b, bomUTF16LE), bytes.HasPrefix(b, bomUTF16BE):
		s, err := unicode.UTF16(unicode.BigEndian, unicode.ExpectBOM).NewDecoder().Bytes(b)
		if err == nil {
			return string(s)
		}
	case utf8.Valid(b):
		return string(b)
	}
	s, err := charmap.Windows1252.NewDecoder().Bytes(b)
	if err != nil {
		return string(bytes.ToValidUTF8(b, []byte("\uFFFD")))
	}
	return string(s)
}

// extractText decodes a plain-text or Markdown file as it is.
func extractText(f io.ReaderAt, size int64, out *textOut) error {
	// UTF-16 is the densest encoding a text file may use: at most two bytes
	// of input per byte of output, so a larger file cannot fit.
	b, err := readAllBounded(f, size, 2*out.max+int64(len(bomUTF16LE)))
	if err != nil {
		return err
	}
	_, err = out.WriteString(decodeText(b))
	return err
}

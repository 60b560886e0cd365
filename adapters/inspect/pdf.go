package inspect

import (
	"context"
	"fmt"
	"io"

	"github.com/ledongthuc/pdf"

	"github.com/entityenrich/enrich/domain/attachment"
)

// minPageBytes is less than any page object takes in a file: a page count
// past size/minPageBytes is a lie, and is not walked.
const minPageBytes = 16

// PDFText returns the text layer of a PDF within New's bounds: what a
// model without PDF input reads instead of the bytes (the sandbox model
// reads it too). A PDF without a text layer (a scan) is "" and nil.
func PDFText(r io.ReaderAt, size int64) (string, error) {
	return New().Extract(context.Background(), r, size, TypePDF)
}

// extractPDF writes the text of each page, a blank line between pages,
// with github.com/ledongthuc/pdf: a maintained pure-Go reader (the
// descendant of rsc.io/pdf) that decodes fonts' encodings and ToUnicode
// maps into text. pdfcpu, the other pure-Go candidate, processes PDFs
// but extracts content streams, not text.
func (in Inspector) extractPDF(ctx context.Context, f io.ReaderAt, size int64, out *textOut) error {
	r, err := pdf.NewReader(f, size)
	if err != nil {
		return err
	}
	pages := min(r.NumPage(), int(size/minPageBytes))
	var inflated int64
	var firstErr error
	read := 0
	for i := 1; i <= pages; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := r.Page(i)
		if p.V.IsNull() {
			continue
		}
		n, err := contentSize(p.V.Key("Contents"), in.MaxUnzipped-inflated)
		if inflated += n; inflated > in.MaxUnzipped {
			return fmt.Errorf("%w: page contents inflate past %d bytes", attachment.ErrBomb, in.MaxUnzipped)
		}
		var text string
		if err == nil {
			text, err = p.GetPlainText(nil)
		}
		if err != nil {
			// One page the reader cannot follow leaves the others' text.
			firstErr = cmpOr(firstErr, err)
			continue
		}
		read++
		if _, err := out.WriteString(text); err != nil {
			return err
		}
		if err := out.Break(); err != nil {
			return err
		}
	}
	if read == 0 && firstErr != nil {
		return firstErr
	}
	return nil
}

// contentSize is how many bytes a page's content streams inflate to, read
// up to left+1 so a bomb stops there: the reader interprets a page's
// whole content, and this bounds what it would interpret.
func contentSize(v pdf.Value, left int64) (n int64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("page contents: %v", r)
		}
	}()
	streams := []pdf.Value{v}
	if v.Kind() == pdf.Array {
		streams = streams[:0]
		for i := 0; i < v.Len(); i++ {
			streams = append(streams, v.Index(i))
		}
	}
	for _, s := range streams {
		if s.Kind() != pdf.Stream {
			continue
		}
		rc := s.Reader()
		k, err := io.Copy(io.Discard, io.LimitReader(rc, left-n+1))
		rc.Close()
		if n += k; err != nil || n > left {
			return n, err
		}
	}
	return n, nil
}

func cmpOr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

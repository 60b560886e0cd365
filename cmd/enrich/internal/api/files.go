package api

import (
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
)

// Files is a multipart/form-data body with one part named field per file,
// in order: the file's base name and a content type guessed from its
// extension (the server sniffs the bytes; this is only the client's word).
// The files are read as the request is written, through a pipe, so that
// their size does not matter to the client's memory.
func Files(field string, paths []string) Body {
	return func() (io.Reader, string, error) {
		pr, pw := io.Pipe()
		mw := multipart.NewWriter(pw)
		go func() {
			err := writeFiles(mw, field, paths)
			if err != nil {
				pw.CloseWithError(bodyError{err})
				return
			}
			pw.CloseWithError(mw.Close())
		}()
		return pr, mw.FormDataContentType(), nil
	}
}

func writeFiles(mw *multipart.Writer, field string, paths []string) error {
	for _, p := range paths {
		if err := writeFile(mw, field, p); err != nil {
			return err
		}
	}
	return nil
}

func writeFile(mw *multipart.Writer, field, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	name := filepath.Base(path)
	ctype := mime.TypeByExtension(filepath.Ext(name))
	if ctype == "" {
		ctype = "application/octet-stream"
	}
	h := textproto.MIMEHeader{}
	h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="%s"; filename="%s"`, quoteEscaper.Replace(field), quoteEscaper.Replace(name)))
	h.Set("Content-Type", ctype)
	w, err := mw.CreatePart(h)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, f); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// bodyError is a failure to make a request's body (a file that cannot be
// read): the client's, not the network's.
type bodyError struct{ err error }

func (e bodyError) Error() string { return e.err.Error() }
func (e bodyError) Unwrap() error { return e.err }

// quoteEscaper escapes a quoted-string's specials, as mime/multipart does.
var quoteEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

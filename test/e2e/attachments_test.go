package e2e_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/test/pgtest"
)

// Files of the attachment tests: their bytes say what they are.
var (
	pngBytes = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02\x00\x00\x00"), bytes.Repeat([]byte{7}, 64)...)
	pdfBytes = []byte("%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n")
	txtBytes = []byte("Acme Corp was founded in 1999 in Lyon. Café ✓\n")
)

// upFile is one part of a multipart upload.
type upFile struct {
	name, contentType string
	data              []byte
	// disposition replaces the part's Content-Disposition when set.
	disposition string
}

type uploaded struct {
	ID                 string  `json:"id"`
	Filename           string  `json:"filename"`
	MediaType          string  `json:"media_type"`
	SizeBytes          int64   `json:"size_bytes"`
	SHA256             string  `json:"sha256"`
	Mode               string  `json:"mode"`
	ExtractionKind     string  `json:"extraction_kind"`
	RequiresCapability *string `json:"requires_capability"`
	ExtractedChars     *int    `json:"extracted_chars"`
}

// multipartBody builds a multipart/form-data body of files (as parts named
// files) and an unrelated text field.
func multipartBody(t *testing.T, files ...upFile) (string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	if err := mw.WriteField("purpose", "enrichment"); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", fmt.Sprintf(`form-data; name="files"; filename=%q`, f.name))
		if f.disposition != "" {
			h.Set("Content-Disposition", f.disposition)
		}
		if f.contentType != "" {
			h.Set("Content-Type", f.contentType)
		}
		w, err := mw.CreatePart(h)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write(f.data)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return mw.FormDataContentType(), buf.Bytes()
}

// raw sends body as it is with contentType and returns the status and the
// answer's bytes.
func (s *service) raw(method, path, cred, contentType string, body []byte) (int, []byte, http.Header) {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, bytes.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	setCred(req, cred)
	resp, err := s.http.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, out, resp.Header
}

// upload sends files as one multipart request.
func (s *service) upload(cred string, files ...upFile) (int, []byte) {
	s.t.Helper()
	ct, body := multipartBody(s.t, files...)
	st, out, _ := s.raw("POST", "/api/attachments", cred, ct, body)
	return st, out
}

func decodeAs[T any](t *testing.T, raw []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("decode %q: %v", raw, err)
	}
	return v
}

// TestAttachments runs the attachment routes end to end on every backend:
// a multipart upload of several files answered in order, base64, dedup,
// the download byte for byte with its headers, metadata and verify, pages
// newest first, delete twice, and another organization kept out.
func TestAttachments(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			home, other := s.register("home@example.com"), s.register("other@example.com")

			st, raw := s.upload(home.key, upFile{name: "notes.txt", contentType: "text/plain", data: txtBytes},
				upFile{name: "label photo.png", contentType: "application/octet-stream", data: pngBytes},
				upFile{name: "rapport annuel é.pdf", contentType: "application/pdf", data: pdfBytes})
			is.Equal(st, 200)
			ups := decodeAs[[]uploaded](t, raw)
			is.Equal(len(ups), 3)
			txt, png, pdf := ups[0], ups[1], ups[2]
			is.Equal(txt.Filename, "notes.txt")
			is.Equal(txt.MediaType, "text/plain")
			is.Equal(txt.Mode, "inline_text")
			is.Equal(txt.ExtractionKind, "inline_text")
			is.True(txt.ExtractedChars != nil && *txt.ExtractedChars == len([]rune(strings.TrimSpace(string(txtBytes))))) // trailing space trimmed
			is.True(txt.RequiresCapability == nil)
			is.Equal(txt.SizeBytes, int64(len(txtBytes)))
			is.Equal(png.MediaType, "image/png") // sniffed, not the part's word
			is.Equal(png.Mode, "binary")
			is.Equal(*png.RequiresCapability, "supports_vision")
			is.Equal(pdf.MediaType, "application/pdf")
			is.Equal(*pdf.RequiresCapability, "supports_pdf_input")
			is.Equal(pdf.Filename, "rapport annuel é.pdf")

			// The same bytes again, by base64: the same attachment.
			var again uploaded
			is.Equal(s.call("POST", "/api/attachments/base64", home.key, obj{"filename": "copy.txt",
				"content_base64": base64.StdEncoding.EncodeToString(txtBytes), "media_type": "application/pdf"}, &again), 200)
			is.Equal(again.ID, txt.ID)
			is.Equal(again.Filename, "notes.txt")
			// Another organization's same bytes are its own.
			var theirs uploaded
			is.Equal(s.call("POST", "/api/attachments/base64", other.key, obj{"filename": "n.txt",
				"content_base64": base64.StdEncoding.EncodeToString(txtBytes)}, &theirs), 200)
			is.True(theirs.ID != txt.ID)

			// The download: the bytes, their type, the filename.
			st, body, h := s.raw("GET", "/api/attachments/"+pdf.ID+"/download", home.key, "", nil)
			is.Equal(st, 200)
			is.True(bytes.Equal(body, pdfBytes))
			is.Equal(h.Get("Content-Type"), "application/pdf")
			is.Equal(h.Get("Content-Length"), fmt.Sprint(len(pdfBytes)))
			is.Equal(h.Get("X-Content-Type-Options"), "nosniff")
			is.Equal(h.Get("Content-Disposition"), `attachment; filename="rapport annuel _.pdf"; filename*=UTF-8''rapport%20annuel%20%C3%A9.pdf`)
			st, body, _ = s.raw("GET", "/api/attachments/"+png.ID+"/download", home.key, "", nil)
			is.Equal(st, 200)
			is.True(bytes.Equal(body, pngBytes))

			// Metadata keeps the order and drops the unknown and the foreign.
			var refs []uploaded
			is.Equal(s.call("POST", "/api/attachments/metadata", home.key, obj{"attachment_ids": []string{pdf.ID, "nope", theirs.ID, txt.ID}}, &refs), 200)
			is.Equal(len(refs), 2)
			is.Equal(refs[0].ID, pdf.ID)
			is.Equal(refs[1].ID, txt.ID)
			is.Equal(refs[0].SHA256, pdf.SHA256)
			var ver struct {
				Present []string `json:"present"`
				Missing []struct{ ID, Filename string }
			}
			is.Equal(s.call("POST", "/api/attachments/verify", home.key, obj{"attachment_ids": []string{png.ID, theirs.ID}}, &ver), 200)
			is.Equal(ver.Present, []string{png.ID})
			is.Equal(len(ver.Missing), 1)
			is.Equal(ver.Missing[0].ID, theirs.ID)
			is.Equal(ver.Missing[0].Filename, "")

			// Pages of two, newest first, then the end.
			var seen []string
			cursor := ""
			for range 3 {
				var pg struct {
					Attachments []uploaded `json:"attachments"`
					NextCursor  *string    `json:"next_cursor"`
					Total       int        `json:"total"`
				}
				is.Equal(s.call("GET", "/api/attachments?page_size=2&cursor="+cursor, home.key, nil, &pg), 200)
				is.Equal(pg.Total, 3)
				for _, a := range pg.Attachments {
					seen = append(seen, a.ID)
				}
				if pg.NextCursor == nil {
					break
				}
				cursor = *pg.NextCursor
			}
			is.Equal(seen, []string{pdf.ID, png.ID, txt.ID})

			// Another organization learns nothing.
			var e apiError
			is.Equal(s.call("GET", "/api/attachments/"+pdf.ID+"/download", other.key, nil, &e), 404)
			is.Equal(e.Code, "not_found")
			is.Equal(s.call("DELETE", "/api/attachments/"+pdf.ID, other.key, nil, nil), 404)

			// Delete, twice: the second finds nothing, like a foreign id.
			var del struct {
				ID, Filename string
				Success      bool
			}
			is.Equal(s.call("DELETE", "/api/attachments/"+pdf.ID, home.key, nil, &del), 200)
			is.Equal(del.ID, pdf.ID)
			is.Equal(del.Filename, pdf.Filename)
			is.True(del.Success)
			is.Equal(s.call("DELETE", "/api/attachments/"+pdf.ID, home.key, nil, &e), 404)
			is.Equal(s.call("GET", "/api/attachments/"+pdf.ID+"/download", home.key, nil, nil), 404)
			is.Equal(s.call("POST", "/api/attachments/verify", home.key, obj{"attachment_ids": []string{pdf.ID}}, &ver), 200)
			is.Equal(len(ver.Present), 0)
			// Its bytes can come back as a new attachment.
			st, raw = s.upload(home.key, upFile{name: "again.pdf", data: pdfBytes})
			is.Equal(st, 200)
			is.True(decodeAs[[]uploaded](t, raw)[0].ID != pdf.ID)
		})
	}
}

// TestAttachmentRoles: an operator reads but neither uploads nor
// deletes; an editor does both; a read-only key uploads nothing.
func TestAttachmentRoles(t *testing.T) {
	is := is.New(t)
	s := start(t, testConfig(""))
	home := s.register("home@example.com")
	operator, editor := s.newKey(home.key, "operator"), s.newKey(home.key, "editor")
	st, raw := s.upload(editor, upFile{name: "a.txt", data: txtBytes})
	is.Equal(st, 200)
	id := decodeAs[[]uploaded](t, raw)[0].ID
	st, _ = s.upload(operator, upFile{name: "b.txt", data: []byte("other")})
	is.Equal(st, 403)
	is.Equal(s.call("GET", "/api/attachments/"+id+"/download", operator, nil, nil), 200)
	is.Equal(s.call("GET", "/api/attachments", operator, nil, nil), 200)
	is.Equal(s.call("POST", "/api/attachments/metadata", operator, obj{"attachment_ids": []string{id}}, nil), 200)
	is.Equal(s.call("DELETE", "/api/attachments/"+id, operator, nil, nil), 403)
	is.Equal(s.call("DELETE", "/api/attachments/"+id, editor, nil, nil), 200)
}

// TestAttachmentPolicies: a system administrator turns a type off, and
// its uploads are refused with the type named; then on again. Others may
// not touch the policies.
func TestAttachmentPolicies(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			s := start(t, testConfig(b.dsn(t)))
			home := s.register("home@example.com")
			adm := s.register("admin@example.com")
			var ps []struct {
				MimeType           string  `json:"mime_type"`
				Label              string  `json:"label"`
				Mode               string  `json:"mode"`
				IsEnabled          bool    `json:"is_enabled"`
				RequiresCapability *string `json:"requires_capability"`
				IsDefault          bool    `json:"is_default"`
			}
			is.Equal(s.call("GET", "/api/admin/attachment-policies", adm.token, nil, &ps), 200)
			is.True(len(ps) >= 14)
			is.Equal(ps[0].MimeType, "application/pdf")
			is.True(ps[0].IsDefault)
			is.Equal(s.call("GET", "/api/admin/attachment-policies", home.key, nil, nil), 403)
			is.Equal(s.call("PATCH", "/api/admin/attachment-policies/text%2Fplain", home.key, obj{"is_enabled": false}, nil), 403)

			var p struct {
				MimeType  string `json:"mime_type"`
				IsEnabled bool   `json:"is_enabled"`
				Label     string `json:"label"`
				IsDefault bool   `json:"is_default"`
			}
			is.Equal(s.call("PATCH", "/api/admin/attachment-policies/text%2Fplain", adm.token, obj{"is_enabled": false, "label": "Text"}, &p), 200)
			is.Equal(p.MimeType, "text/plain")
			is.True(!p.IsEnabled)
			is.Equal(p.Label, "Text")
			is.True(!p.IsDefault)
			st, raw := s.upload(home.key, upFile{name: "ok.png", data: pngBytes}, upFile{name: "n.txt", data: txtBytes})
			is.Equal(st, 415)
			e := decodeAs[apiError](t, raw)
			is.Equal(e.Code, "attachment_type_disabled")
			is.Equal(e.Field, "files.1")
			is.True(strings.Contains(e.Detail, "text/plain") && strings.Contains(e.Detail, "n.txt"))
			is.Equal(attachmentTotal(s, home.key), 0) // the accepted PNG was not stored either

			// A bad update names its field; a slash sent as it is works.
			var pe apiError
			is.Equal(s.call("PATCH", "/api/admin/attachment-policies/image%2Fpng", adm.token, obj{"mode": "sideways"}, &pe), 400)
			is.Equal(pe.Field, "mode")
			is.Equal(s.call("PATCH", "/api/admin/attachment-policies/text/plain", adm.token, obj{"is_enabled": true}, &p), 200)
			is.True(p.IsEnabled)
			st, _ = s.upload(home.key, upFile{name: "n.txt", data: txtBytes})
			is.Equal(st, 200)
		})
	}
}

func attachmentTotal(s *service, cred string) int {
	var pg struct {
		Total int `json:"total"`
	}
	if st := s.call("GET", "/api/attachments", cred, nil, &pg); st != 200 {
		s.t.Fatalf("list attachments: %d", st)
	}
	return pg.Total
}

// TestAttachmentHostileInput: refused uploads answer a 4xx naming the file,
// never a 5xx, and store nothing.
func TestAttachmentHostileInput(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			cfg := testConfig(b.dsn(t))
			cfg.AttachmentMaxBytes, cfg.AttachmentMaxRequestBytes = 1000, 2500
			s := start(t, cfg)
			home := s.register("home@example.com")
			disp := func(v string) upFile { return upFile{disposition: v, data: txtBytes} }
			cases := []struct {
				name   string
				files  []upFile
				status int
				code   string
				field  string
			}{
				{"NUL in the filename", []upFile{disp("form-data; name=\"files\"; filename=\"a\x00b.txt\"")}, 400, "", "files.0"},
				{"escaped NUL in the filename", []upFile{disp(`form-data; name="files"; filename*=UTF-8''a%00b.txt`)}, 400, "invalid_filename", "files.0.filename"},
				{"lone surrogate in the filename", []upFile{disp(`form-data; name="files"; filename*=UTF-8''a%ED%A0%80.txt`)}, 400, "invalid_filename", "files.0.filename"},
				{"a path", []upFile{{name: "ok.txt", data: []byte("x")}, {name: "../../etc/passwd", data: txtBytes}}, 400, "invalid_filename", "files.1.filename"},
				{"no filename", []upFile{disp(`form-data; name="files"`)}, 400, "invalid_filename", "files.0.filename"},
				{"an empty part", []upFile{{name: "empty.txt", data: nil}}, 400, "attachment_empty", "files.0"},
				{"an executable calling itself a PNG", []upFile{{name: "x.png", contentType: "image/png", data: append([]byte("MZ\x90\x00\x03\x00\x00\x00"), bytes.Repeat([]byte{0, 1, 2}, 50)...)}}, 415, "attachment_type_unsupported", "files.0"},
				{"a file past its limit", []upFile{{name: "big.txt", data: bytes.Repeat([]byte("a"), 1001)}}, 413, "attachment_too_large", "files.0"},
				{"files past the request's limit", []upFile{{name: "1.txt", data: bytes.Repeat([]byte("a"), 900)},
					{name: "2.txt", data: bytes.Repeat([]byte("b"), 900)}, {name: "3.txt", data: bytes.Repeat([]byte("c"), 900)}}, 413, "upload_too_large", "files.2"},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					is := is.New(t)
					ct, body := multipartBody(t, tc.files...)
					st, raw, _ := s.raw("POST", "/api/attachments", home.key, ct, body)
					is.Equal(st, tc.status)
					e := decodeAs[apiError](t, raw)
					if tc.code != "" {
						is.Equal(e.Code, tc.code)
					}
					is.Equal(e.Field, tc.field)
				})
			}

			is := is.New(t)
			// The part's Content-Type is not the type: sniffed text stays text.
			st, raw := s.upload(home.key, upFile{name: "photo.png", contentType: "image/png", data: []byte("just words, no pixels")})
			is.Equal(st, 200)
			is.Equal(decodeAs[[]uploaded](t, raw)[0].MediaType, "text/plain")
			stored := 1

			// A truncated body, a body past the limit of the route, no
			// files at all, not multipart at all.
			ct, body := multipartBody(t, upFile{name: "cut.txt", data: bytes.Repeat([]byte("z"), 500)})
			st, raw, _ = s.raw("POST", "/api/attachments", home.key, ct, body[:len(body)-300])
			is.Equal(st, 400)
			is.Equal(decodeAs[apiError](t, raw).Field, "files.0")
			var huge bytes.Buffer
			mw := multipart.NewWriter(&huge)
			_ = mw.WriteField("padding", strings.Repeat("p", 2<<20))
			_ = mw.Close()
			st, raw, _ = s.raw("POST", "/api/attachments", home.key, mw.FormDataContentType(), huge.Bytes())
			is.Equal(st, 413)
			is.Equal(decodeAs[apiError](t, raw).Code, "body_too_large")
			ct, body = multipartBody(t)
			st, raw, _ = s.raw("POST", "/api/attachments", home.key, ct, body)
			is.Equal(st, 400)
			is.Equal(decodeAs[apiError](t, raw).Field, "files")
			st, _, _ = s.raw("POST", "/api/attachments", home.key, "text/plain", []byte("hello"))
			is.Equal(st, 415)

			// Base64: a lone surrogate or NUL in the filename, bad base64,
			// too many bytes.
			for _, bad := range []string{
				`{"filename": "a\ud800.txt", "content_base64": "aGVsbG8="}`,
				`{"filename": "a\u0000.txt", "content_base64": "aGVsbG8="}`,
			} {
				var e apiError
				is.Equal(s.call("POST", "/api/attachments/base64", home.key, bad, &e), 400)
				is.Equal(e.Field, "filename")
			}
			var e apiError
			is.Equal(s.call("POST", "/api/attachments/base64", home.key, obj{"filename": "a.txt", "content_base64": "not*base64!"}, &e), 400)
			is.Equal(e.Field, "content_base64")
			is.Equal(s.call("POST", "/api/attachments/base64", home.key, obj{"filename": "a.txt",
				"content_base64": base64.StdEncoding.EncodeToString(bytes.Repeat([]byte("q"), 1200))}, &e), 413)
			is.Equal(e.Code, "attachment_too_large")
			is.Equal(e.Field, "content_base64")
			is.Equal(s.call("POST", "/api/attachments/base64", home.key, obj{"filename": "a.txt", "content_base64": ""}, &e), 400)
			is.Equal(e.Code, "attachment_empty")

			// Ids that are no attachment, NUL in a path or an id list.
			is.Equal(s.call("GET", "/api/attachments/%00/download", home.key, nil, nil), 400)
			is.Equal(s.call("DELETE", "/api/attachments/"+strings.Repeat("x", 300), home.key, nil, nil), 400)
			is.Equal(s.call("POST", "/api/attachments/metadata", home.key, `{"attachment_ids": ["a\u0000"]}`, nil), 400)
			is.Equal(s.call("POST", "/api/attachments/verify", home.key, obj{"attachment_ids": []string{""}}, nil), 400)

			is.Equal(attachmentTotal(s, home.key), stored) // nothing of the refused uploads
		})
	}
}

// TestAttachmentReplicas: a file uploaded through one server is listed,
// described, downloaded byte for byte and deleted through another on the
// same PostgreSQL (the metadata and, by default, the bytes are there).
func TestAttachmentReplicas(t *testing.T) {
	is := is.New(t)
	dsn := pgtest.Native(t)
	a := start(t, testConfig(dsn))
	b := start(t, testConfig(dsn))
	home := a.register("replicas-attachments@example.com")
	big := bytes.Repeat(pngBytes, 40000) // a few MB: several chunks of any chunked store
	st, raw := a.upload(home.key, upFile{name: "label.png", data: big}, upFile{name: "report.pdf", data: pdfBytes})
	is.Equal(st, 200)
	ups := decodeAs[[]uploaded](t, raw)
	st, body, h := b.raw("GET", "/api/attachments/"+ups[0].ID+"/download", home.key, "", nil)
	is.Equal(st, 200)
	is.True(bytes.Equal(body, big))
	is.Equal(h.Get("Content-Type"), "image/png")
	is.Equal(attachmentTotal(b, home.key), 2)
	// The same bytes through the other server: the same attachment.
	st, raw = b.upload(home.key, upFile{name: "again.pdf", data: pdfBytes})
	is.Equal(st, 200)
	is.Equal(decodeAs[[]uploaded](t, raw)[0].ID, ups[1].ID)
	is.Equal(b.call("DELETE", "/api/attachments/"+ups[0].ID, home.key, nil, nil), 200)
	is.Equal(a.call("GET", "/api/attachments/"+ups[0].ID+"/download", home.key, nil, nil), 404)
}

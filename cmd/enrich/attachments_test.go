package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/matryer/is"
)

// fakeAttachments is the server's side of WIRE.md §7.2 as the CLI sees it
// (the four attachment routes), and the job routes that take
// attachment_ids, which it records.
type fakeAttachments struct {
	t        *testing.T
	mu       sync.Mutex
	files    []*fakeFile // oldest first
	uploads  int
	chunked  bool                       // the last upload came without a Content-Length
	jobs     map[string]json.RawMessage // route → the last request body
	override map[string]string          // id → the filename download answers
}

type fakeFile struct {
	id, name, ctype string
	data            []byte
}

const fakeKey = "ent_fake"

func newFakeAttachments(t *testing.T) *httptest.Server {
	f := &fakeAttachments{t: t, jobs: map[string]json.RawMessage{}, override: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/attachments", f.upload)
	mux.HandleFunc("GET /api/attachments", f.list)
	mux.HandleFunc("GET /api/attachments/{id}/download", f.download)
	mux.HandleFunc("DELETE /api/attachments/{id}", f.delete)
	for _, route := range []string{"/api/single/enrich/stream", "/api/batch/start", "/api/schema/generate/stream"} {
		mux.HandleFunc("POST "+route, f.job)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-API-Key") != fakeKey {
			fail(w, http.StatusUnauthorized, "missing credentials")
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	fakes.Store(srv.URL, f)
	return srv
}

// fakes finds a test server's state by its URL.
var fakes sync.Map

func fakeOf(srv *httptest.Server) *fakeAttachments {
	f, _ := fakes.Load(srv.URL)
	return f.(*fakeAttachments)
}

func fail(w http.ResponseWriter, status int, detail string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"detail":%q,"code":"test"}`, detail)
}

func answer(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeAttachments) upload(w http.ResponseWriter, r *http.Request) {
	f.uploads++
	f.chunked = r.ContentLength == -1
	mr, err := r.MultipartReader()
	if err != nil {
		fail(w, http.StatusBadRequest, "not multipart/form-data: "+err.Error())
		return
	}
	var parts []*fakeFile // kept only once the whole body is read
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			fail(w, http.StatusBadRequest, "truncated multipart body: "+err.Error())
			return
		}
		if p.FormName() != "files" || p.FileName() == "" {
			fail(w, http.StatusBadRequest, fmt.Sprintf("part %q (file %q): want files with a filename", p.FormName(), p.FileName()))
			return
		}
		if strings.HasPrefix(p.FileName(), "big") {
			fail(w, http.StatusRequestEntityTooLarge, p.FileName()+" is larger than the limit")
			return
		}
		data, err := io.ReadAll(p)
		if err != nil {
			fail(w, http.StatusBadRequest, err.Error())
			return
		}
		parts = append(parts, &fakeFile{name: p.FileName(), ctype: p.Header.Get("Content-Type"), data: data})
	}
	out := []map[string]any{}
	for _, p := range parts {
		out = append(out, f.store(p))
	}
	answer(w, out)
}

// store keeps a file (deduplicated by content) and returns its
// AttachmentUploadResponse.
func (f *fakeAttachments) store(ff *fakeFile) map[string]any {
	sum := sha256.Sum256(ff.data)
	h := hex.EncodeToString(sum[:])
	ff.id = fmt.Sprintf("%s-%s-%s-%s-%s", h[:8], h[8:12], h[12:16], h[16:20], h[20:32])
	if _, old := f.find(ff.id); old != nil {
		ff = old
	} else {
		f.files = append(f.files, ff)
	}
	out := ref(ff)
	if out["mode"] == "inline_text" {
		out["extracted_chars"] = len(ff.data)
	}
	return out
}

// locked runs fn with the server's state locked (the test reads what the
// handlers wrote).
func (f *fakeAttachments) locked(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}

func ref(ff *fakeFile) map[string]any {
	sum := sha256.Sum256(ff.data)
	media := http.DetectContentType(ff.data)
	out := map[string]any{"id": ff.id, "filename": ff.name, "media_type": media, "size_bytes": len(ff.data),
		"sha256": hex.EncodeToString(sum[:]), "mode": "inline_text", "extraction_kind": "inline_text"}
	if media == "application/pdf" {
		out["mode"], out["extraction_kind"], out["requires_capability"] = "binary", "binary", "supports_pdf_input"
	}
	return out
}

func (f *fakeAttachments) list(w http.ResponseWriter, r *http.Request) {
	size, start := 50, 0
	if s := r.URL.Query().Get("page_size"); s != "" {
		size, _ = strconv.Atoi(s)
	}
	if s := r.URL.Query().Get("cursor"); s != "" {
		start, _ = strconv.Atoi(s)
	}
	page := map[string]any{"attachments": []any{}, "next_cursor": nil}
	var items []any
	for i := len(f.files) - 1 - start; i >= 0 && len(items) < size; i-- { // newest first
		items = append(items, ref(f.files[i]))
	}
	if items != nil {
		page["attachments"] = items
	}
	if start+size < len(f.files) {
		page["next_cursor"] = strconv.Itoa(start + size)
	}
	answer(w, page)
}

func (f *fakeAttachments) find(id string) (int, *fakeFile) {
	for i, ff := range f.files {
		if ff.id == id {
			return i, ff
		}
	}
	return -1, nil
}

func (f *fakeAttachments) download(w http.ResponseWriter, r *http.Request) {
	_, ff := f.find(r.PathValue("id"))
	if ff == nil {
		fail(w, http.StatusNotFound, "attachment not found")
		return
	}
	name := ff.name
	if o, ok := f.override[ff.id]; ok {
		name = o
	}
	w.Header().Set("Content-Type", http.DetectContentType(ff.data))
	w.Header().Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	_, _ = w.Write(ff.data)
}

func (f *fakeAttachments) delete(w http.ResponseWriter, r *http.Request) {
	i, ff := f.find(r.PathValue("id"))
	if ff == nil {
		fail(w, http.StatusNotFound, "attachment not found")
		return
	}
	f.files = append(f.files[:i], f.files[i+1:]...)
	answer(w, map[string]any{"id": ff.id, "filename": ff.name, "success": true})
}

func (f *fakeAttachments) job(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.jobs[r.URL.Path] = body
	answer(w, map[string]any{"job_id": "job-1", "message": "started"})
}

// attachmentUser is a user of the fake server with its key, working in a
// directory of their own.
func attachmentUser(t *testing.T) (*user, *httptest.Server) {
	srv := newFakeAttachments(t)
	u := newUser(t, &server{url: srv.URL})
	u.env = append(u.env, "ENRICH_API_KEY="+fakeKey)
	u.dir = t.TempDir()
	return u, srv
}

// write puts a file in the user's directory and returns its name.
func (u *user) write(name, content string) string {
	u.t.Helper()
	if err := os.WriteFile(filepath.Join(u.dir, name), []byte(content), 0o600); err != nil {
		u.t.Fatal(err)
	}
	return name
}

const pdf = "%PDF-1.4\n1 0 obj <<>> endobj\ntrailer <<>>\n%%EOF\n"

func TestAttachmentsUploadListDelete(t *testing.T) {
	is := is.New(t)
	u, srv := attachmentUser(t)
	fake := fakeOf(srv)
	u.write("report.pdf", pdf)
	u.write("notes.txt", "founded in 1990 in Lyon\n")

	// Two files in one request, streamed (no Content-Length), the parts as
	// the server expects them; the ids in order with -q.
	ids := strings.Fields(u.ok("", "attachments", "upload", "report.pdf", "notes.txt", "-q"))
	is.Equal(len(ids), 2)
	fake.locked(func() {
		is.Equal(fake.uploads, 1)
		is.True(fake.chunked)
		is.Equal(len(fake.files), 2)
		is.Equal(fake.files[0].name, "report.pdf")
		is.Equal(string(fake.files[0].data), pdf)
		is.Equal(fake.files[0].ctype, "application/pdf") // the client's guess, by extension
		is.Equal(fake.files[1].name, "notes.txt")
		is.Equal(string(fake.files[1].data), "founded in 1990 in Lyon\n")
		is.Equal(ids, []string{fake.files[0].id, fake.files[1].id})
	})

	// JSON: the server's answer as it is; a table names what models read.
	var up []attachment
	is.NoErr(json.Unmarshal([]byte(u.ok("", "attachments", "upload", "notes.txt")), &up))
	is.Equal(len(up), 1)
	is.Equal(up[0].ID, ids[1]) // deduplicated
	is.Equal(*up[0].ExtractedChars, 24)
	table := u.ok("", "attachments", "upload", "report.pdf", "-o", "table")
	is.True(regexp.MustCompile(`(?m)^ID\s+FILENAME\s+MEDIA TYPE\s+SIZE\s+READ AS\s+NEEDS\n` + ids[0] + `\s+report\.pdf\s+application/pdf\s+` + strconv.Itoa(len(pdf)) + `\s+binary\s+supports_pdf_input$`).MatchString(table))

	// list: newest first, a page at a time.
	is.Equal(u.ok("", "attachments", "list", "-q"), ids[1]+"\n"+ids[0]+"\n")
	r := u.run("", "attachments", "list", "-o", "table", "--page-size", "1")
	is.Equal(r.code, 0)
	is.True(regexp.MustCompile(`(?m)^` + ids[1] + `\s+notes\.txt\s+text/plain; charset=utf-8\s+24\s+inline_text\s+-$`).MatchString(r.out))
	is.Equal(r.errOut, "more: --cursor 1\n")
	var page struct {
		Attachments []attachment `json:"attachments"`
		Next        *string      `json:"next_cursor"`
	}
	is.NoErr(json.Unmarshal([]byte(u.ok("", "attachments", "list", "--page-size", "1", "--cursor", "1")), &page))
	is.Equal(len(page.Attachments), 1)
	is.Equal(page.Attachments[0].ID, ids[0])
	is.Equal(page.Next, nil)

	// delete, then delete again: the second says so and still exits 0.
	var deleted []struct {
		ID       string `json:"id"`
		Filename string `json:"filename"`
		Success  bool   `json:"success"`
	}
	is.NoErr(json.Unmarshal([]byte(u.ok("", "attachments", "delete", ids[0])), &deleted))
	is.Equal(len(deleted), 1)
	is.Equal(deleted[0].Filename, "report.pdf")
	is.True(deleted[0].Success)
	r = u.run("", "attachments", "delete", ids[0], ids[1], "-o", "table")
	is.Equal(r.code, 0)
	is.Equal(r.errOut, "attachment "+ids[0]+": not found (already deleted?)\n")
	is.True(regexp.MustCompile(`(?m)^ID\s+FILENAME\s+DELETED\n` + ids[1] + `\s+notes\.txt\s+true$`).MatchString(r.out))
	is.Equal(u.ok("", "attachments", "list"), "{\n  \"attachments\": [],\n  \"next_cursor\": null\n}\n")
}

func TestAttachmentsUploadErrors(t *testing.T) {
	is := is.New(t)
	u, srv := attachmentUser(t)
	fake := fakeOf(srv)
	u.write("ok.txt", "fine")
	u.write("big.bin", strings.Repeat("x", 1<<20))
	is.NoErr(os.Mkdir(filepath.Join(u.dir, "folder"), 0o700))
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"missing file", []string{"attachments", "upload", "ok.txt", "nope.pdf"}, 2, "nope.pdf: no such file or directory"},
		{"a directory", []string{"attachments", "upload", "folder"}, 2, "folder is not a regular file"},
		{"no file", []string{"attachments", "upload"}, 2, "requires at least 1 arg(s)"},
		{"refused by the server", []string{"attachments", "upload", "ok.txt", "big.bin"}, 1, "big.bin is larger than the limit (code test, HTTP 413)"},
		{"--attach missing file", []string{"enrich", "S", "-d", "{}", "--attach", "nope.pdf"}, 2, "nope.pdf: no such file or directory"},
		{"download of an unknown id", []string{"attachments", "download", "nope"}, 1, "attachment not found (code test, HTTP 404)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			r := u.run("", tt.args...)
			is.Equal(r.code, tt.code)
			if !strings.Contains(r.errOut, tt.want) {
				t.Errorf("stderr %q does not say %q", r.errOut, tt.want)
			}
		})
	}
	fake.locked(func() {
		is.Equal(len(fake.jobs), 0)  // no job started with a file missing
		is.Equal(fake.uploads, 1)    // a file missing: nothing sent
		is.Equal(len(fake.files), 0) // the refused upload kept nothing
	})
}

func TestAttachmentsDownload(t *testing.T) {
	is := is.New(t)
	u, srv := attachmentUser(t)
	fake := fakeOf(srv)
	u.write("report.pdf", pdf)
	id := strings.TrimSpace(u.ok("", "attachments", "upload", "report.pdf", "-q"))
	is.NoErr(os.Remove(filepath.Join(u.dir, "report.pdf")))
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(u.dir, name))
		is.NoErr(err)
		return string(b)
	}

	// The server's name in the current directory, byte for byte; not over
	// an existing file unless --force.
	is.Equal(u.ok("", "attachments", "download", id, "-q"), "report.pdf\n")
	is.Equal(read("report.pdf"), pdf)
	r := u.run("", "attachments", "download", id)
	is.Equal(r.code, 2)
	is.True(strings.Contains(r.errOut, "report.pdf exists; add --force to overwrite it"))
	u.write("report.pdf", "older")
	var got struct {
		File string `json:"file"`
		Size int    `json:"size_bytes"`
	}
	is.NoErr(json.Unmarshal([]byte(u.ok("", "attachments", "download", id, "--force")), &got))
	is.Equal(got.File, "report.pdf")
	is.Equal(got.Size, len(pdf))
	is.Equal(read("report.pdf"), pdf)

	// --out names the file; - is standard output.
	u.ok("", "attachments", "download", id, "--out", "copy.pdf")
	is.Equal(read("copy.pdf"), pdf)
	is.Equal(u.run("", "attachments", "download", id, "-O", "copy.pdf").code, 2)
	is.Equal(u.ok("", "attachments", "download", id, "-O", "-"), pdf)

	// A hostile name from the server lands in the current directory.
	fake.locked(func() { fake.override[id] = "../../escaped.pdf" })
	is.Equal(u.ok("", "attachments", "download", id, "-q"), "escaped.pdf\n")
	is.Equal(read("escaped.pdf"), pdf)
	_, err := os.Stat(filepath.Join(u.dir, "..", "..", "escaped.pdf"))
	is.True(os.IsNotExist(err))
}

func TestLocalName(t *testing.T) {
	tests := []struct{ disposition, want string }{
		{`attachment; filename="report.pdf"`, "report.pdf"},
		{`attachment; filename*=UTF-8''r%C3%A9sum%C3%A9.pdf`, "résumé.pdf"},
		{`attachment; filename="../../etc/passwd"`, "passwd"},
		{`attachment; filename="/etc/passwd"`, "passwd"},
		{`attachment; filename="..\\..\\win.ini"`, "win.ini"},
		{`attachment; filename=".bashrc"`, "bashrc"},
		{`attachment; filename=".."`, "ID-1"},
		{`attachment; filename="/"`, "ID-1"},
		{`attachment; filename="a%0Ab.txt"`, "a%0Ab.txt"},
		{"attachment; filename*=UTF-8''a%0Ab%00.txt", "ab.txt"},
		{`attachment`, "ID-1"},
		{``, "ID-1"},
		{`garbage; =`, "ID-1"},
	}
	for _, tt := range tests {
		t.Run(tt.disposition, func(t *testing.T) {
			is := is.New(t)
			is.Equal(localName(tt.disposition, "ID-1"), tt.want)
		})
	}
	is := is.New(t)
	is.Equal(localName("", "../.."), "attachment") // the id is cleaned too
}

// TestAttach: --attach uploads first and the job's request carries the ids,
// in order, on enrich (and its shortcut), batch and schemas generate.
func TestAttach(t *testing.T) {
	u, srv := attachmentUser(t)
	fake := fakeOf(srv)
	u.write("report.pdf", pdf)
	u.write("notes.txt", "founded in 1990")
	attach := []string{"--attach", "report.pdf", "--attach", "notes.txt", "--follow=false", "-q"}
	tests := []struct {
		name, route string
		args        []string
	}{
		{"enrich", "/api/single/enrich/stream", []string{"enrich", "S", "-d", `{"name":"Acme"}`}},
		{"shortcut", "/api/single/enrich/stream", []string{"S", "-d", `{"name":"Acme"}`}},
		{"batch", "/api/batch/start", []string{"batch", "S", "-d", `[{"name":"Acme"},{"name":"Globex"}]`}},
		{"schemas generate", "/api/schema/generate/stream", []string{"schemas", "generate", "-d", `{"name":"Acme"}`, "--save"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			is.Equal(u.ok("", append(tt.args, attach...)...), "job-1\n")
			var body struct {
				IDs []string `json:"attachment_ids"`
			}
			fake.locked(func() {
				is.NoErr(json.Unmarshal(fake.jobs[tt.route], &body))
				is.Equal(len(fake.files), 2)
				is.Equal(body.IDs, []string{fake.files[0].id, fake.files[1].id})
				delete(fake.jobs, tt.route)
			})
		})
	}
	t.Run("without --attach", func(t *testing.T) {
		is := is.New(t)
		var uploads int
		fake.locked(func() { uploads = fake.uploads })
		is.Equal(u.ok("", "enrich", "S", "-d", `{"name":"Acme"}`, "--follow=false", "-q"), "job-1\n")
		fake.locked(func() {
			is.Equal(fake.uploads, uploads) // nothing uploaded
			body := string(fake.jobs["/api/single/enrich/stream"])
			is.True(strings.Contains(body, `"entity_data"`) && !strings.Contains(body, "attachment_ids"))
		})
	})
}

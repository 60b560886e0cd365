package httpapi

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/attachment"
)

// The upload routes, whose bodies may be larger than other routes'.
const (
	uploadPath       = "/api/attachments"
	uploadBase64Path = "/api/attachments/base64"
)

func (s *Server) registerAttachmentRoutes(r *mux.Router) {
	r.HandleFunc(uploadPath, s.listAttachments).Methods(http.MethodGet)
	r.HandleFunc(uploadPath, s.uploadAttachments).Methods(http.MethodPost)
	r.HandleFunc(uploadBase64Path, s.uploadAttachmentBase64).Methods(http.MethodPost)
	r.HandleFunc("/api/attachments/metadata", s.describeAttachments).Methods(http.MethodPost)
	r.HandleFunc("/api/attachments/verify", s.verifyAttachments).Methods(http.MethodPost)
	r.HandleFunc("/api/attachments/{attachment_id}", s.deleteAttachment).Methods(http.MethodDelete)
	r.HandleFunc("/api/attachments/{attachment_id}/download", s.downloadAttachment).Methods(http.MethodGet)
	r.HandleFunc("/api/admin/attachment-policies", s.listAttachmentPolicies).Methods(http.MethodGet)
	// A media type holds a slash, sent as it is or as %2F.
	r.HandleFunc("/api/admin/attachment-policies/{mime_type:.+}", s.updateAttachmentPolicy).Methods(http.MethodPatch)
}

// bodyLimit is the size limit of r's body: an upload's is the per-request
// limit of its files plus room for the multipart framing (or base64's
// expansion of one file); every other route's is MaxBodyBytes.
func (s *Server) bodyLimit(r *http.Request) int64 {
	if r.Method != http.MethodPost || s.attachments == nil {
		return s.cfg.MaxBodyBytes
	}
	lim := s.attachments.Limits
	switch r.URL.Path {
	case uploadPath:
		return lim.MaxRequestBytes + 1<<20
	case uploadBase64Path:
		return max(lim.MaxRequestBytes, (lim.MaxBytes+2)/3*4+1<<20)
	}
	return s.cfg.MaxBodyBytes
}

// partReader reads one file of an upload, telling the intake what a
// broken body means: past the body limit 413, anything else (a truncated
// multipart body, bad base64) 400 naming the file.
type partReader struct {
	r       io.Reader
	field   string
	problem string
}

func (p partReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if err == nil || err == io.EOF {
		return n, err
	}
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		return n, &app.Error{Kind: attachment.ErrTooLarge, Code: "body_too_large", Field: p.field,
			Detail: fmt.Sprintf("the request body is larger than %d bytes (at %s)", mbe.Limit, p.field)}
	}
	return n, app.Invalid(p.field, "%s: %s", p.field, p.problem)
}

// multipartProblem is a broken multipart body's refusal.
func multipartProblem(err error, field string) error {
	if mbe := (*http.MaxBytesError)(nil); errors.As(err, &mbe) {
		return &app.Error{Kind: attachment.ErrTooLarge, Code: "body_too_large", Field: field,
			Detail: fmt.Sprintf("the request body is larger than %d bytes", mbe.Limit)}
	}
	return app.Invalid(field, "the multipart body is malformed or truncated: %v", err)
}

// uploadAttachments reads the multipart body as a stream, part by part:
// each `files` part is spooled and checked by the intake, other parts are
// skipped; then every file is stored, and the answer lists them in order.
func (s *Server) uploadAttachments(w http.ResponseWriter, r *http.Request) {
	in, err := s.attachments.NewIntake(r.Context(), principal(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	defer in.Close()
	mr, err := r.MultipartReader()
	if err != nil {
		s.Error(w, r, app.Invalid("Content-Type", "the body is not multipart/form-data: %v", err))
		return
	}
	for i := 0; ; {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			s.Error(w, r, multipartProblem(err, fmt.Sprintf("files.%d", i)))
			return
		}
		isFile, name, err := filePart(part, i)
		if err == nil && isFile {
			field := fmt.Sprintf("files.%d", i)
			err = in.Add(r.Context(), app.Upload{Field: field, FilenameField: field + ".filename", Filename: name,
				Body: partReader{r: part, field: field, problem: "the multipart body ended before the file did (truncated)"}})
			i++
		}
		_ = part.Close()
		if err != nil {
			s.Error(w, r, err)
			return
		}
	}
	if in.Len() == 0 {
		s.Error(w, r, app.Invalid("files", "the body has no part named files: send each file as a part named files"))
		return
	}
	atts, err := in.Commit(r.Context())
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := make([]api.AttachmentUploadResponse, 0, len(atts))
	for _, a := range atts {
		out = append(out, toUploadResponse(a))
	}
	writeJSON(w, http.StatusOK, out)
}

// filePart says whether part is a file of the upload (named files) and
// its filename, read from Content-Disposition as sent: multipart's own
// FileName keeps only the last path element, which would hide a path
// the filename rule refuses.
func filePart(part *multipart.Part, i int) (bool, string, error) {
	cd := part.Header.Get("Content-Disposition")
	disp, params, err := mime.ParseMediaType(cd)
	if err != nil || disp != "form-data" {
		return false, "", app.Invalid(fmt.Sprintf("files.%d", i), "a part's Content-Disposition is not form-data with a name: %q", cd)
	}
	if params["name"] != "files" {
		return false, "", nil
	}
	return true, params["filename"], nil
}

func (s *Server) uploadAttachmentBase64(w http.ResponseWriter, r *http.Request) {
	var body api.AttachmentBase64Request
	if !s.decode(w, r, &body) {
		return
	}
	in, err := s.attachments.NewIntake(r.Context(), principal(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	defer in.Close()
	err = in.Add(r.Context(), app.Upload{Field: "content_base64", FilenameField: "filename", Filename: body.Filename,
		Body: partReader{r: base64Reader(body.ContentBase64), field: "content_base64", problem: "not valid base64"}})
	if err != nil {
		s.Error(w, r, err)
		return
	}
	atts, err := in.Commit(r.Context())
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toUploadResponse(atts[0]))
}

// base64Reader decodes standard or URL-safe base64, padded or not, with
// line breaks, and without a data: URL's prefix, as it is read.
func base64Reader(s string) io.Reader {
	if strings.HasPrefix(s, "data:") {
		if i := strings.Index(s, ","); i >= 0 {
			s = s[i+1:]
		}
	}
	s = strings.TrimRight(strings.TrimSpace(s), "=")
	enc := base64.RawStdEncoding
	if strings.ContainsAny(s, "-_") {
		enc = base64.RawURLEncoding
	}
	return base64.NewDecoder(enc, strings.NewReader(s))
}

func (s *Server) downloadAttachment(w http.ResponseWriter, r *http.Request) {
	a, rc, err := s.attachments.Open(r.Context(), principal(r), mux.Vars(r)["attachment_id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	defer rc.Close()
	h := w.Header()
	h.Set("Content-Type", a.MediaType)
	h.Set("Content-Length", strconv.FormatInt(a.SizeBytes, 10))
	h.Set("Content-Disposition", contentDisposition(a.Filename))
	h.Set("X-Content-Type-Options", "nosniff")
	// An HTML or SVG file opened from the API's origin must not run.
	h.Set("Content-Security-Policy", "default-src 'none'; sandbox")
	h.Set("Cache-Control", "private, no-store")
	w.WriteHeader(http.StatusOK)
	if _, err := io.Copy(w, rc); err != nil {
		s.log.WarnContext(r.Context(), "attachment download cut short", "request_id", requestID(r), "attachment", a.ID, "err", err)
	}
}

// contentDisposition is RFC 6266's attachment with the filename: an ASCII
// stand-in in filename, the exact name in filename* (RFC 5987, UTF-8).
func contentDisposition(name string) string {
	var ascii strings.Builder
	for _, r := range name {
		switch {
		case r < 0x20 || r > 0x7e || r == '"' || r == '\\' || r == '%':
			ascii.WriteByte('_')
		default:
			ascii.WriteRune(r)
		}
	}
	return fmt.Sprintf(`attachment; filename="%s"; filename*=UTF-8''%s`, ascii.String(),
		strings.ReplaceAll(url.PathEscape(name), "'", "%27"))
}

func (s *Server) deleteAttachment(w http.ResponseWriter, r *http.Request) {
	a, err := s.attachments.Delete(r.Context(), principal(r), mux.Vars(r)["attachment_id"])
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.AttachmentDeleteResponse{Id: a.ID, Filename: a.Filename, Success: true})
}

func (s *Server) describeAttachments(w http.ResponseWriter, r *http.Request) {
	var body api.AttachmentVerifyRequest
	if !s.decode(w, r, &body) {
		return
	}
	atts, err := s.attachments.Describe(r.Context(), principal(r), deref(body.AttachmentIds))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := make([]api.AttachmentRef, 0, len(atts))
	for _, a := range atts {
		out = append(out, toAttachmentRef(a))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) verifyAttachments(w http.ResponseWriter, r *http.Request) {
	var body api.AttachmentVerifyRequest
	if !s.decode(w, r, &body) {
		return
	}
	v, err := s.attachments.Verify(r.Context(), principal(r), deref(body.AttachmentIds))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := api.AttachmentVerifyResponse{Present: v.Present, Missing: make([]api.MissingAttachment, 0, len(v.Missing))}
	for _, m := range v.Missing {
		out.Missing = append(out.Missing, api.MissingAttachment{Id: m.ID, Filename: m.Filename})
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listAttachments(w http.ResponseWriter, r *http.Request) {
	pr, err := pageRequest(r)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	res, err := s.attachments.List(r.Context(), principal(r), pr)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := api.AttachmentList{Attachments: make([]api.AttachmentUploadResponse, 0, len(res.Items)), NextCursor: nextCursor(res.Next),
		Total: res.Total}
	for _, a := range res.Items {
		out.Attachments = append(out.Attachments, toUploadResponse(a))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) listAttachmentPolicies(w http.ResponseWriter, r *http.Request) {
	ps, err := s.attachments.ListPolicies(r.Context(), principal(r))
	if err != nil {
		s.Error(w, r, err)
		return
	}
	out := make([]api.AttachmentFormatPolicy, 0, len(ps))
	for _, p := range ps {
		out = append(out, toFormatPolicy(p))
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) updateAttachmentPolicy(w http.ResponseWriter, r *http.Request) {
	var body api.AttachmentFormatPolicyUpdate
	if !s.decode(w, r, &body) {
		return
	}
	u := app.PolicyUpdate{Label: body.Label, Enabled: body.IsEnabled}
	if body.Mode != nil {
		m := string(*body.Mode)
		u.Mode = &m
	}
	if body.RequiresCapability != nil {
		c := string(*body.RequiresCapability)
		u.Capability = &c
	}
	p, err := s.attachments.UpdatePolicy(r.Context(), principal(r), mux.Vars(r)["mime_type"], u)
	if err != nil {
		s.Error(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toFormatPolicy(p))
}

func toUploadResponse(a *attachment.Attachment) api.AttachmentUploadResponse {
	out := api.AttachmentUploadResponse{Id: a.ID, Filename: a.Filename, MediaType: a.MediaType, SizeBytes: a.SizeBytes,
		Sha256: a.SHA256, Mode: api.AttachmentUploadResponseMode(a.Mode),
		ExtractionKind: api.AttachmentUploadResponseExtractionKind(a.Kind), RequiresCapability: nilIfEmpty(a.Capability)}
	if n := a.ExtractedChars(); n > 0 {
		out.ExtractedChars = &n
	}
	if !a.CreatedAt.IsZero() {
		t := a.CreatedAt
		out.CreatedAt = &t
	}
	return out
}

func toAttachmentRef(a *attachment.Attachment) api.AttachmentRef {
	return api.AttachmentRef{Id: a.ID, Filename: a.Filename, MediaType: a.MediaType, SizeBytes: a.SizeBytes, Sha256: a.SHA256,
		Mode: api.AttachmentRefMode(a.Mode), ExtractionKind: api.AttachmentRefExtractionKind(a.Kind),
		RequiresCapability: nilIfEmpty(a.Capability)}
}

func toFormatPolicy(p attachment.Policy) api.AttachmentFormatPolicy {
	def, isBuiltIn := attachment.PolicyFor(attachment.DefaultPolicies(), p.MediaType)
	return api.AttachmentFormatPolicy{MimeType: p.MediaType, Label: p.Label, Mode: api.AttachmentFormatPolicyMode(p.Mode),
		IsEnabled: p.Enabled, RequiresCapability: nilIfEmpty(p.Capability), ExtractsText: p.Extract,
		IsDefault: isBuiltIn && def == p}
}

package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"slices"
	"strings"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/attachment"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/ports"
)

// Codes of the attachment routes' refusals (docs: "Attachments").
const (
	// CodeAttachmentTooLarge (413): a file past the per-file limit.
	CodeAttachmentTooLarge = "attachment_too_large"
	// CodeUploadTooLarge (413): the request's files together past the
	// per-request limit.
	CodeUploadTooLarge = "upload_too_large"
	// CodeAttachmentEmpty (400): a file of no bytes.
	CodeAttachmentEmpty = "attachment_empty"
	// CodeInvalidFilename (400): a filename a download could not hand back.
	CodeInvalidFilename = "invalid_filename"
	// CodeTypeDisabled (415): a media type an administrator turned off.
	CodeTypeDisabled = "attachment_type_disabled"
	// CodeTypeUnsupported (415): a media type no policy accepts.
	CodeTypeUnsupported = "attachment_type_unsupported"
	// CodeTooComplex (400): a document that expands past the limits (a
	// zip bomb).
	CodeTooComplex = "attachment_too_complex"
	// CodeUnreadable (400): a document that cannot be parsed.
	CodeUnreadable = "attachment_unreadable"
)

// MaxDescribeIDs bounds the ids of one metadata or verify request.
const MaxDescribeIDs = 200

// AttachmentLimits bound uploads.
type AttachmentLimits struct {
	// MaxBytes bounds one file, MaxRequestBytes the files of one request.
	MaxBytes, MaxRequestBytes int64
	// TempDir is where uploads are spooled ("": the system's).
	TempDir string
}

// AttachmentService uploads, lists, describes, downloads and deletes an
// organization's attachments, and manages the policies per media type.
type AttachmentService struct {
	Store     ports.AttachmentStore
	Blobs     ports.BlobStore
	Inspector ports.FileInspector
	Clock     ports.Clock
	IDs       ports.IDs
	Log       *slog.Logger
	Limits    AttachmentLimits
}

// NewAttachmentService returns the service; zero limits take the defaults.
func NewAttachmentService(store ports.AttachmentStore, blobs ports.BlobStore, in ports.FileInspector, clock ports.Clock, ids ports.IDs,
	lg *slog.Logger, limits AttachmentLimits) *AttachmentService {
	if limits.MaxBytes <= 0 {
		limits.MaxBytes = 32 << 20
	}
	if limits.MaxRequestBytes <= 0 {
		limits.MaxRequestBytes = 128 << 20
	}
	return &AttachmentService{Store: store, Blobs: blobs, Inspector: in, Clock: clock, IDs: ids, Log: lg, Limits: limits}
}

// available refuses every call when the stores keep no attachments.
func (s *AttachmentService) available() error {
	if s == nil || s.Store == nil || s.Blobs == nil {
		return notSupported("", "attachments are not available on this storage")
	}
	return nil
}

// Policies are the built-in policies with the administrator's stored over
// them, in the defaults' order, then the stored ones of other types.
func (s *AttachmentService) Policies(ctx context.Context) ([]attachment.Policy, error) {
	stored, err := s.Store.AttachmentPolicies(ctx)
	if err != nil {
		return nil, err
	}
	out := attachment.DefaultPolicies()
	for _, p := range stored {
		if i := slices.IndexFunc(out, func(d attachment.Policy) bool { return d.MediaType == p.MediaType }); i >= 0 {
			out[i] = p
		} else {
			out = append(out, p)
		}
	}
	return out, nil
}

// Get returns the organization's attachment (another organization's is
// not found).
func (s *AttachmentService) Get(ctx context.Context, p *access.Principal, id string) (*attachment.Attachment, error) {
	if err := access.Authorize(p, access.ActReadAttachment); err != nil {
		return nil, err
	}
	if err := s.available(); err != nil {
		return nil, err
	}
	return s.Store.GetAttachment(ctx, p.OrgID, id)
}

// Open returns the attachment and its bytes, for a download.
func (s *AttachmentService) Open(ctx context.Context, p *access.Principal, id string) (*attachment.Attachment, io.ReadCloser, error) {
	a, err := s.Get(ctx, p, id)
	if err != nil {
		return nil, nil, err
	}
	rc, err := s.Blobs.OpenBlob(ctx, a.BlobKey)
	if errors.Is(err, ports.ErrNotFound) {
		return nil, nil, coded(ports.ErrNotFound, "attachment_bytes_missing", "attachment %s has no stored bytes", a.ID)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("open attachment %s: %w", a.ID, err)
	}
	return a, rc, nil
}

// List pages the organization's attachments, newest first.
func (s *AttachmentService) List(ctx context.Context, p *access.Principal, pr page.Request) (page.Result[*attachment.Attachment], error) {
	if err := access.Authorize(p, access.ActListAttachments); err != nil {
		return page.Result[*attachment.Attachment]{}, err
	}
	if err := s.available(); err != nil {
		return page.Result[*attachment.Attachment]{}, err
	}
	return s.Store.ListAttachments(ctx, p.OrgID, pr)
}

// Delete removes the attachment's metadata, then its bytes. A second
// delete, like another organization's id, is not found: the state is the
// same after one delete or two. A job that read the attachment keeps what
// it read.
func (s *AttachmentService) Delete(ctx context.Context, p *access.Principal, id string) (*attachment.Attachment, error) {
	if err := access.Authorize(p, access.ActDeleteAttachment); err != nil {
		return nil, err
	}
	if err := s.available(); err != nil {
		return nil, err
	}
	a, err := s.Store.DeleteAttachment(ctx, p.OrgID, id)
	if err != nil {
		return nil, err
	}
	if err := s.Blobs.DeleteBlob(ctx, a.BlobKey); err != nil {
		// The metadata is gone, so nothing reaches the bytes any more; they
		// are left for the storage's own clean-up.
		s.Log.WarnContext(ctx, "attachment bytes not deleted", "attachment", a.ID, "blob", a.BlobKey, "err", err)
	}
	return a, nil
}

// Describe returns the organization's attachments among ids, in order,
// the unknown ones left out.
func (s *AttachmentService) Describe(ctx context.Context, p *access.Principal, ids []string) ([]*attachment.Attachment, error) {
	if err := access.Authorize(p, access.ActDescribeAttachments); err != nil {
		return nil, err
	}
	if err := s.available(); err != nil {
		return nil, err
	}
	if err := checkIDs(ids); err != nil {
		return nil, err
	}
	return s.Store.GetAttachments(ctx, p.OrgID, ids)
}

// Verification says which of a request's ids a job could use.
type Verification struct {
	Present []string
	// Missing are the ids without an attachment, or whose bytes are gone
	// (with the attachment's filename then).
	Missing []MissingAttachment
}

// MissingAttachment is one id Verify did not find.
type MissingAttachment struct {
	ID, Filename string
}

// Verify checks each id: the organization holds it and its bytes are
// stored.
func (s *AttachmentService) Verify(ctx context.Context, p *access.Principal, ids []string) (Verification, error) {
	atts, err := s.Describe(ctx, p, ids)
	if err != nil {
		return Verification{}, err
	}
	byID := make(map[string]*attachment.Attachment, len(atts))
	for _, a := range atts {
		byID[a.ID] = a
	}
	out := Verification{Present: []string{}, Missing: []MissingAttachment{}}
	for _, id := range ids {
		a, ok := byID[id]
		if !ok {
			out.Missing = append(out.Missing, MissingAttachment{ID: id})
			continue
		}
		rc, err := s.Blobs.OpenBlob(ctx, a.BlobKey)
		if errors.Is(err, ports.ErrNotFound) {
			out.Missing = append(out.Missing, MissingAttachment{ID: id, Filename: a.Filename})
			continue
		}
		if err != nil {
			return Verification{}, fmt.Errorf("verify attachment %s: %w", id, err)
		}
		_ = rc.Close()
		out.Present = append(out.Present, id)
	}
	return out, nil
}

func checkIDs(ids []string) error {
	if len(ids) > MaxDescribeIDs {
		return Invalid("attachment_ids", "attachment_ids holds %d ids; at most %d", len(ids), MaxDescribeIDs)
	}
	for i, id := range ids {
		if id == "" {
			return Invalid(fmt.Sprintf("attachment_ids.%d", i), "attachment_ids.%d is empty", i)
		}
	}
	return nil
}

// PolicyUpdate changes one media type's policy; nil fields stay.
type PolicyUpdate struct {
	Mode  *string
	Label *string
	// Enabled turns the type on or off for uploads.
	Enabled *bool
	// Capability is what a model needs for a binary type's bytes ("": none).
	Capability *string
}

// UpdatePolicy applies u to the policy of media type mt (a type without
// one gets a new policy, which must say its mode) and stores it over the
// default. Attachments already stored keep the policy they were classified
// under.
func (s *AttachmentService) UpdatePolicy(ctx context.Context, p *access.Principal, mt string, u PolicyUpdate) (attachment.Policy, error) {
	if err := access.Authorize(p, access.ActUpdateAttachmentPolicies); err != nil {
		return attachment.Policy{}, err
	}
	if err := s.available(); err != nil {
		return attachment.Policy{}, err
	}
	base, params, err := mime.ParseMediaType(mt)
	if err != nil || len(params) > 0 || !strings.Contains(base, "/") {
		return attachment.Policy{}, Invalid("mime_type", "mime_type %q is not a media type such as application/pdf", mt)
	}
	all, err := s.Policies(ctx)
	if err != nil {
		return attachment.Policy{}, err
	}
	pol, known := attachment.PolicyFor(all, base)
	if !known {
		if u.Mode == nil {
			return attachment.Policy{}, Invalid("mode", "%s has no policy yet: say its mode (binary or inline_text)", base)
		}
		pol = attachment.Policy{MediaType: base, Label: base, Enabled: true}
	}
	if err := applyPolicyUpdate(&pol, u); err != nil {
		return attachment.Policy{}, err
	}
	if err := s.Store.SaveAttachmentPolicy(ctx, pol); err != nil {
		return attachment.Policy{}, err
	}
	return pol, nil
}

// ListPolicies returns every policy in force (system administrators).
func (s *AttachmentService) ListPolicies(ctx context.Context, p *access.Principal) ([]attachment.Policy, error) {
	if err := access.Authorize(p, access.ActListAttachmentPolicies); err != nil {
		return nil, err
	}
	if err := s.available(); err != nil {
		return nil, err
	}
	return s.Policies(ctx)
}

func applyPolicyUpdate(pol *attachment.Policy, u PolicyUpdate) error {
	if u.Mode != nil {
		switch m := attachment.Mode(*u.Mode); m {
		case attachment.Binary, attachment.InlineText:
			pol.Mode = m
		default:
			return Invalid("mode", "mode must be binary or inline_text, not %q", *u.Mode)
		}
	}
	if u.Label != nil {
		l := strings.TrimSpace(*u.Label)
		if l == "" || len(l) > 200 {
			return Invalid("label", "label must be 1 to 200 characters")
		}
		pol.Label = l
	}
	if u.Enabled != nil {
		pol.Enabled = *u.Enabled
	}
	if u.Capability != nil {
		switch c := *u.Capability; c {
		case "", attachment.CapPDF, attachment.CapVision, attachment.CapAudio:
			pol.Capability = c
		default:
			return Invalid("requires_capability", "requires_capability must be %s, %s, %s or empty, not %q",
				attachment.CapPDF, attachment.CapVision, attachment.CapAudio, c)
		}
	}
	if pol.Mode == attachment.Binary && pol.Capability == "" {
		return Invalid("requires_capability", "a binary type needs requires_capability: the models that can read its bytes")
	}
	if pol.Mode == attachment.InlineText {
		// Inline text is read by any model; a capability would only
		// narrow the models for nothing.
		pol.Capability = ""
		pol.Extract = true
	}
	return nil
}

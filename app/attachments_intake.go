package app

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/attachment"
	"github.com/entityenrich/enrich/ports"
)

// Intake is one upload request: each file is spooled to a temporary file
// and checked as it arrives (Add), and only when every file passed are
// they stored (Commit), so a refused request stores nothing. Close removes
// the temporary files, whatever happened.
type Intake struct {
	s        *AttachmentService
	orgID    string
	policies []attachment.Policy
	// left is what the request's remaining files may hold together.
	left  int64
	files []staged
}

// staged is a checked file waiting on disk.
type staged struct {
	att  attachment.Attachment
	path string
}

// NewIntake starts an upload request of p's organization.
func (s *AttachmentService) NewIntake(ctx context.Context, p *access.Principal) (*Intake, error) {
	if err := access.Authorize(p, access.ActUploadAttachment); err != nil {
		return nil, err
	}
	if err := s.available(); err != nil {
		return nil, err
	}
	ps, err := s.Policies(ctx)
	if err != nil {
		return nil, err
	}
	return &Intake{s: s, orgID: p.OrgID, policies: ps, left: s.Limits.MaxRequestBytes}, nil
}

// Upload is one file of an upload request.
type Upload struct {
	// Field names the file in the request ("files.0", "content_base64"),
	// FilenameField its filename ("files.0.filename", "filename").
	Field, FilenameField string
	Filename             string
	// Body is read once, to its end. A read error that is an *Error
	// passes as it is (the door knows what a broken body means); any
	// other is the body's fault (400).
	Body io.Reader
}

// Add spools one file and checks it: size, filename, bytes, media type and
// its policy, extracted text. Every refusal names the file's field and its
// filename.
func (in *Intake) Add(ctx context.Context, u Upload) error {
	field, filename := u.Field, u.Filename
	f, err := os.CreateTemp(in.s.Limits.TempDir, "enrich-upload-*")
	if err != nil {
		return fmt.Errorf("spool upload: %w", err)
	}
	kept := false
	defer func() {
		if !kept {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	limit := min(in.s.Limits.MaxBytes, in.left)
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(f, h), io.LimitReader(u.Body, limit+1))
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			return e
		}
		if isDiskError(err) {
			return fmt.Errorf("spool upload: %w", err)
		}
		return Invalid(field, "%s (%q) could not be read: %v", field, filename, err)
	}
	if n > limit {
		return in.tooLarge(field, filename)
	}
	in.left -= n
	a := attachment.Attachment{OrgID: in.orgID, Filename: filename, SizeBytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}
	if err := in.check(ctx, u, f, &a); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("spool upload: %w", err)
	}
	kept = true
	in.files = append(in.files, staged{att: a, path: f.Name()})
	return nil
}

func (in *Intake) tooLarge(field, filename string) error {
	if in.left < in.s.Limits.MaxBytes {
		return (&Error{Kind: attachment.ErrTooLarge, Code: CodeUploadTooLarge, Detail: fmt.Sprintf(
			"%s (%q) takes the request's files past %d bytes together", field, filename, in.s.Limits.MaxRequestBytes)}).at(field)
	}
	return (&Error{Kind: attachment.ErrTooLarge, Code: CodeAttachmentTooLarge, Detail: fmt.Sprintf(
		"%s (%q) is larger than %d bytes", field, filename, in.s.Limits.MaxBytes)}).at(field)
}

// isDiskError tells the spool's own failures (a full disk) from the
// body's.
func isDiskError(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe)
}

// check judges a spooled file: its filename, that it has bytes, its media
// type (sniffed, never the client's word) and its policy, and its text.
func (in *Intake) check(ctx context.Context, u Upload, f *os.File, a *attachment.Attachment) error {
	field := u.Field
	refuse := func(kind error, code, format string, args ...any) error {
		return (&Error{Kind: kind, Code: code, Detail: fmt.Sprintf("%s (%q): ", field, a.Filename) + fmt.Sprintf(format, args...)}).at(field)
	}
	if err := attachment.CheckFilename(a.Filename); err != nil {
		return (&Error{Kind: ports.ErrInvalid, Code: CodeInvalidFilename, Detail: fmt.Sprintf("%s: %v", u.FilenameField, err)}).at(u.FilenameField)
	}
	if a.SizeBytes == 0 {
		return refuse(ports.ErrInvalid, CodeAttachmentEmpty, "the file is empty")
	}
	mt, err := in.s.Inspector.Sniff(ctx, f, a.SizeBytes, a.Filename)
	if err != nil {
		return fmt.Errorf("sniff upload: %w", err)
	}
	a.MediaType = mt
	pol, ok := attachment.PolicyFor(in.policies, mt)
	switch {
	case !ok:
		return refuse(attachment.ErrDisabled, CodeTypeUnsupported, "files of type %s are not accepted", mt)
	case !pol.Enabled:
		return refuse(attachment.ErrDisabled, CodeTypeDisabled, "files of type %s (%s) are turned off", mt, pol.Label)
	}
	text := ""
	if pol.Extract || pol.Mode == attachment.InlineText {
		text, err = in.s.Inspector.Extract(ctx, f, a.SizeBytes, mt)
		switch {
		case errors.Is(err, attachment.ErrBomb):
			return refuse(ports.ErrInvalid, CodeTooComplex, "the document expands past the limits (uncompressed size or entries)")
		case errors.Is(err, attachment.ErrUnreadable) && pol.Mode == attachment.Binary:
			// The text is only a binary type's fallback: the bytes still
			// go to the models that read the type natively.
			text, err = "", nil
		case errors.Is(err, attachment.ErrUnreadable):
			return refuse(ports.ErrInvalid, CodeUnreadable, "the %s document cannot be read", mt)
		case err != nil:
			return fmt.Errorf("extract upload text: %w", err)
		}
	}
	// What no store keeps as text (NUL, bytes that are not UTF-8) leaves
	// the extracted text here.
	text = strings.ReplaceAll(strings.ToValidUTF8(text, "\uFFFD"), "\x00", "")
	attachment.Classify(a, pol, text)
	return nil
}

// Len is how many files were added.
func (in *Intake) Len() int { return len(in.files) }

// Commit stores every file in order: its bytes under a new attachment id,
// then its metadata. An organization's bytes already stored answer the
// attachment that holds them (the new bytes are deleted).
func (in *Intake) Commit(ctx context.Context) ([]*attachment.Attachment, error) {
	out := make([]*attachment.Attachment, 0, len(in.files))
	for i := range in.files {
		a, err := in.store(ctx, &in.files[i])
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func (in *Intake) store(ctx context.Context, st *staged) (*attachment.Attachment, error) {
	a := st.att
	a.ID = in.s.IDs.NewID()
	a.BlobKey = a.ID
	a.CreatedAt = in.s.Clock.Now()
	f, err := os.Open(st.path)
	if err != nil {
		return nil, fmt.Errorf("reopen upload: %w", err)
	}
	_, err = in.s.Blobs.PutBlob(ctx, a.BlobKey, f)
	_ = f.Close()
	if err != nil {
		return nil, fmt.Errorf("store attachment bytes: %w", err)
	}
	held, existed, err := in.s.Store.SaveAttachment(ctx, &a)
	if err != nil || existed {
		// Detached from the request: the bytes must go even if the client
		// left.
		if derr := in.s.Blobs.DeleteBlob(context.WithoutCancel(ctx), a.BlobKey); derr != nil {
			in.s.Log.WarnContext(ctx, "unused attachment bytes not deleted", "blob", a.BlobKey, "err", derr)
		}
	}
	if err != nil {
		return nil, err
	}
	return held, nil
}

// Close removes the spooled files.
func (in *Intake) Close() {
	for _, st := range in.files {
		_ = os.Remove(st.path)
	}
	in.files = nil
}

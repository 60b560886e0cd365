package ports

import (
	"context"
	"io"

	"github.com/entityenrich/enrich/domain/attachment"
	"github.com/entityenrich/enrich/domain/page"
)

// AttachmentStore keeps attachments' metadata (issue 29); their bytes are
// in a BlobStore. Reads are scoped to one organization: another
// organization's attachment is ErrNotFound.
type AttachmentStore interface {
	// SaveAttachment stores a, unless the organization already holds an
	// attachment with a.SHA256: then that one is returned with existed
	// true and nothing is written (uploads are deduplicated on the hash).
	SaveAttachment(ctx context.Context, a *attachment.Attachment) (stored *attachment.Attachment, existed bool, err error)
	GetAttachment(ctx context.Context, orgID, id string) (*attachment.Attachment, error)
	// GetAttachments returns the organization's attachments among ids, in
	// the order of ids, leaving out the ones it does not hold (one round
	// trip: it is on the path of every job that names attachments).
	GetAttachments(ctx context.Context, orgID string, ids []string) ([]*attachment.Attachment, error)
	// ListAttachments pages the organization's attachments, newest first.
	ListAttachments(ctx context.Context, orgID string, p page.Request) (page.Result[*attachment.Attachment], error)
	// DeleteAttachment removes the attachment's metadata and returns what
	// it was, so the caller can delete its bytes (ErrNotFound when it is
	// not there).
	DeleteAttachment(ctx context.Context, orgID, id string) (*attachment.Attachment, error)
	// AttachmentPolicies are the administrator's policies stored over the
	// defaults (one per media type they changed; empty when none).
	AttachmentPolicies(ctx context.Context) ([]attachment.Policy, error)
	// SaveAttachmentPolicy stores p over its media type's default.
	SaveAttachmentPolicy(ctx context.Context, p attachment.Policy) error
}

// BlobStore keeps attachments' bytes by key. Writes stream: a store never
// needs the whole file in memory. An outage is ErrUnavailable.
type BlobStore interface {
	// PutBlob writes r's bytes under key (replacing any) and returns how
	// many it wrote. A failed write leaves nothing readable under key.
	PutBlob(ctx context.Context, key string, r io.Reader) (int64, error)
	// OpenBlob reads the bytes under key (ErrNotFound when there are none).
	OpenBlob(ctx context.Context, key string) (io.ReadCloser, error)
	// DeleteBlob removes the bytes under key; deleting a missing key is
	// not an error.
	DeleteBlob(ctx context.Context, key string) error
}

// FileInspector reads what an uploaded file is and what text it holds.
// The file is on local disk by then (the upload was spooled), so a reader
// needs no memory for the whole file.
type FileInspector interface {
	// Sniff returns the file's media type, judged from its bytes (the
	// filename only breaks ties the bytes leave, such as text/markdown
	// over text/plain), never from the client's word.
	Sniff(ctx context.Context, f io.ReaderAt, size int64, filename string) (string, error)
	// Extract returns the text of a file of media type mt, as models
	// should read it. A document that expands past the limits is
	// attachment.ErrBomb; one that cannot be parsed is
	// attachment.ErrUnreadable; a type without an extractor is "" and nil.
	Extract(ctx context.Context, f io.ReaderAt, size int64, mt string) (string, error)
}

package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/entityenrich/enrich/domain/attachment"
	"github.com/entityenrich/enrich/ports"
)

// MaxJobAttachments is the most attachments one job may name.
const MaxJobAttachments = 20

// AttachmentLoader resolves the attachment_ids of a job: at submit, their
// metadata (one round trip, before any spend); when the job starts, their
// bytes, which the job then holds whatever happens to the attachments.
type AttachmentLoader struct {
	Store ports.AttachmentStore
	Blobs ports.BlobStore
}

// Resolve returns the organization's attachments named by ids, in order.
// An empty, unknown or foreign id is 400 attachment_not_found naming its
// index in attachment_ids; a repeated id counts once.
func (l *AttachmentLoader) Resolve(ctx context.Context, orgID string, ids []string) ([]attachment.Attachment, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	if len(ids) > MaxJobAttachments {
		return nil, Invalid("attachment_ids", "attachment_ids holds %d ids; at most %d", len(ids), MaxJobAttachments)
	}
	uniq := make([]string, 0, len(ids))
	seen := make(map[string]bool, len(ids))
	for i, id := range ids {
		if strings.TrimSpace(id) == "" {
			return nil, Invalid(fmt.Sprintf("attachment_ids.%d", i), "attachment_ids.%d is empty", i)
		}
		if !seen[id] {
			seen[id] = true
			uniq = append(uniq, id)
		}
	}
	if l == nil || l.Store == nil {
		return nil, notSupported("attachment_ids", "attachments are not available on this storage")
	}
	found, err := l.Store.GetAttachments(ctx, orgID, uniq)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]*attachment.Attachment, len(found))
	for _, a := range found {
		byID[a.ID] = a
	}
	out := make([]attachment.Attachment, 0, len(uniq))
	for i, id := range ids {
		a, ok := byID[id]
		if !ok {
			return nil, (&Error{Kind: ports.ErrInvalid, Code: "attachment_not_found",
				Detail: fmt.Sprintf("attachment_ids.%d: no attachment %q in this organization", i, id)}).at(fmt.Sprintf("attachment_ids.%d", i))
		}
		if seen[id] {
			seen[id] = false
			out = append(out, *a)
		}
	}
	return out, nil
}

// Load reads the bytes of atts' binary attachments (an inline-text one is
// its cached text and needs none). A blob that went missing is
// attachment_not_found; a storage outage is ports.ErrUnavailable.
func (l *AttachmentLoader) Load(ctx context.Context, atts []attachment.Attachment) ([]attachment.Loaded, error) {
	out := make([]attachment.Loaded, len(atts))
	for i, a := range atts {
		out[i].Attachment = a
		if a.Mode != attachment.Binary {
			continue
		}
		data, err := l.read(ctx, a.BlobKey)
		if errors.Is(err, ports.ErrNotFound) {
			return nil, coded(ports.ErrInvalid, "attachment_not_found", "attachment %s (%s) has no stored bytes", a.ID, a.Filename)
		}
		if err != nil {
			return nil, fmt.Errorf("read attachment %s: %w", a.ID, err)
		}
		out[i].Data = data
	}
	return out, nil
}

func (l *AttachmentLoader) read(ctx context.Context, key string) ([]byte, error) {
	rc, err := l.Blobs.OpenBlob(ctx, key)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}

package fakeports

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/entityenrich/enrich/domain/attachment"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/ports"
)

// Attachments is a minimal AttachmentStore for the tests of the jobs that
// read attachments, until every storage has its own: metadata in a map,
// scoped to organizations; listing and policies are not kept. Put seeds
// one attachment, with its bytes in a BlobStore.
type Attachments struct {
	mu   sync.Mutex
	byID map[string]attachment.Attachment
}

// NewAttachments returns an empty store.
func NewAttachments() *Attachments { return &Attachments{byID: map[string]attachment.Attachment{}} }

var _ ports.AttachmentStore = (*Attachments)(nil)

// Put stores an attachment of orgID named filename with data's bytes in
// blobs, classified by its media type's default policy; text is its
// extracted text ("" for none). It returns the stored attachment.
func (s *Attachments) Put(ctx context.Context, blobs ports.BlobStore, orgID, id, filename, mediaType string, data []byte, text string) (attachment.Attachment, error) {
	sum := sha256.Sum256(data)
	a := attachment.Attachment{ID: id, OrgID: orgID, Filename: filename, MediaType: mediaType, SizeBytes: int64(len(data)),
		SHA256: hex.EncodeToString(sum[:]), BlobKey: "att/" + id}
	p, _ := attachment.PolicyFor(attachment.DefaultPolicies(), mediaType)
	attachment.Classify(&a, p, text)
	if blobs != nil {
		if _, err := blobs.PutBlob(ctx, a.BlobKey, bytesReader(data)); err != nil {
			return a, err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID[id] = a
	return a, nil
}

// SaveAttachment implements ports.AttachmentStore (deduplicated on the hash).
func (s *Attachments) SaveAttachment(_ context.Context, a *attachment.Attachment) (*attachment.Attachment, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.byID {
		if x.OrgID == a.OrgID && x.SHA256 == a.SHA256 {
			return &x, true, nil
		}
	}
	s.byID[a.ID] = *a
	return a, false, nil
}

// GetAttachment implements ports.AttachmentStore.
func (s *Attachments) GetAttachment(_ context.Context, orgID, id string) (*attachment.Attachment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.byID[id]
	if !ok || a.OrgID != orgID {
		return nil, ports.ErrNotFound
	}
	return &a, nil
}

// GetAttachments implements ports.AttachmentStore.
func (s *Attachments) GetAttachments(_ context.Context, orgID string, ids []string) ([]*attachment.Attachment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*attachment.Attachment
	for _, id := range ids {
		if a, ok := s.byID[id]; ok && a.OrgID == orgID {
			out = append(out, &a)
		}
	}
	return out, nil
}

// ListAttachments implements ports.AttachmentStore (not kept: empty).
func (s *Attachments) ListAttachments(context.Context, string, page.Request) (page.Result[*attachment.Attachment], error) {
	return page.Result[*attachment.Attachment]{}, nil
}

// DeleteAttachment implements ports.AttachmentStore.
func (s *Attachments) DeleteAttachment(_ context.Context, orgID, id string) (*attachment.Attachment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.byID[id]
	if !ok || a.OrgID != orgID {
		return nil, ports.ErrNotFound
	}
	delete(s.byID, id)
	return &a, nil
}

// AttachmentPolicies implements ports.AttachmentStore (none stored).
func (s *Attachments) AttachmentPolicies(context.Context) ([]attachment.Policy, error) {
	return nil, nil
}

// SaveAttachmentPolicy implements ports.AttachmentStore (not kept).
func (s *Attachments) SaveAttachmentPolicy(context.Context, attachment.Policy) error { return nil }

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

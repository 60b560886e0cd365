package fakeports

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/entityenrich/enrich/domain/attachment"
	"github.com/entityenrich/enrich/ports"
)

// SeedAttachment stores an attachment of orgID named filename in store,
// with data's bytes in blobs, classified by its media type's default
// policy; text is its extracted text ("" for none). It is how tests of the
// jobs that read attachments seed them without the upload path.
func SeedAttachment(ctx context.Context, store ports.AttachmentStore, blobs ports.BlobStore, orgID, id, filename, mediaType string,
	data []byte, text string) (attachment.Attachment, error) {
	sum := sha256.Sum256(data)
	a := attachment.Attachment{ID: id, OrgID: orgID, Filename: filename, MediaType: mediaType, SizeBytes: int64(len(data)),
		SHA256: hex.EncodeToString(sum[:]), BlobKey: "att/" + id}
	p, _ := attachment.PolicyFor(attachment.DefaultPolicies(), mediaType)
	attachment.Classify(&a, p, text)
	if _, err := blobs.PutBlob(ctx, a.BlobKey, bytes.NewReader(data)); err != nil {
		return a, err
	}
	stored, _, err := store.SaveAttachment(ctx, &a)
	if err != nil {
		return a, err
	}
	return *stored, nil
}

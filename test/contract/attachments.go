package contract

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/attachment"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/ports"
)

// TestAttachment returns an attachment of org created n seconds after the
// timeline's start, its hash derived from hash.
func TestAttachment(org, hash string, n int) *attachment.Attachment {
	id := TestUUID()
	return &attachment.Attachment{ID: id, OrgID: org, Filename: "report " + hash + ".pdf", MediaType: "application/pdf",
		SizeBytes: int64(100 + n), SHA256: fmt.Sprintf("%064s", hash), Mode: attachment.Binary, Kind: attachment.KindExtracted,
		Capability: attachment.CapPDF, Text: "Annual report ✓ " + hash, BlobKey: id, CreatedAt: at(n)}
}

// RunAttachmentStore checks the dedup on (organization, sha256), the
// organization scope of every read and the delete, the order of
// GetAttachments, the keyset pages newest first and the policies.
func RunAttachmentStore(t *testing.T, newStore func(t *testing.T) ports.AttachmentStore) {
	t.Run("dedup and scope", func(t *testing.T) { attachmentDedup(t, newStore(t)) })
	t.Run("get in order", func(t *testing.T) { attachmentsInOrder(t, newStore(t)) })
	t.Run("pages", func(t *testing.T) { attachmentPages(t, newStore(t)) })
	t.Run("policies", func(t *testing.T) { attachmentPolicies(t, newStore(t)) })
}

func attachmentDedup(t *testing.T, s ports.AttachmentStore) {
	ctx := context.Background()
	is := is.New(t)
	org, other := newID("org"), newID("org")
	a := TestAttachment(org, newID("h"), 1)
	got, existed, err := s.SaveAttachment(ctx, a)
	is.NoErr(err)
	is.True(!existed)
	is.Equal(got.ID, a.ID)
	sameTime(t, "created_at", got.CreatedAt, a.CreatedAt)

	// The same bytes again: the first one, nothing written.
	again := TestAttachment(org, "", 5)
	again.SHA256 = a.SHA256
	got, existed, err = s.SaveAttachment(ctx, again)
	is.NoErr(err)
	is.True(existed)
	is.Equal(got.ID, a.ID)
	is.Equal(got.Filename, a.Filename)
	_, err = s.GetAttachment(ctx, org, again.ID)
	is.True(errors.Is(err, ports.ErrNotFound))

	// Another organization's same bytes are its own.
	theirs := TestAttachment(other, "", 2)
	theirs.SHA256 = a.SHA256
	got, existed, err = s.SaveAttachment(ctx, theirs)
	is.NoErr(err)
	is.True(!existed)
	is.Equal(got.ID, theirs.ID)

	// Every field comes back; another organization cannot read or delete it.
	read, err := s.GetAttachment(ctx, org, a.ID)
	is.NoErr(err)
	sameTime(t, "created_at", read.CreatedAt, a.CreatedAt)
	read.CreatedAt = a.CreatedAt
	is.Equal(*read, *a)
	_, err = s.GetAttachment(ctx, other, a.ID)
	is.True(errors.Is(err, ports.ErrNotFound))
	_, err = s.DeleteAttachment(ctx, other, a.ID)
	is.True(errors.Is(err, ports.ErrNotFound))

	// Delete returns what it was; then it is gone, and the hash is free.
	gone, err := s.DeleteAttachment(ctx, org, a.ID)
	is.NoErr(err)
	is.Equal(gone.BlobKey, a.BlobKey)
	_, err = s.GetAttachment(ctx, org, a.ID)
	is.True(errors.Is(err, ports.ErrNotFound))
	_, err = s.DeleteAttachment(ctx, org, a.ID)
	is.True(errors.Is(err, ports.ErrNotFound))
	got, existed, err = s.SaveAttachment(ctx, again)
	is.NoErr(err)
	is.True(!existed)
	is.Equal(got.ID, again.ID)
}

func attachmentsInOrder(t *testing.T, s ports.AttachmentStore) {
	ctx := context.Background()
	is := is.New(t)
	org, other := newID("org"), newID("org")
	var ids []string
	for i := range 3 {
		a := TestAttachment(org, newID("h"), i)
		_, _, err := s.SaveAttachment(ctx, a)
		is.NoErr(err)
		ids = append(ids, a.ID)
	}
	foreign := TestAttachment(other, newID("h"), 0)
	_, _, err := s.SaveAttachment(ctx, foreign)
	is.NoErr(err)

	got, err := s.GetAttachments(ctx, org, []string{ids[2], TestUUID(), foreign.ID, ids[0], ids[1]})
	is.NoErr(err)
	is.Equal(len(got), 3) // the unknown and the foreign one are left out
	is.Equal([]string{got[0].ID, got[1].ID, got[2].ID}, []string{ids[2], ids[0], ids[1]})
	got, err = s.GetAttachments(ctx, org, nil)
	is.NoErr(err)
	is.Equal(len(got), 0)
}

func attachmentPages(t *testing.T, s ports.AttachmentStore) {
	ctx := context.Background()
	is := is.New(t)
	org := newID("org")
	var want []string // newest first
	for i := range 5 {
		a := TestAttachment(org, newID("h"), i/2) // two share each second: the id breaks the tie
		_, _, err := s.SaveAttachment(ctx, a)
		is.NoErr(err)
		want = append(want, a.ID)
	}
	_, _, err := s.SaveAttachment(ctx, TestAttachment(newID("org"), newID("h"), 9))
	is.NoErr(err)
	var got []string
	req := page.Request{Size: 2}
	for pages := 0; ; pages++ {
		is.True(pages < 4)
		res, err := s.ListAttachments(ctx, org, req)
		is.NoErr(err)
		is.Equal(res.Total, 5)
		for _, a := range res.Items {
			is.Equal(a.OrgID, org)
			got = append(got, a.ID)
		}
		if res.Next == "" {
			break
		}
		req, err = page.ParseRequest(2, res.Next)
		is.NoErr(err)
	}
	is.Equal(len(got), 5)
	for i := 1; i < len(got); i++ {
		a, _ := s.GetAttachment(ctx, org, got[i-1])
		b, _ := s.GetAttachment(ctx, org, got[i])
		is.True(a.CreatedAt.After(b.CreatedAt) || (a.CreatedAt.Equal(b.CreatedAt) && a.ID > b.ID)) // newest first
	}
	is.Equal(sortedCopy(got), sortedCopy(want))
}

func attachmentPolicies(t *testing.T, s ports.AttachmentStore) {
	ctx := context.Background()
	is := is.New(t)
	// The policies are global: a media type of this run's own keeps runs
	// on one database apart.
	mt := "application/x-" + newID("test")
	p := attachment.Policy{MediaType: mt, Label: "Test ✓", Mode: attachment.InlineText, Enabled: true, Extract: true}
	is.NoErr(s.SaveAttachmentPolicy(ctx, p))
	p.Mode, p.Enabled, p.Capability, p.Label = attachment.Binary, false, attachment.CapVision, "Relabelled"
	is.NoErr(s.SaveAttachmentPolicy(ctx, p))
	ps, err := s.AttachmentPolicies(ctx)
	is.NoErr(err)
	got, ok := attachment.PolicyFor(ps, mt)
	is.True(ok)
	is.Equal(got, p)
}

func sortedCopy(xs []string) []string {
	out := slices.Clone(xs)
	slices.Sort(out)
	return out
}

package app_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/fakeports"
)

// downBlobs is a blob store in an outage.
type downBlobs struct{ ports.BlobStore }

func (downBlobs) OpenBlob(context.Context, string) (io.ReadCloser, error) {
	return nil, fmt.Errorf("blob store: %w", ports.ErrUnavailable)
}

// TestAttachmentLoader: Resolve keeps the order and counts a repeated id
// once, refuses empty, unknown and too many ids naming the field; Load
// reads the binary ones' bytes, which the job then holds whatever happens
// to the attachment; a blob gone before the job read it is
// attachment_not_found, and an outage stays an outage (503, not 400).
func TestAttachmentLoader(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	store, blobs := memory.NewAttachmentStore(), memory.NewBlobStore()
	pdf := fakeports.PDF("name: Acme")
	for _, a := range []struct{ id, name, mt string }{{"pdf", "r.pdf", "application/pdf"}, {"txt", "n.txt", "text/plain"}} {
		data, text := pdf, ""
		if a.mt == "text/plain" {
			data, text = []byte("name: Acme"), "name: Acme"
		}
		_, err := fakeports.SeedAttachment(ctx, store, blobs, "org", a.id, a.name, a.mt, data, text)
		is.NoErr(err)
	}
	l := &app.AttachmentLoader{Store: store, Blobs: blobs}

	got, err := l.Resolve(ctx, "org", []string{"txt", "pdf", "txt"})
	is.NoErr(err)
	is.Equal(len(got), 2) // the repeat counts once
	is.Equal(got[0].ID, "txt")
	is.Equal(got[1].ID, "pdf")

	for _, tt := range []struct {
		ids         []string
		code, field string
	}{
		{[]string{"pdf", ""}, "invalid_request", "attachment_ids.1"},
		{[]string{"pdf", "nope"}, "attachment_not_found", "attachment_ids.1"},
		{slices.Repeat([]string{"pdf"}, app.MaxJobAttachments+1), "invalid_request", "attachment_ids"},
	} {
		_, err := l.Resolve(ctx, "org", tt.ids)
		e, ok := app.AsError(err)
		is.True(ok)
		is.Equal(e.Code, tt.code)
		is.Equal(e.Field, tt.field)
	}
	_, err = l.Resolve(ctx, "other", []string{"pdf"}) // another organization's
	e, _ := app.AsError(err)
	is.Equal(e.Code, "attachment_not_found")

	loaded, err := l.Load(ctx, got)
	is.NoErr(err)
	is.Equal(loaded[1].Data, pdf) // the binary one's bytes
	is.Equal(loaded[0].Data, nil) // an inline-text one is its text
	is.NoErr(blobs.DeleteBlob(ctx, "att/pdf"))
	is.Equal(loaded[1].Data, pdf) // what the job read stays with it

	_, err = l.Load(ctx, got) // gone before the job read it
	e, ok := app.AsError(err)
	is.True(ok)
	is.Equal(e.Code, "attachment_not_found")

	_, err = (&app.AttachmentLoader{Store: store, Blobs: downBlobs{blobs}}).Load(ctx, got)
	is.True(errors.Is(err, ports.ErrUnavailable))
	_, ok = app.AsError(err)
	is.True(!ok)

	_, err = (&app.AttachmentLoader{}).Resolve(ctx, "org", []string{"pdf"}) // storage without attachments
	e, _ = app.AsError(err)
	is.Equal(e.Code, "not_supported_yet")
}

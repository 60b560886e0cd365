// Package blobstore keeps attachments' bytes in a gocloud.dev bucket:
// object storage (s3://, gs://, azblob://), a directory (file://) or memory
// (mem://), all behind one URL (ENRICH_BLOB_URL).
package blobstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/entityenrich/enrich/ports"
)

// partSize is the size of the parts a multipart upload sends, the least
// that S3 accepts: with one part in flight at a time, an upload holds a
// part or two in memory, whatever the file's size.
const partSize = 5 << 20

// Store is ports.BlobStore on a bucket.
type Store struct {
	bucket *blob.Bucket
	name   string
}

var _ ports.BlobStore = (*Store)(nil)

// Open opens the bucket at rawURL, a gocloud.dev bucket URL. Credentials
// come from the driver's usual places (the environment, shared config
// files, the platform's metadata service), never from the URL.
func Open(ctx context.Context, rawURL string) (*Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme == "" {
		return nil, fmt.Errorf("blob storage URL %q: want scheme://bucket (s3, gs, azblob, file or mem)", rawURL)
	}
	if u.Scheme == "file" {
		rawURL = fileDefaults(u)
	}
	b, err := blob.OpenBucket(ctx, rawURL)
	if err != nil {
		return nil, fmt.Errorf("blob storage %s: %w", redacted(u), err)
	}
	return New(b, redacted(u)), nil
}

// fileDefaults sets the file driver's options a server wants unless the
// URL says otherwise: temporary files next to the blobs (renaming one from
// the system's temporary directory fails when the bucket is another mount,
// such as a container's volume), and no attribute files beside every blob
// (the store reads nothing but the bytes).
func fileDefaults(u *url.URL) string {
	q := u.Query()
	if !q.Has("no_tmp_dir") {
		q.Set("no_tmp_dir", "true")
	}
	if !q.Has("metadata") {
		q.Set("metadata", "skip")
	}
	v := *u
	v.RawQuery = q.Encode()
	return v.String()
}

// New returns the store on b, opened by the caller; name says where it
// is, for logs and errors. Close closes b.
func New(b *blob.Bucket, name string) *Store { return &Store{bucket: b, name: name} }

// redacted is u without its query (which may hold settings an operator
// would rather not see in logs) or user info.
func redacted(u *url.URL) string { return u.Scheme + "://" + u.Host + u.Path }

// Name is where the bytes are (scheme, bucket and path), for logs.
func (s *Store) Name() string { return s.name }

// Close releases the bucket.
func (s *Store) Close() error { return s.bucket.Close() }

// PutBlob implements ports.BlobStore. The writer's context is cancelled
// before Close when the copy fails, which tells every driver to abort:
// the temporary file, the buffered object or the multipart upload is
// dropped and the previous bytes under key, if any, stay.
func (s *Store) PutBlob(ctx context.Context, key string, r io.Reader) (int64, error) {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w, err := s.bucket.NewWriter(wctx, key, &blob.WriterOptions{
		// The bytes are opaque here (their type is judged elsewhere):
		// sniffing would only hold back the first bytes.
		ContentType: "application/octet-stream", BufferSize: partSize, MaxConcurrency: 1,
	})
	if err != nil {
		return 0, s.fail(ctx, err, "put", key)
	}
	src := &sourceReader{r: r}
	n, err := io.Copy(w, src)
	if err != nil {
		cancel()
		_ = w.Close()
		if src.err != nil {
			// The caller's reader failed (the upload broke off): its
			// error, as it is, not the storage's.
			return 0, fmt.Errorf("blob %s: put %s: %w", s.name, key, src.err)
		}
		return 0, s.fail(ctx, err, "put", key)
	}
	if err := w.Close(); err != nil {
		return 0, s.fail(ctx, err, "put", key)
	}
	return n, nil
}

// OpenBlob implements ports.BlobStore. The reader streams from the bucket;
// its errors are classified as the store's others are.
func (s *Store) OpenBlob(ctx context.Context, key string) (io.ReadCloser, error) {
	r, err := s.bucket.NewReader(ctx, key, nil)
	if err != nil {
		return nil, s.fail(ctx, err, "open", key)
	}
	return &blobReader{ctx: ctx, r: r, s: s, key: key}, nil
}

// DeleteBlob implements ports.BlobStore.
func (s *Store) DeleteBlob(ctx context.Context, key string) error {
	err := s.bucket.Delete(ctx, key)
	if err == nil || gcerrors.Code(err) == gcerrors.NotFound {
		return nil
	}
	return s.fail(ctx, err, "delete", key)
}

// fail wraps a bucket's error: ErrNotFound for a missing blob on a read,
// ErrUnavailable for an outage, the caller's own cancellation as it is.
func (s *Store) fail(ctx context.Context, err error, op, key string) error {
	if cerr := ctx.Err(); cerr != nil {
		return fmt.Errorf("blob %s: %s %s: %w", s.name, op, key, cerr)
	}
	if op == "open" && gcerrors.Code(err) == gcerrors.NotFound {
		return fmt.Errorf("blob %s: %s %s: %w", s.name, op, key, ports.ErrNotFound)
	}
	if isOutage(err) {
		// The cause as text only: a client's timeout is not the caller's
		// deadline.
		return fmt.Errorf("blob %s: %s %s: %w: %v", s.name, op, key, ports.ErrUnavailable, err)
	}
	return fmt.Errorf("blob %s: %s %s: %w", s.name, op, key, err)
}

// sourceReader remembers the error of the reader being stored, to tell it
// from the bucket's.
type sourceReader struct {
	r   io.Reader
	err error
}

func (r *sourceReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		r.err = err
	}
	return n, err
}

// blobReader classifies the errors of a read under way (an outage in the
// middle of a download is ErrUnavailable too).
type blobReader struct {
	ctx context.Context
	r   *blob.Reader
	s   *Store
	key string
}

func (r *blobReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		err = r.s.fail(r.ctx, err, "read", r.key)
	}
	return n, err
}

func (r *blobReader) Close() error { return r.r.Close() }

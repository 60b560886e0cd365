package blobstore_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/matryer/is"
	"gocloud.dev/blob/s3blob"

	"github.com/entityenrich/enrich/adapters/blobstore"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
)

func TestFileBucket(t *testing.T) {
	newStore := func(t *testing.T) ports.BlobStore { return open(t, "file://"+t.TempDir()) }
	contract.RunBlobStore(t, newStore)
	contract.RunBlobStoreConcurrency(t, newStore)
}

func TestMemBucket(t *testing.T) {
	newStore := func(t *testing.T) ports.BlobStore { return open(t, "mem://") }
	contract.RunBlobStore(t, newStore)
	contract.RunBlobStoreConcurrency(t, newStore)
}

// TestS3Bucket runs the suite on the S3 driver against an S3-compatible
// fake on loopback.
func TestS3Bucket(t *testing.T) {
	endpoint := fakeS3(t)
	newStore := func(t *testing.T) ports.BlobStore { return s3Store(t, endpoint, "attachments") }
	contract.RunBlobStore(t, newStore)
	contract.RunBlobStoreConcurrency(t, newStore)
}

// TestS3URL: an s3:// URL with an endpoint opens the bucket there, with
// the credentials of the environment.
func TestS3URL(t *testing.T) {
	is := is.New(t)
	endpoint := fakeS3(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	s := open(t, "s3://viaurl?region=us-east-1&use_path_style=true&endpoint="+endpoint)
	is.Equal(s.Name(), "s3://viaurl")
	ctx := context.Background()
	n, err := s.PutBlob(ctx, "a/b", bytes.NewReader([]byte("hello")))
	is.NoErr(err)
	is.Equal(n, int64(5))
	r, err := s.OpenBlob(ctx, "a/b")
	is.NoErr(err)
	got, err := io.ReadAll(r)
	is.NoErr(err)
	is.Equal(string(got), "hello")
	is.NoErr(r.Close())
}

func TestOpenRefusesABadURL(t *testing.T) {
	for _, u := range []string{"", "not a url", "nope://bucket", "file:///does/not/exist/anywhere"} {
		t.Run(u, func(t *testing.T) {
			s, err := blobstore.Open(context.Background(), u)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded", u)
			}
			t.Logf("%v", err)
		})
	}
}

// TestS3OutageIsUnavailable: an endpoint that refuses connections, and one
// that answers 5xx, fail every operation with ErrUnavailable, promptly.
func TestS3OutageIsUnavailable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()
	endpoints := map[string]string{"refused": refused}
	for _, status := range []int{http.StatusInternalServerError, http.StatusServiceUnavailable} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(status)
		}))
		t.Cleanup(srv.Close)
		endpoints[http.StatusText(status)] = srv.URL
	}
	for name, endpoint := range endpoints {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			is := is.New(t)
			s := s3Store(t, endpoint, "down")
			ctx := context.Background()
			start := time.Now()
			_, err := s.PutBlob(ctx, "k", bytes.NewReader(make([]byte, 6<<20)))
			t.Logf("put: %v", err)
			is.True(errors.Is(err, ports.ErrUnavailable))
			_, err = s.OpenBlob(ctx, "k")
			t.Logf("open: %v", err)
			is.True(errors.Is(err, ports.ErrUnavailable))
			err = s.DeleteBlob(ctx, "k")
			is.True(errors.Is(err, ports.ErrUnavailable))
			is.True(time.Since(start) < 30*time.Second) // refused, not hung
		})
	}
}

// TestCallerCancelIsNotAnOutage: the caller leaving is its own error.
func TestCallerCancelIsNotAnOutage(t *testing.T) {
	is := is.New(t)
	s := s3Store(t, fakeS3(t), "attachments")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := s.OpenBlob(ctx, "k")
	is.True(errors.Is(err, context.Canceled))
	is.True(!errors.Is(err, ports.ErrUnavailable))
}

func open(t testing.TB, u string) *blobstore.Store {
	t.Helper()
	s, err := blobstore.Open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// fakeS3 starts an S3-compatible server on loopback that creates buckets
// as they are used and returns its endpoint.
func fakeS3(t *testing.T) string {
	srv := httptest.NewServer(gofakes3.New(s3mem.New(), gofakes3.WithAutoBucket(true)).Server())
	t.Cleanup(srv.Close)
	return srv.URL
}

// s3Store opens bucket on the S3 endpoint, path-style (no bucket
// subdomains: loopback only) with static credentials.
func s3Store(t testing.TB, endpoint, bucket string) *blobstore.Store {
	t.Helper()
	cfg := aws.Config{
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
		BaseEndpoint: aws.String(endpoint),
	}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
	b, err := s3blob.OpenBucket(context.Background(), client, bucket, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := blobstore.New(b, "s3://"+bucket)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestFileBucketKeepsOnlyTheBytes: the file driver writes its temporary
// files in the bucket's directory (a rename across mounts would fail) and
// no attribute files: a blob is one file.
func TestFileBucketKeepsOnlyTheBytes(t *testing.T) {
	is := is.New(t)
	dir := t.TempDir()
	t.Setenv("TMPDIR", filepath.Join(dir, "missing")) // a temporary file there would fail the write
	s := open(t, "file://"+dir)
	_, err := s.PutBlob(context.Background(), "org/sha", bytes.NewReader([]byte("bytes")))
	is.NoErr(err)
	var files []string
	is.NoErr(filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, strings.TrimPrefix(p, dir))
		}
		return err
	}))
	is.Equal(files, []string{"/org/sha"})
}

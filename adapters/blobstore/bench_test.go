package blobstore_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/pgtest"
)

// BenchmarkBlobStore measures raw PutBlob and OpenBlob (read to the end)
// on the two stores a server keeps attachments in without a cloud: the
// PostgreSQL store (native server, loopback) and the file driver (a
// directory on local disk). MB/s from b.SetBytes; B/op and allocs/op are
// what one blob costs the Go heap, whatever its size when a store streams.
func BenchmarkBlobStore(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) ports.BlobStore
	}{
		{"postgres", func(b *testing.B) ports.BlobStore {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			db, err := postgres.Open(ctx, pgtest.Native(b), postgres.PoolConfig{})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { db.Close() })
			if err := postgres.Migrate(ctx, db.DB); err != nil {
				b.Fatal(err)
			}
			return postgres.NewBlobStore(db.DB)
		}},
		{"file", func(b *testing.B) ports.BlobStore {
			return open(b, "file://"+b.TempDir())
		}},
	}
	for _, st := range stores {
		b.Run(st.name, func(b *testing.B) {
			s := st.open(b)
			for _, size := range []int{1_000_000, 20_000_000} {
				// Random bytes, as compressed formats (PDF streams, images) are.
				data := make([]byte, size)
				_, _ = rand.NewChaCha8([32]byte{1}).Read(data)
				b.Run(fmt.Sprintf("put/%dMB", size/1_000_000), func(b *testing.B) { benchPut(b, s, data) })
				b.Run(fmt.Sprintf("open/%dMB", size/1_000_000), func(b *testing.B) { benchOpen(b, s, data) })
			}
		})
	}
}

func benchPut(b *testing.B, s ports.BlobStore, data []byte) {
	ctx := context.Background()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		key := fmt.Sprintf("bench/put/%d/%d", len(data), i)
		if _, err := s.PutBlob(ctx, key, bytes.NewReader(data)); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := s.DeleteBlob(ctx, key); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

func benchOpen(b *testing.B, s ports.BlobStore, data []byte) {
	ctx := context.Background()
	key := fmt.Sprintf("bench/open/%d", len(data))
	if _, err := s.PutBlob(ctx, key, bytes.NewReader(data)); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := s.OpenBlob(ctx, key)
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, r)
		if err != nil || n != int64(len(data)) {
			b.Fatalf("read %d bytes: %v", n, err)
		}
		r.Close()
	}
}

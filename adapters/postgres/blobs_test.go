package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/contract"
	"github.com/entityenrich/enrich/test/pgtest"
)

func TestBlobStore(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			db := migrated(t, b.dsn(t))
			newStore := func(*testing.T) ports.BlobStore { return postgres.NewBlobStore(db.DB) }
			contract.RunBlobStore(t, newStore)
			if b.parallel {
				contract.RunBlobStoreConcurrency(t, newStore)
			}
		})
	}
}

// TestBlobStoreChunks: the bytes are stored in chunks of 1 MiB, an empty
// blob as one empty chunk, and a shorter overwrite leaves no tail.
func TestBlobStoreChunks(t *testing.T) {
	is := is.New(t)
	db := migrated(t, pgtest.Native(t))
	s := postgres.NewBlobStore(db.DB)
	ctx := context.Background()
	chunks := func(key string) (n int, sizes []int) {
		rows, err := db.QueryContext(ctx, `SELECT length(data) FROM attachment_blobs WHERE key = ? ORDER BY seq`, key)
		is.NoErr(err)
		defer rows.Close()
		for rows.Next() {
			var l int
			is.NoErr(rows.Scan(&l))
			sizes = append(sizes, l)
		}
		is.NoErr(rows.Err())
		return len(sizes), sizes
	}
	_, err := s.PutBlob(ctx, "k", bytes.NewReader(make([]byte, 2<<20+5)))
	is.NoErr(err)
	n, sizes := chunks("k")
	is.Equal(n, 3)
	is.Equal(sizes, []int{1 << 20, 1 << 20, 5})
	_, err = s.PutBlob(ctx, "k", bytes.NewReader(nil))
	is.NoErr(err)
	_, sizes = chunks("k")
	is.Equal(sizes, []int{0})
}

// TestBlobOutageIsUnavailable: with the database cut off, writes, opens,
// reads under way and deletes fail with ErrUnavailable, promptly.
func TestBlobOutageIsUnavailable(t *testing.T) {
	is := is.New(t)
	proxy, dsn := pgtest.ProxyDSN(t, pgtest.Native(t))
	db := migrated(t, dsn)
	s := postgres.NewBlobStore(db.DB)
	ctx := context.Background()
	_, err := s.PutBlob(ctx, "big", bytes.NewReader(make([]byte, 3<<20)))
	is.NoErr(err)
	r, err := s.OpenBlob(ctx, "big")
	is.NoErr(err)
	defer r.Close()

	proxy.Cut()
	start := time.Now()
	_, err = s.PutBlob(ctx, "k", bytes.NewReader([]byte("bytes")))
	t.Logf("put while cut: %v", err)
	is.True(errors.Is(err, ports.ErrUnavailable))
	_, err = s.OpenBlob(ctx, "big")
	is.True(errors.Is(err, ports.ErrUnavailable))
	_, err = io.ReadAll(r) // the first chunk was read with the open; the next is not there
	t.Logf("read while cut: %v", err)
	is.True(errors.Is(err, ports.ErrUnavailable))
	is.True(errors.Is(s.DeleteBlob(ctx, "big"), ports.ErrUnavailable))
	is.True(time.Since(start) < 10*time.Second) // refused, not hung
}

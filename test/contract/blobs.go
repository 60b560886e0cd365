package contract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/ports"
)

// RunBlobStore checks a BlobStore: bytes come back as written whatever
// their size (around the chunk sizes stores split on too), a write
// replaces, a missing blob is ErrNotFound, deletes are idempotent, and a
// write that fails or is cancelled part way leaves nothing under its key
// (or the previous bytes, whole).
func RunBlobStore(t *testing.T, newStore func(t *testing.T) ports.BlobStore) {
	tests := []struct {
		name string
		run  func(t *testing.T, s ports.BlobStore)
	}{
		{"bytes come back as written", blobRoundTrips},
		{"a write replaces the bytes", blobOverwrite},
		{"a missing blob is not found", func(t *testing.T, s ports.BlobStore) {
			_, err := s.OpenBlob(context.Background(), blobKey())
			is.New(t).True(errors.Is(err, ports.ErrNotFound))
		}},
		{"delete is idempotent", blobDelete},
		{"a cancelled write leaves nothing", blobCancelledPut},
		{"a reader that fails part way leaves nothing", blobFailedReader},
		{"a read that a delete overtakes is whole or fails", blobReadDuringDelete},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore(t)) })
	}
}

// RunBlobStoreConcurrency checks writes in parallel: different keys do not
// mix, and writes racing on one key leave one of them, whole.
func RunBlobStoreConcurrency(t *testing.T, newStore func(t *testing.T) ports.BlobStore) {
	t.Run("writes of different keys in parallel", func(t *testing.T) {
		s, ctx := newStore(t), context.Background()
		keys, want := make([]string, 8), make([][]byte, 8)
		var wg sync.WaitGroup
		errs := make([]error, len(keys))
		for i := range keys {
			keys[i], want[i] = blobKey(), blobBytes(uint64(i), 1<<20+i*4099)
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = s.PutBlob(ctx, keys[i], iotest.HalfReader(bytes.NewReader(want[i])))
			}()
		}
		wg.Wait()
		for i, k := range keys {
			is.New(t).NoErr(errs[i])
			checkBlob(t, s, k, want[i])
		}
	})
	t.Run("writes racing on one key leave one of them whole", func(t *testing.T) {
		is, s, ctx := is.New(t), newStore(t), context.Background()
		key := blobKey()
		versions := [][]byte{blobBytes(10, 3<<20+5), blobBytes(11, 1<<20-3), blobBytes(12, 2<<20), blobBytes(13, 7)}
		var wg sync.WaitGroup
		errs := make([]error, len(versions))
		for i, v := range versions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = s.PutBlob(ctx, key, bytes.NewReader(v))
			}()
		}
		wg.Wait()
		for _, err := range errs {
			is.NoErr(err)
		}
		got := readBlob(t, s, key)
		for _, v := range versions {
			if bytes.Equal(got, v) {
				return
			}
		}
		t.Fatalf("read %d bytes that are none of the versions written", len(got))
	})
}

func blobRoundTrips(t *testing.T, s ports.BlobStore) {
	ctx := context.Background()
	for _, size := range []int{0, 1, 13, 1<<20 - 1, 1 << 20, 1<<20 + 1, 2 << 20, 5_000_000} {
		t.Run(fmt.Sprint(size), func(t *testing.T) {
			is := is.New(t)
			want := blobBytes(uint64(size), size)
			key := blobKey()
			// A reader that hands out a few bytes at a time: stores must not
			// take one Read for the whole.
			n, err := s.PutBlob(ctx, key, iotest.HalfReader(bytes.NewReader(want)))
			is.NoErr(err)
			is.Equal(n, int64(size))
			checkBlob(t, s, key, want)
			if size <= 1<<20+1 {
				r, err := s.OpenBlob(ctx, key)
				is.NoErr(err)
				is.NoErr(iotest.TestReader(r, want)) // reads of every size behave
				is.NoErr(r.Close())
			}
		})
	}
}

func blobOverwrite(t *testing.T, s ports.BlobStore) {
	is, ctx := is.New(t), context.Background()
	key := blobKey()
	for i, size := range []int{3<<20 + 17, 11, 1<<20 + 5, 0, 2 << 20} {
		want := blobBytes(uint64(100+i), size)
		n, err := s.PutBlob(ctx, key, bytes.NewReader(want))
		is.NoErr(err)
		is.Equal(n, int64(size))
		checkBlob(t, s, key, want)
	}
}

func blobDelete(t *testing.T, s ports.BlobStore) {
	is, ctx := is.New(t), context.Background()
	key := blobKey()
	is.NoErr(s.DeleteBlob(ctx, key)) // never written
	_, err := s.PutBlob(ctx, key, bytes.NewReader(blobBytes(1, 2<<20+1)))
	is.NoErr(err)
	other := blobKey()
	_, err = s.PutBlob(ctx, other, bytes.NewReader([]byte("kept")))
	is.NoErr(err)
	is.NoErr(s.DeleteBlob(ctx, key))
	_, err = s.OpenBlob(ctx, key)
	is.True(errors.Is(err, ports.ErrNotFound))
	is.NoErr(s.DeleteBlob(ctx, key)) // again
	checkBlob(t, s, other, []byte("kept"))
}

func blobCancelledPut(t *testing.T, s ports.BlobStore) {
	is := is.New(t)
	t.Run("part way", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		key := blobKey()
		data := blobBytes(2, 6<<20)
		// The context is cancelled once 2 MiB have been read; the reader
		// goes on to the end, as an upload still arriving would.
		r := &hookReader{r: bytes.NewReader(data), at: 2 << 20, hook: func() error { cancel(); return nil }}
		_, err := s.PutBlob(ctx, key, r)
		is.True(err != nil)
		_, err = s.OpenBlob(context.Background(), key)
		is.True(errors.Is(err, ports.ErrNotFound))
	})
	t.Run("before it starts", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		key := blobKey()
		_, err := s.PutBlob(ctx, key, bytes.NewReader([]byte("never")))
		is.True(err != nil)
		_, err = s.OpenBlob(context.Background(), key)
		is.True(errors.Is(err, ports.ErrNotFound))
	})
}

func blobFailedReader(t *testing.T, s ports.BlobStore) {
	ctx := context.Background()
	for _, cause := range []error{errBoom, io.ErrUnexpectedEOF} {
		t.Run(cause.Error(), func(t *testing.T) {
			is := is.New(t)
			key := blobKey()
			failing := func() io.Reader {
				return &hookReader{r: bytes.NewReader(blobBytes(3, 4<<20)), at: 3 << 20 / 2, hook: func() error { return cause }}
			}
			_, err := s.PutBlob(ctx, key, failing())
			is.True(errors.Is(err, cause)) // the reader's error, as it is
			_, err = s.OpenBlob(ctx, key)
			is.True(errors.Is(err, ports.ErrNotFound))

			// Over bytes already there, a failed write keeps them whole.
			old := blobBytes(4, 1<<20+9)
			_, err = s.PutBlob(ctx, key, bytes.NewReader(old))
			is.NoErr(err)
			_, err = s.PutBlob(ctx, key, failing())
			is.True(errors.Is(err, cause))
			checkBlob(t, s, key, old)
		})
	}
}

func blobReadDuringDelete(t *testing.T, s ports.BlobStore) {
	is, ctx := is.New(t), context.Background()
	key := blobKey()
	want := blobBytes(5, 3<<20+1)
	_, err := s.PutBlob(ctx, key, bytes.NewReader(want))
	is.NoErr(err)
	r, err := s.OpenBlob(ctx, key)
	is.NoErr(err)
	defer r.Close()
	head := make([]byte, 1000)
	_, err = io.ReadFull(r, head)
	is.NoErr(err)
	is.NoErr(s.DeleteBlob(ctx, key))
	rest, err := io.ReadAll(r)
	if err != nil {
		t.Logf("read overtaken by a delete: %v", err)
		return
	}
	is.True(bytes.Equal(append(head, rest...), want)) // not cut short, not mixed
}

// hookReader reads r; once at bytes have been read, hook runs, and its
// error, if any, is what every later Read returns.
type hookReader struct {
	r    io.Reader
	at   int
	hook func() error
	n    int
	err  error
	done bool
}

func (h *hookReader) Read(p []byte) (int, error) {
	if !h.done && h.n >= h.at {
		h.done = true
		h.err = h.hook()
	}
	if h.err != nil {
		return 0, h.err
	}
	if !h.done && h.n+len(p) > h.at {
		p = p[:h.at-h.n]
	}
	n, err := h.r.Read(p)
	h.n += n
	return n, err
}

func blobKey() string { return "attachments/" + newID("org") + "/" + newID("sha") }

// blobBytes returns n pseudo-random bytes from seed (incompressible, and
// different for every seed).
func blobBytes(seed uint64, n int) []byte {
	var s [32]byte
	s[0], s[1] = byte(seed), byte(seed>>8)
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(s).Read(b)
	return b
}

func readBlob(t *testing.T, s ports.BlobStore, key string) []byte {
	t.Helper()
	r, err := s.OpenBlob(context.Background(), key)
	if err != nil {
		t.Fatalf("open %s: %v", key, err)
	}
	defer r.Close()
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("read %s: %v", key, err)
	}
	return got
}

// checkBlob asserts that the bytes under key are want (without printing
// megabytes when they are not).
func checkBlob(t *testing.T, s ports.BlobStore, key string, want []byte) {
	t.Helper()
	got := readBlob(t, s, key)
	if !bytes.Equal(got, want) {
		i := 0
		for i < min(len(got), len(want)) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: read %d bytes, want %d; they differ from byte %d", key, len(got), len(want), i)
	}
}

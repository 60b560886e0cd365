package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"

	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/ports"
)

// blobChunk is the size of one attachment_blobs row: what a write or a
// read holds in memory at a time.
const blobChunk = 1 << 20

var _ ports.BlobStore = (*BlobStore)(nil)

// chunkBufs are writes' chunk buffers, reused from one write to the next.
var chunkBufs = sync.Pool{New: func() any { return new([blobChunk]byte) }}

// BlobStore keeps attachments' bytes in attachment_blobs, in chunks. It
// is the default on PostgreSQL: every replica reads what any wrote, with
// nothing more to run.
//
// The chunks go through database/sql directly, as binary parameters,
// rather than formatted by Bun into the statement's text, which would
// spell each chunk out in hex.
type BlobStore struct{ db *sql.DB }

// NewBlobStore returns the store on db.
func NewBlobStore(db *bun.DB) *BlobStore { return &BlobStore{db: db.DB} }

// A write upserts its chunks in order, then deletes the chunks of any
// other generation (an older, longer version's tail). Two writes of one
// key meet on its first chunk: the second waits for the first to commit,
// then replaces it whole.
const (
	putChunkSQL = `INSERT INTO attachment_blobs (key, seq, gen, data) VALUES ($1, $2, $3, $4)
		ON CONFLICT (key, seq) DO UPDATE SET gen = EXCLUDED.gen, data = EXCLUDED.data`
	putTailSQL  = `DELETE FROM attachment_blobs WHERE key = $1 AND gen <> $2`
	openBlobSQL = `SELECT gen, data, (SELECT count(*) FROM attachment_blobs WHERE key = $1)
		FROM attachment_blobs WHERE key = $1 AND seq = 0`
	readChunkSQL  = `SELECT data FROM attachment_blobs WHERE key = $1 AND seq = $2 AND gen = $3`
	deleteBlobSQL = `DELETE FROM attachment_blobs WHERE key = $1`
)

// PutBlob implements ports.BlobStore: r is read a chunk at a time, every
// chunk in one transaction, so a write that fails (r's error, the
// caller's cancellation, an outage) leaves the previous bytes, or none.
func (s *BlobStore) PutBlob(ctx context.Context, key string, r io.Reader) (int64, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fail(err, "put blob")
	}
	defer func() { _ = tx.Rollback() }()
	n, err := putChunks(ctx, tx, key, r)
	if err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, fail(err, "put blob")
	}
	return n, nil
}

func putChunks(ctx context.Context, tx *sql.Tx, key string, r io.Reader) (int64, error) {
	gen := rand.Int64()
	b := chunkBufs.Get().(*[blobChunk]byte)
	defer chunkBufs.Put(b)
	buf := b[:]
	var total int64
	for seq := 0; ; seq++ {
		n, eof, err := fill(r, buf)
		if err != nil {
			// The caller's reader failed: its error, not the database's.
			return 0, fmt.Errorf("postgres: put blob %s: %w", key, err)
		}
		// An empty blob is one empty chunk, so that it exists.
		if n > 0 || seq == 0 {
			if _, err := tx.ExecContext(ctx, putChunkSQL, key, seq, gen, buf[:n]); err != nil {
				return 0, fail(err, "put blob")
			}
			total += int64(n)
		}
		if eof {
			break
		}
	}
	if _, err := tx.ExecContext(ctx, putTailSQL, key, gen); err != nil {
		return 0, fail(err, "put blob")
	}
	return total, nil
}

// fill reads r into buf until buf is full or r ends (eof). Unlike
// io.ReadFull, it tells r's own io.ErrUnexpectedEOF (a truncated upload)
// from an end.
func fill(r io.Reader, buf []byte) (n int, eof bool, err error) {
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if errors.Is(err, io.EOF) {
			return n, true, nil
		}
		if err != nil {
			return n, false, err
		}
	}
	return n, false, nil
}

// OpenBlob implements ports.BlobStore. The first chunk comes with the
// count of chunks, in one round trip; the reader fetches the others one at
// a time, with ctx, as they are read.
func (s *BlobStore) OpenBlob(ctx context.Context, key string) (io.ReadCloser, error) {
	r := &blobReader{db: s.db, ctx: ctx, key: key}
	err := s.db.QueryRowContext(ctx, openBlobSQL, key).Scan(&r.gen, &r.buf, &r.chunks)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("postgres: blob %s: %w", key, ports.ErrNotFound)
	}
	if err != nil {
		return nil, fail(err, "open blob")
	}
	r.next = 1
	return r, nil
}

// DeleteBlob implements ports.BlobStore.
func (s *BlobStore) DeleteBlob(ctx context.Context, key string) error {
	if _, err := s.db.ExecContext(ctx, deleteBlobSQL, key); err != nil {
		return fail(err, "delete blob")
	}
	return nil
}

// blobReader reads one generation of a blob's chunks, holding one at a
// time. A chunk of its generation that has gone (the blob was deleted or
// replaced while being read) fails the read rather than ending it short or
// mixing in another version's bytes.
type blobReader struct {
	db     *sql.DB
	ctx    context.Context
	key    string
	gen    int64
	chunks int
	next   int
	buf    []byte
	off    int
}

func (r *blobReader) Read(p []byte) (int, error) {
	for r.off == len(r.buf) {
		if r.next >= r.chunks {
			return 0, io.EOF
		}
		if err := r.fetch(); err != nil {
			return 0, err
		}
	}
	n := copy(p, r.buf[r.off:])
	r.off += n
	return n, nil
}

// fetch replaces the buffer's bytes with the next chunk's, reusing it.
func (r *blobReader) fetch() error {
	rows, err := r.db.QueryContext(r.ctx, readChunkSQL, r.key, r.next, r.gen)
	if err != nil {
		return fail(err, "read blob")
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return fail(err, "read blob")
		}
		return fmt.Errorf("postgres: blob %s changed while being read: %w", r.key, ports.ErrNotFound)
	}
	var raw sql.RawBytes
	if err := rows.Scan(&raw); err != nil {
		return fail(err, "read blob")
	}
	r.buf, r.off = append(r.buf[:0], raw...), 0
	r.next++
	return nil
}

func (r *blobReader) Close() error {
	r.buf, r.off, r.next = nil, 0, r.chunks
	return nil
}

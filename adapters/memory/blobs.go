package memory

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"

	"github.com/entityenrich/enrich/ports"
)

// BlobStore is ports.BlobStore in a map.
type BlobStore struct {
	mu    sync.RWMutex
	blobs map[string][]byte
}

var _ ports.BlobStore = (*BlobStore)(nil)

// NewBlobStore returns an empty store.
func NewBlobStore() *BlobStore { return &BlobStore{blobs: map[string][]byte{}} }

// PutBlob implements ports.BlobStore; the bytes become readable only once
// all of them are read.
func (s *BlobStore) PutBlob(ctx context.Context, key string, r io.Reader) (int64, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return 0, fmt.Errorf("memory blob %s: %w", key, err)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	s.blobs[key] = data
	s.mu.Unlock()
	return int64(len(data)), nil
}

// OpenBlob implements ports.BlobStore.
func (s *BlobStore) OpenBlob(_ context.Context, key string) (io.ReadCloser, error) {
	s.mu.RLock()
	data, ok := s.blobs[key]
	s.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("memory blob %s: %w", key, ports.ErrNotFound)
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}

// DeleteBlob implements ports.BlobStore.
func (s *BlobStore) DeleteBlob(_ context.Context, key string) error {
	s.mu.Lock()
	delete(s.blobs, key)
	s.mu.Unlock()
	return nil
}

package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/entityenrich/enrich/domain/attachment"
	"github.com/entityenrich/enrich/domain/page"
	"github.com/entityenrich/enrich/ports"
)

// AttachmentStore is ports.AttachmentStore in maps.
type AttachmentStore struct {
	mu       sync.RWMutex
	byID     map[string]*attachment.Attachment
	byHash   map[[2]string]string // (org, sha256) → id
	policies map[string]attachment.Policy
}

var _ ports.AttachmentStore = (*AttachmentStore)(nil)

// NewAttachmentStore returns an empty store.
func NewAttachmentStore() *AttachmentStore {
	return &AttachmentStore{byID: map[string]*attachment.Attachment{}, byHash: map[[2]string]string{},
		policies: map[string]attachment.Policy{}}
}

func cloneAttachment(a *attachment.Attachment) *attachment.Attachment {
	out := *a
	return &out
}

// SaveAttachment implements ports.AttachmentStore.
func (s *AttachmentStore) SaveAttachment(_ context.Context, a *attachment.Attachment) (*attachment.Attachment, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id, ok := s.byHash[[2]string{a.OrgID, a.SHA256}]; ok {
		return cloneAttachment(s.byID[id]), true, nil
	}
	if _, ok := s.byID[a.ID]; ok {
		return nil, false, fmt.Errorf("memory: attachment %s: %w", a.ID, ports.ErrConflict)
	}
	c := cloneAttachment(a)
	c.CreatedAt = ts(c.CreatedAt)
	s.byID[a.ID] = c
	s.byHash[[2]string{a.OrgID, a.SHA256}] = a.ID
	return cloneAttachment(c), false, nil
}

// GetAttachment implements ports.AttachmentStore.
func (s *AttachmentStore) GetAttachment(_ context.Context, orgID, id string) (*attachment.Attachment, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a, ok := s.byID[id]
	if !ok || a.OrgID != orgID {
		return nil, fmt.Errorf("memory: attachment %s: %w", id, ports.ErrNotFound)
	}
	return cloneAttachment(a), nil
}

// GetAttachments implements ports.AttachmentStore.
func (s *AttachmentStore) GetAttachments(_ context.Context, orgID string, ids []string) ([]*attachment.Attachment, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*attachment.Attachment, 0, len(ids))
	for _, id := range ids {
		if a, ok := s.byID[id]; ok && a.OrgID == orgID {
			out = append(out, cloneAttachment(a))
		}
	}
	return out, nil
}

// ListAttachments implements ports.AttachmentStore.
func (s *AttachmentStore) ListAttachments(_ context.Context, orgID string, p page.Request) (page.Result[*attachment.Attachment], error) {
	s.mu.RLock()
	var all []*attachment.Attachment
	for _, a := range s.byID {
		if a.OrgID == orgID {
			all = append(all, cloneAttachment(a))
		}
	}
	s.mu.RUnlock()
	slices.SortFunc(all, func(a, b *attachment.Attachment) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(b.ID, a.ID)
	})
	res := page.Result[*attachment.Attachment]{Total: len(all)}
	items := all
	if p.After != nil {
		items = items[:0:0]
		for _, a := range all {
			if p.After.Before(a.CreatedAt, a.ID) {
				items = append(items, a)
			}
		}
	} else if p.Offset > 0 {
		items = all[min(p.Offset, len(all)):]
	}
	size := p.Size
	if size <= 0 {
		size = page.DefaultSize
	}
	if len(items) > size {
		items = items[:size]
		l := items[size-1]
		res.Next = page.Cursor{CreatedAt: l.CreatedAt, ID: l.ID}.Encode()
	}
	res.Items = items
	return res, nil
}

// DeleteAttachment implements ports.AttachmentStore.
func (s *AttachmentStore) DeleteAttachment(_ context.Context, orgID, id string) (*attachment.Attachment, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.byID[id]
	if !ok || a.OrgID != orgID {
		return nil, fmt.Errorf("memory: attachment %s: %w", id, ports.ErrNotFound)
	}
	delete(s.byID, id)
	delete(s.byHash, [2]string{a.OrgID, a.SHA256})
	return a, nil
}

// AttachmentPolicies implements ports.AttachmentStore.
func (s *AttachmentStore) AttachmentPolicies(context.Context) ([]attachment.Policy, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]attachment.Policy, 0, len(s.policies))
	for _, p := range s.policies {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b attachment.Policy) int { return cmp.Compare(a.MediaType, b.MediaType) })
	return out, nil
}

// SaveAttachmentPolicy implements ports.AttachmentStore.
func (s *AttachmentStore) SaveAttachmentPolicy(_ context.Context, p attachment.Policy) error {
	s.mu.Lock()
	s.policies[p.MediaType] = p
	s.mu.Unlock()
	return nil
}

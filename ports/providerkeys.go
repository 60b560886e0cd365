package ports

import (
	"context"
	"fmt"

	"github.com/entityenrich/enrich/domain/rotation"
)

// ProviderKeyStore keeps LLM provider keys: organizations' own (OrgID set)
// and global ones (OrgID empty, system administrators'). Secrets are stored
// sealed (see Cipher); the store never sees a plaintext. An orgID argument
// of "" addresses the global keys; another organization's key is
// ErrNotFound.
type ProviderKeyStore interface {
	// CreateProviderKey stores k; an existing id is ErrConflict.
	CreateProviderKey(ctx context.Context, k *rotation.Key) error
	GetProviderKey(ctx context.Context, orgID, id string) (*rotation.Key, error)
	// ListProviderKeys returns the keys of orgID ("" for the global keys),
	// by provider, then oldest first.
	ListProviderKeys(ctx context.Context, orgID string) ([]*rotation.Key, error)
	// UpdateProviderKey loads the key, calls fn, and stores the result
	// atomically; fn's error is returned as is and nothing is written.
	UpdateProviderKey(ctx context.Context, orgID, id string, fn func(*rotation.Key) error) (*rotation.Key, error)
	// DeleteProviderKey removes the key. Deleting a key that does not exist
	// (or is another organization's) is not an error: deleting is
	// idempotent and says nothing about other tenants.
	DeleteProviderKey(ctx context.Context, orgID, id string) error
	// PickProviderKey chooses a key for orgID by rotation.Ranked among the
	// organization's and the global keys of req.Provider, and records its
	// use (LastUsedAt = req.Now, Uses + 1), atomically: concurrent picks
	// never take the same idle key while another is free. With no usable
	// key it returns rotation's *NoUsableKeyError.
	PickProviderKey(ctx context.Context, orgID string, req rotation.Request) (rotation.Pick, error)
}

// Cipher seals secrets at rest (provider keys) and opens them at call time.
type Cipher interface {
	Seal(plain []byte) ([]byte, error)
	Open(sealed []byte) ([]byte, error)
}

// Secret is a plaintext credential on its way to a provider. It formats as
// "[redacted]" so that a log line, an error or a panic that prints it does
// not leak it.
type Secret string

// String hides the secret.
func (Secret) String() string { return "[redacted]" }

// GoString hides the secret from %#v.
func (Secret) GoString() string { return `"[redacted]"` }

// Format hides the secret from every verb.
func (s Secret) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(s.String())) }

// Reveal returns the plaintext, for the provider client only.
func (s Secret) Reveal() string { return string(s) }

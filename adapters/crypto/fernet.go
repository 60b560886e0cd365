package crypto

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fernet/fernet-go"

	"github.com/entityenrich/enrich/ports"
)

var _ ports.Cipher = (*Fernet)(nil)

// Fernet seals secrets at rest (provider keys) with Fernet: AES-128-CBC and
// HMAC-SHA256, as SPEC.md asks. The first key seals; any key opens, so that
// the encryption key itself can be rotated: add a new key in front, re-seal
// (enrich admin reencrypt), then drop the old one.
type Fernet struct {
	keys []*fernet.Key
}

// ErrSealed means a sealed secret opens with none of the configured keys
// (a key was dropped too early, or the data was altered).
var ErrSealed = errors.New("sealed secret does not open with any configured encryption key")

// NewFernet parses keys (base64url 32-byte Fernet keys, the first
// encrypting). Empty entries are ignored; none at all is an error.
func NewFernet(keys []string) (*Fernet, error) {
	var ks []string
	for _, k := range keys {
		if k = strings.TrimSpace(k); k != "" {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		return nil, errors.New("crypto: no encryption key")
	}
	parsed := make([]*fernet.Key, len(ks))
	for i, k := range ks {
		fk, err := fernet.DecodeKey(k)
		if err != nil {
			// The message names the position, never the key.
			return nil, fmt.Errorf("crypto: encryption key %d of %d is not a Fernet key (32 bytes, base64url): %w", i+1, len(ks), err)
		}
		parsed[i] = fk
	}
	return &Fernet{keys: parsed}, nil
}

// GenerateFernetKey returns a new random Fernet key, encoded.
func GenerateFernetKey() (string, error) {
	var k fernet.Key
	if err := k.Generate(); err != nil {
		return "", err
	}
	return k.Encode(), nil
}

// Seal encrypts plain with the first key.
func (f *Fernet) Seal(plain []byte) ([]byte, error) {
	tok, err := fernet.EncryptAndSign(plain, f.keys[0])
	if err != nil {
		return nil, fmt.Errorf("crypto: seal: %w", err)
	}
	return tok, nil
}

// Open decrypts a sealed secret with whichever key sealed it. Tokens do not
// expire: a provider key is valid until replaced.
func (f *Fernet) Open(sealed []byte) ([]byte, error) {
	msg := fernet.VerifyAndDecrypt(sealed, 0, f.keys)
	if msg == nil {
		return nil, ErrSealed
	}
	return msg, nil
}

// Current reports whether sealed was sealed with the first key (so that a
// re-encryption can skip it).
func (f *Fernet) Current(sealed []byte) bool {
	return fernet.VerifyAndDecrypt(sealed, 0, f.keys[:1]) != nil
}

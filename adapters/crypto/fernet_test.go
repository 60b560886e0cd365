package crypto_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/crypto"
)

func TestFernet(t *testing.T) {
	is := is.New(t)
	k1, err := crypto.GenerateFernetKey()
	is.NoErr(err)
	k2, err := crypto.GenerateFernetKey()
	is.NoErr(err)
	old, err := crypto.NewFernet([]string{k1})
	is.NoErr(err)
	secret := []byte("sk-proj-very-secret-1234")
	sealed, err := old.Seal(secret)
	is.NoErr(err)
	is.True(!bytes.Contains(sealed, secret))
	is.True(!bytes.Contains(sealed, []byte("1234")))
	got, err := old.Open(sealed)
	is.NoErr(err)
	is.Equal(string(got), string(secret))
	is.True(old.Current(sealed))

	// A new key in front: old secrets still open, new ones use the new key.
	rotated, err := crypto.NewFernet([]string{k2, " ", k1})
	is.NoErr(err)
	got, err = rotated.Open(sealed)
	is.NoErr(err)
	is.Equal(string(got), string(secret))
	is.True(!rotated.Current(sealed))
	fresh, err := rotated.Seal(secret)
	is.NoErr(err)
	is.True(rotated.Current(fresh))
	_, err = old.Open(fresh)
	is.True(errors.Is(err, crypto.ErrSealed))

	// Altered data does not open.
	bad := bytes.Clone(sealed)
	bad[len(bad)-5] ^= 1
	_, err = old.Open(bad)
	is.True(errors.Is(err, crypto.ErrSealed))
	_, err = old.Open(nil)
	is.True(errors.Is(err, crypto.ErrSealed))
}

func TestNewFernetRefuses(t *testing.T) {
	tests := []struct {
		name string
		keys []string
	}{
		{"none", nil},
		{"blank", []string{" ", ""}},
		{"not base64", []string{"not a key at all"}},
		{"too short", []string{"c2hvcnQ="}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := crypto.NewFernet(tc.keys)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, k := range tc.keys {
				if strings.TrimSpace(k) != "" && strings.Contains(err.Error(), k) {
					t.Errorf("the error shows the key: %v", err)
				}
			}
		})
	}
}

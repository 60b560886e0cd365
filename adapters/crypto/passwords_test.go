package crypto

import (
	"errors"
	"strings"
	"testing"

	"github.com/matryer/is"
)

func TestPasswordsRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		params Params
	}{
		{"fast", FastParams},
		{"two lanes", Params{Memory: 256, Time: 2, Threads: 2, SaltLen: 16, KeyLen: 32}},
		{"zero value filled", Params{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			pw := NewPasswords(tt.params)
			h, err := pw.Hash("correct horse battery staple")
			is.NoErr(err)
			is.True(strings.HasPrefix(h, "$argon2id$v=19$m="))
			ok, err := pw.Verify(h, "correct horse battery staple")
			is.NoErr(err)
			is.True(ok)
			ok, err = pw.Verify(h, "correct horse battery stapler")
			is.NoErr(err)
			is.True(!ok)
			h2, err := pw.Hash("correct horse battery staple")
			is.NoErr(err)
			is.True(h != h2) // fresh salt per hash
			is.True(!pw.NeedsRehash(h))
		})
	}
}

func TestDefaultParamsString(t *testing.T) {
	is := is.New(t)
	h, err := NewPasswords(DefaultParams).Hash("pw")
	is.NoErr(err)
	is.True(strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$"))
}

func TestVerifyAcceptsOtherParams(t *testing.T) {
	is := is.New(t)
	old, err := NewPasswords(FastParams).Hash("pw")
	is.NoErr(err)
	pw := NewPasswords(Params{Memory: 128, Time: 2, Threads: 1})
	ok, err := pw.Verify(old, "pw")
	is.NoErr(err)
	is.True(ok)
	is.True(pw.NeedsRehash(old))
}

func TestVerifyKnownVector(t *testing.T) {
	is := is.New(t)
	// From the reference implementation's test vectors (phc-winner-argon2 src/test.c).
	h := "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc"
	ok, err := NewPasswords(FastParams).Verify(h, "password")
	is.NoErr(err)
	is.True(ok)
}

func TestVerifyMalformed(t *testing.T) {
	valid, err := NewPasswords(FastParams).Hash("pw")
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(valid, "$")
	salt, key := parts[4], parts[5]
	tests := []struct{ name, hash string }{
		{"empty", ""},
		{"bcrypt", "$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy"},
		{"argon2i", "$argon2i$v=19$m=64,t=1,p=1$" + salt + "$" + key},
		{"old version", "$argon2id$v=16$m=64,t=1,p=1$" + salt + "$" + key},
		{"missing part", "$argon2id$v=19$m=64,t=1,p=1$" + salt},
		{"extra part", valid + "$x"},
		{"params order", "$argon2id$v=19$t=1,m=64,p=1$" + salt + "$" + key},
		{"zero threads", "$argon2id$v=19$m=64,t=1,p=0$" + salt + "$" + key},
		{"zero time", "$argon2id$v=19$m=64,t=0,p=1$" + salt + "$" + key},
		{"huge memory", "$argon2id$v=19$m=4294967295,t=1,p=1$" + salt + "$" + key},
		{"huge time", "$argon2id$v=19$m=64,t=100000,p=1$" + salt + "$" + key},
		{"too many threads", "$argon2id$v=19$m=4096,t=1,p=255$" + salt + "$" + key},
		{"memory below lanes", "$argon2id$v=19$m=8,t=1,p=2$" + salt + "$" + key},
		{"negative", "$argon2id$v=19$m=-64,t=1,p=1$" + salt + "$" + key},
		{"leading zero", "$argon2id$v=19$m=064,t=1,p=1$" + salt + "$" + key},
		{"bad base64 salt", "$argon2id$v=19$m=64,t=1,p=1$!!!!$" + key},
		{"short salt", "$argon2id$v=19$m=64,t=1,p=1$c2FsdA$" + key},
		{"padded key", "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$" + key + "="},
		{"short key", "$argon2id$v=19$m=64,t=1,p=1$" + salt + "$c2hvcnQ"},
	}
	pw := NewPasswords(FastParams)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			ok, err := pw.Verify(tt.hash, "pw")
			is.True(!ok)
			is.True(errors.Is(err, ErrMalformedHash))
			is.True(pw.NeedsRehash(tt.hash))
		})
	}
}

func FuzzVerify(f *testing.F) {
	pw := NewPasswords(FastParams)
	valid, err := pw.Hash("pw")
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{
		valid, "", "$", "$$$$$", "$argon2id$v=19$m=64,t=1,p=1$$",
		"$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
		"$argon2id$v=19$m=4294967295,t=4294967295,p=255$c29tZXNhbHQ$CTFhFdXPJO1aFaMaO6Mm5c8y7cJHAph8ArZWb2GRPPc",
	} {
		f.Add(s, "pw")
	}
	// Lower the memory ceiling so that the fuzzer explores parsing rather
	// than spending its time in 256 MiB hashes.
	pw.maxMemory = 1024
	f.Fuzz(func(t *testing.T, hash, password string) {
		ok, err := pw.Verify(hash, password)
		if err != nil && ok {
			t.Fatal("ok with an error")
		}
		if err != nil && !errors.Is(err, ErrMalformedHash) {
			t.Fatalf("unexpected error %v", err)
		}
	})
}

package crypto

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/crypto/argon2"

	"github.com/entityenrich/enrich/ports"
)

// Params are argon2id's cost parameters.
type Params struct {
	// Memory is in KiB.
	Memory  uint32
	Time    uint32
	Threads uint8
	SaltLen uint32
	KeyLen  uint32
}

// DefaultParams are OWASP's first argon2id choice (m=19 MiB, t=2, p=1).
// One lane and modest memory suit a login endpoint on two cores: logins
// arriving together cost 19 MiB each instead of 64, and with one lane a
// hash never takes both cores from the request handlers.
var DefaultParams = Params{Memory: 19 * 1024, Time: 2, Threads: 1, SaltLen: 16, KeyLen: 32}

// FastParams make hashing nearly free. They are for tests only: a hash made
// with them falls to a brute-force search.
var FastParams = Params{Memory: 64, Time: 1, Threads: 1, SaltLen: 16, KeyLen: 32}

// Limits on the parameters read from a stored hash. A hash string is data:
// a corrupted or planted one must not make Verify allocate gigabytes.
const (
	maxMemory  = 256 * 1024
	maxTime    = 16
	maxThreads = 16
	minSalt    = 8
	maxSalt    = 64
	minKey     = 16
	maxKey     = 128
)

// ErrMalformedHash is returned by Verify for a string that is not an
// argon2id PHC hash within this package's limits.
var ErrMalformedHash = errors.New("malformed password hash")

// Passwords hashes and checks passwords with argon2id.
type Passwords struct {
	params Params
	// sem bounds the hashes computed at once to the cores: more would not
	// finish sooner but would each hold Params.Memory.
	sem       chan struct{}
	maxMemory uint32
}

var _ ports.Passwords = (*Passwords)(nil)

// NewPasswords returns a hasher that makes new hashes with p. Verify accepts
// hashes made with other parameters.
func NewPasswords(p Params) *Passwords {
	if p.Threads == 0 {
		p.Threads = 1
	}
	if p.Time == 0 {
		p.Time = 1
	}
	if p.Memory < 8*uint32(p.Threads) {
		p.Memory = 8 * uint32(p.Threads)
	}
	if p.SaltLen < minSalt {
		p.SaltLen = 16
	}
	if p.KeyLen < minKey {
		p.KeyLen = 32
	}
	return &Passwords{params: p, sem: make(chan struct{}, runtime.GOMAXPROCS(0)), maxMemory: max(maxMemory, p.Memory)}
}

var b64 = base64.RawStdEncoding

// Hash returns the PHC string of password with a fresh random salt.
func (pw *Passwords) Hash(password string) (string, error) {
	p := pw.params
	salt := make([]byte, p.SaltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("crypto: salt: %w", err)
	}
	key := pw.key(password, salt, p)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s",
		argon2.Version, p.Memory, p.Time, p.Threads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// Verify reports whether password matches hash. A hash that cannot be read
// is an error (ErrMalformedHash), not a mismatch, so that a corrupted row
// shows up in the logs instead of as a user who cannot sign in.
func (pw *Passwords) Verify(hash, password string) (bool, error) {
	p, salt, want, err := pw.parse(hash)
	if err != nil {
		return false, err
	}
	got := pw.key(password, salt, p)
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// NeedsRehash reports whether hash was made with other parameters than the
// current ones, so that a caller can store a new hash after a successful
// login.
func (pw *Passwords) NeedsRehash(hash string) bool {
	p, salt, key, err := pw.parse(hash)
	if err != nil {
		return true
	}
	c := pw.params
	return p.Memory != c.Memory || p.Time != c.Time || p.Threads != c.Threads ||
		uint32(len(salt)) != c.SaltLen || uint32(len(key)) != c.KeyLen
}

func (pw *Passwords) key(password string, salt []byte, p Params) []byte {
	pw.sem <- struct{}{}
	defer func() { <-pw.sem }()
	return argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, p.KeyLen)
}

func (pw *Passwords) parse(hash string) (Params, []byte, []byte, error) {
	bad := func(why string) (Params, []byte, []byte, error) {
		return Params{}, nil, nil, fmt.Errorf("crypto: %w: %s", ErrMalformedHash, why)
	}
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[0] != "" {
		return bad("want $argon2id$v=19$m=..,t=..,p=..$salt$hash")
	}
	if parts[1] != "argon2id" {
		return bad("algorithm is not argon2id")
	}
	if parts[2] != "v="+strconv.Itoa(argon2.Version) {
		return bad("unsupported version")
	}
	var p Params
	fields := strings.Split(parts[3], ",")
	if len(fields) != 3 {
		return bad("want parameters m, t and p")
	}
	for i, name := range []string{"m", "t", "p"} {
		k, v, ok := strings.Cut(fields[i], "=")
		if !ok || k != name || v == "" || (len(v) > 1 && v[0] == '0') {
			return bad("want parameters m, t and p")
		}
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			return bad("parameter " + name + " is not a number")
		}
		switch name {
		case "m":
			p.Memory = uint32(n)
		case "t":
			p.Time = uint32(n)
		case "p":
			if n > 255 {
				return bad("too many threads")
			}
			p.Threads = uint8(n)
		}
	}
	switch {
	case p.Threads < 1 || p.Threads > maxThreads:
		return bad("threads out of range")
	case p.Time < 1 || p.Time > maxTime:
		return bad("time out of range")
	case p.Memory < 8*uint32(p.Threads) || p.Memory > pw.maxMemory:
		return bad("memory out of range")
	}
	salt, err := b64.Strict().DecodeString(parts[4])
	if err != nil || len(salt) < minSalt || len(salt) > maxSalt {
		return bad("bad salt")
	}
	key, err := b64.Strict().DecodeString(parts[5])
	if err != nil || len(key) < minKey || len(key) > maxKey {
		return bad("bad key")
	}
	p.SaltLen, p.KeyLen = uint32(len(salt)), uint32(len(key))
	return p, salt, key, nil
}

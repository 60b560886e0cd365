// Package system provides the real clock and id generator.
package system

import (
	"crypto/rand"
	"encoding/base32"
	"encoding/binary"
	"strings"
	"time"

	"github.com/entityenrich/enrich/ports"
)

// Clock is the wall clock in UTC, truncated to microseconds so that values
// survive a round trip through PostgreSQL unchanged.
type Clock struct{}

var _ ports.Clock = Clock{}

// Now returns the current UTC time.
func (Clock) Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// IDs makes time-ordered random ids: 48 bits of milliseconds and 80 random
// bits, in lower-case base32 (26 characters), so ids sort by creation time.
type IDs struct{}

var _ ports.IDs = IDs{}

var enc = base32.NewEncoding("0123456789abcdefghjkmnpqrstvwxyz").WithPadding(base32.NoPadding)

// NewID returns a fresh id.
func (IDs) NewID() string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixMilli())<<16)
	if _, err := rand.Read(b[6:]); err != nil {
		panic("system: crypto/rand failed: " + err.Error())
	}
	return strings.ToLower(enc.EncodeToString(b[:]))
}

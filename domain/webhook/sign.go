package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Header names of a delivery.
const (
	// SignatureHeader carries "t=<unix seconds>,v1=<hex HMAC-SHA256>".
	SignatureHeader = "X-EE-Signature"
	// EventIDHeader carries the event's id, the same on every retry, so a
	// receiver that got it once drops the repeats.
	EventIDHeader = "X-EE-Event-Id"
	// EventHeader names the event.
	EventHeader = "X-EE-Event"
)

// DefaultTolerance is how far a signature's time may be from the
// receiver's clock by default (a replayed delivery older than this fails).
const DefaultTolerance = 5 * time.Minute

// Errors of Verify.
var (
	ErrNoSignature  = errors.New("webhook: no valid signature header")
	ErrBadSignature = errors.New("webhook: signature does not match")
	ErrStale        = errors.New("webhook: signature time outside the tolerance")
)

// Sign returns the X-EE-Signature value of body sent at t: the hex
// HMAC-SHA256, keyed by secret, of "<unix seconds>.<body>".
func Sign(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + mac(secret, ts, body)
}

func mac(secret, ts string, body []byte) string {
	h := hmac.New(sha256.New, []byte(secret))
	h.Write([]byte(ts))
	h.Write([]byte("."))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// Verify checks a delivery's X-EE-Signature header against its raw body
// and the receiver's secret: one v1 value must match (compared in constant
// time) and the header's time must be within tolerance of now (zero:
// DefaultTolerance; negative: the time is not checked).
func Verify(secret, header string, body []byte, now time.Time, tolerance time.Duration) error {
	var ts string
	var sigs []string
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		switch {
		case !ok:
		case k == "t":
			ts = v
		case k == "v1":
			sigs = append(sigs, v)
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || len(sigs) == 0 {
		return ErrNoSignature
	}
	want := mac(secret, ts, body)
	match := false
	for _, s := range sigs {
		if hmac.Equal([]byte(s), []byte(want)) {
			match = true
		}
	}
	if !match {
		return ErrBadSignature
	}
	if tolerance == 0 {
		tolerance = DefaultTolerance
	}
	if tolerance > 0 {
		if d := now.Sub(time.Unix(sec, 0)); d > tolerance || d < -tolerance {
			return fmt.Errorf("%w: signed %s from now", ErrStale, d.Round(time.Second))
		}
	}
	return nil
}

// NewSecret returns a new signing secret: "whsec_" and 32 random bytes in
// hex.
func NewSecret() string {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return "whsec_" + hex.EncodeToString(b[:])
}

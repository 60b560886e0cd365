// Package rotation decides which LLM provider key serves a call: the
// organization's own keys first, least recently used first, then the global
// keys, skipping keys that are disabled, failed their test or an
// authentication, expired, or rest after a rate limit. A job sticks to the key
// it started with while that key stays usable. The package is pure: stores
// load the candidates and persist the result.
package rotation

import (
	"errors"
	"fmt"
	"sort"
	"time"
)

// Source says whose key served a call: the organization's own or a global
// (system-wide) one. The values are the reference's api_key_source.
type Source string

const (
	// Organization is a key the organization brought (billed to it by the
	// provider).
	Organization Source = "organization"
	// Global is a system administrator's key, or a key declared in the
	// server's environment: the fallback when the organization has none.
	Global Source = "global"
)

// Health is what the last test (or call) said about a key.
type Health string

const (
	// Unchecked means the key has not been tested since it was created or
	// replaced. It is in rotation: a new key is trusted until it fails.
	Unchecked Health = "unchecked"
	// Valid means the last test or call succeeded.
	Valid Health = "valid"
	// Invalid means the provider refused the key (a failed test, or an
	// authentication error on a call). The key is out of rotation until it
	// is re-tested successfully or its secret is replaced.
	Invalid Health = "invalid"
)

// Healths lists the health values.
func Healths() []Health { return []Health{Unchecked, Valid, Invalid} }

// ParseHealth returns the health named s.
func ParseHealth(s string) (Health, error) {
	for _, h := range Healths() {
		if string(h) == s {
			return h, nil
		}
	}
	return "", fmt.Errorf("unknown key health %q", s)
}

// Reason says why a key is out of rotation, as the reference's
// disabled_reason; empty when it is in.
type Reason string

const (
	// Manual: an owner or administrator disabled the key.
	Manual Reason = "manual"
	// InvalidKey: the provider refused the key.
	InvalidKey Reason = "invalid_key"
	// Expired: the key's expiry passed.
	Expired Reason = "expired"
	// RateLimited: the provider asked to slow down; the key rests until
	// RestUntil.
	RateLimited Reason = "rate_limited"
)

// Key is one provider key, the organization's (OrgID set) or global (OrgID
// empty). Sealed is the encrypted secret: opaque here, opened by a cipher
// only when a provider client is built.
type Key struct {
	ID       string
	OrgID    string
	Provider string
	Name     string
	// Suffix is the last 4 characters of the secret, the only part shown.
	Suffix string
	Sealed []byte
	// Version changes whenever the secret changes or the key leaves
	// rotation, so that cached provider clients built on an older version
	// are dropped.
	Version int
	// Enabled is the owner's or administrator's switch.
	Enabled bool
	Health  Health
	// CheckedAt is when the key was last tested.
	CheckedAt *time.Time
	ExpiresAt *time.Time
	// RestUntil, when in the future, keeps the key out after a rate limit.
	RestUntil  *time.Time
	LastUsedAt *time.Time
	// Uses counts the picks of the key (one per job and provider, plus one
	// per switch to it).
	Uses      int64
	CreatedAt time.Time
	// Spent is what the key's calls cost, in micro-credits, from the usage
	// ledger: filled in by the listings, never stored with the key.
	Spent int64
}

// Source returns whose key k is.
func (k *Key) Source() Source {
	if k.OrgID == "" {
		return Global
	}
	return Organization
}

// Out returns why k is out of rotation at now, or "" when it is in. Manual
// and invalid keys stay out until someone acts; expired keys for good; a
// resting key comes back by itself.
func (k *Key) Out(now time.Time) Reason {
	switch {
	case !k.Enabled:
		return Manual
	case k.Health == Invalid:
		return InvalidKey
	case k.ExpiresAt != nil && !now.Before(*k.ExpiresAt):
		return Expired
	case k.RestUntil != nil && now.Before(*k.RestUntil):
		return RateLimited
	}
	return ""
}

// Usable reports whether k is in rotation at now.
func (k *Key) Usable(now time.Time) bool { return k.Out(now) == "" }

// ExpiresSoon reports whether k expires within the 7 days that listings flag.
func (k *Key) ExpiresSoon(now time.Time) bool {
	return k.ExpiresAt != nil && k.ExpiresAt.Sub(now) <= ExpiryWarning
}

// ExpiryWarning is how close to its expiry a key is flagged.
const ExpiryWarning = 7 * 24 * time.Hour

// Tested records a test's verdict at now: a pass brings an invalid key back
// into rotation (and ends a rest), a failure takes it out.
func (k *Key) Tested(ok bool, now time.Time) {
	t := now
	k.CheckedAt = &t
	if ok {
		if k.Health == Invalid {
			k.Version++
		}
		k.Health, k.RestUntil = Valid, nil
		return
	}
	k.Refused()
}

// Refused takes k out of rotation because the provider refused it (an
// authentication error on a call, or a failed test).
func (k *Key) Refused() {
	if k.Health != Invalid {
		k.Version++
	}
	k.Health = Invalid
}

// Succeeded records a successful call: an unchecked key becomes valid.
func (k *Key) Succeeded() {
	if k.Health == Unchecked {
		k.Health = Valid
	}
}

// Rest keeps k out of rotation until until (a rate limit's Retry-After).
// An earlier end than one already set does not shorten the rest.
func (k *Key) Rest(until time.Time) {
	if k.RestUntil == nil || until.After(*k.RestUntil) {
		u := until
		k.RestUntil = &u
	}
}

// Replace puts a new secret in place: the key is unchecked again and back
// in rotation unless disabled or expired.
func (k *Key) Replace(sealed []byte, suffix string) {
	k.Sealed, k.Suffix = sealed, suffix
	k.Health, k.CheckedAt, k.RestUntil = Unchecked, nil, nil
	k.Version++
}

// SetEnabled flips the owner's switch.
func (k *Key) SetEnabled(on bool) {
	if k.Enabled != on {
		k.Version++
	}
	k.Enabled = on
}

// SuffixOf returns the last 4 characters of a secret, the part that may be
// shown; a secret of 8 characters or fewer shows nothing.
func SuffixOf(secret string) string {
	r := []rune(secret)
	if len(r) <= 8 {
		return ""
	}
	return string(r[len(r)-4:])
}

// Errors of a pick.
var (
	// ErrNoUsableKey: the provider has no key in rotation for the
	// organization, neither its own nor a global one.
	ErrNoUsableKey = errors.New("no usable provider key")
)

// NoUsableKeyError names the provider that has no usable key. When every
// key rests after a rate limit, RestUntil says when the first comes back.
type NoUsableKeyError struct {
	Provider  string
	RestUntil *time.Time
}

func (e *NoUsableKeyError) Error() string {
	if e.RestUntil != nil {
		return fmt.Sprintf("every key of provider %s is rate limited until %s", e.Provider, e.RestUntil.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("provider %s has no usable key: add one on /api/org-keys, or re-test a failed one", e.Provider)
}

func (e *NoUsableKeyError) Unwrap() error { return ErrNoUsableKey }

// Request is what a pick needs besides the candidates.
type Request struct {
	Provider string
	Now      time.Time
	// Sticky is the key the job started with ("" for none): it is kept
	// while it stays usable, so that providers' prompt caches stay warm.
	Sticky string
	// Exclude lists keys this call already tried and must not get again
	// (it moved on after a rate limit or refusal).
	Exclude []string
}

// Pick is the chosen key and whose it is.
type Pick struct {
	Key    *Key
	Source Source
}

// Choose picks the key for req among the organization's keys (org) and the
// global keys (global): the first of Ranked, found in one pass without
// building the ranking (stores call it on every pick). It returns a
// *NoUsableKeyError when nothing is usable.
func Choose(org, global []*Key, req Request) (Pick, error) {
	best, sticky, rest := leastRecent(org, req, nil)
	if best == nil || (req.Sticky != "" && sticky == nil) {
		g, gs, gr := leastRecent(global, req, rest)
		if best == nil {
			best = g
		}
		sticky, rest = gs, gr
	}
	switch {
	case sticky != nil:
		best = sticky
	case best == nil:
		e := &NoUsableKeyError{Provider: req.Provider}
		if rest != nil {
			r := *rest
			e.RestUntil = &r
		}
		return Pick{}, e
	}
	return Pick{Key: best, Source: best.Source()}, nil
}

// leastRecent returns the least recently used usable key of keys, the
// sticky key if it is among them and usable, and the earliest end of a
// rate-limit rest (rest so far, or a sooner one). It returns its findings
// rather than storing them, so that callers' keys need not escape.
func leastRecent(keys []*Key, req Request, rest *time.Time) (best, sticky *Key, _ *time.Time) {
	for _, k := range keys {
		if k == nil || k.Provider != req.Provider || req.excluded(k.ID) {
			continue
		}
		if !k.Usable(req.Now) {
			if k.Out(req.Now) == RateLimited && (rest == nil || k.RestUntil.Before(*rest)) {
				rest = k.RestUntil
			}
			continue
		}
		if req.Sticky != "" && k.ID == req.Sticky {
			sticky = k
		}
		if best == nil || lessRecent(k, best) {
			best = k
		}
	}
	return best, sticky, rest
}

func (r Request) excluded(id string) bool {
	for _, x := range r.Exclude {
		if x == id {
			return true
		}
	}
	return false
}

// Ranked returns the usable keys of req.Provider in the order a pick takes
// them: the sticky key while usable; then the organization's keys used
// longest ago first (never-used first); then the global keys in the same
// order. Stores that pick concurrently try them in this order and take the
// first that no one else is taking. With nothing usable it returns a
// *NoUsableKeyError.
func Ranked(org, global []*Key, req Request) ([]*Key, error) {
	var rest *time.Time
	usable := func(keys []*Key) []*Key {
		var out []*Key
		for _, k := range keys {
			if k == nil || k.Provider != req.Provider || req.excluded(k.ID) {
				continue
			}
			if k.Usable(req.Now) {
				out = append(out, k)
			} else if k.Out(req.Now) == RateLimited && (rest == nil || k.RestUntil.Before(*rest)) {
				rest = k.RestUntil
			}
		}
		sort.SliceStable(out, func(i, j int) bool { return lessRecent(out[i], out[j]) })
		return out
	}
	all := append(usable(org), usable(global)...)
	if len(all) == 0 {
		e := &NoUsableKeyError{Provider: req.Provider}
		if rest != nil {
			r := *rest
			e.RestUntil = &r
		}
		return nil, e
	}
	if req.Sticky != "" {
		for i, k := range all {
			if k.ID == req.Sticky {
				copy(all[1:i+1], all[:i])
				all[0] = k
				break
			}
		}
	}
	return all, nil
}

// lessRecent orders keys by last use, never-used first, then by creation
// and id so that the order is total.
func lessRecent(a, b *Key) bool {
	switch {
	case a.LastUsedAt == nil && b.LastUsedAt != nil:
		return true
	case a.LastUsedAt != nil && b.LastUsedAt == nil:
		return false
	case a.LastUsedAt != nil && !a.LastUsedAt.Equal(*b.LastUsedAt):
		return a.LastUsedAt.Before(*b.LastUsedAt)
	case !a.CreatedAt.Equal(b.CreatedAt):
		return a.CreatedAt.Before(b.CreatedAt)
	}
	return a.ID < b.ID
}

// Use records that p's key was picked at now.
func (p Pick) Use(now time.Time) {
	t := now
	p.Key.LastUsedAt = &t
	p.Key.Uses++
}

// Package cache holds the service's in-process caches, all on one library,
// github.com/maypok86/otter/v2: the saved schemas that start jobs and the
// credentials that authenticate requests (each behind its port, with a TTL,
// dropped at once by a write here and through ports.Invalidations on the
// other instances), and the memos of values built from immutable inputs
// (compiled validators, decoded contracts, run shapes). Time comes from the
// Clock port, so that tests drive expiry without waiting.
package cache

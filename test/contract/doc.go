// Package contract holds the conformance suites of the repository ports: one
// exported Run function per port, taking a constructor, that every adapter's
// tests call (adapters/memory, adapters/postgres) and that an embedder can
// call on its own adapter.
//
// The constructor is called once per case. Cases use fresh random ids and
// organizations and look only at what they created, so an adapter may hand
// every case the same underlying database. Cases do not run in parallel.
// Times are written with microsecond precision in a non-UTC zone and must come
// back equal and in UTC; JSON payloads must come back equal as JSON (numbers
// may come back as float64).
package contract

// Package app holds the use cases of the service: one service per area
// (access, schemas, records, enrichment, jobs) composing domain rules and
// ports. It knows nothing of HTTP or SQL; the driving adapters (httpapi, the
// embedded library) call it with an authenticated access.Principal.
package app

// Package api is the enrich CLI's HTTP client of the Entity Enrichment
// Service: JSON calls that turn error answers into *Error (the server's
// detail and code), a job's SSE stream read with go-sse and resumed with
// Last-Event-ID, and the stored login session, refreshed when it expires.
// It speaks the wire format only and imports nothing of the server.
package api

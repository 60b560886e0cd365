// Package jobcodec holds the JSON forms of jobs: the stored format of their
// requests (app.JobRequests, jobcodec.go) and the wire form of their events
// (ports.EventCodec, events.go), the SSE lines clients read and the data
// stores keep, and stored events read back into their typed payloads.
package jobcodec

package jobcodec

import (
	"encoding/json"
	"fmt"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

// Events is the wire form of job events (ports.EventCodec): each payload
// type's fields and keys (payloadPairs, the tables in pairs.go), the common
// block under them, written by this package's encoder; stored events read
// back into their payloads (decode.go). The bytes are those clients and the
// reference's WIRE.md read (TestGolden).
type Events struct{}

var _ ports.EventCodec = Events{}

// NewEvents returns the event codec (a Wire provider).
func NewEvents() Events { return Events{} }

// AppendJSON appends the event as its SSE line's data: keys sorted, event
// and job_id over its fields, which are over its common block. A Raw event
// is written from its stored data, as it was served before.
func (Events) AppendJSON(b []byte, e job.Event) ([]byte, error) {
	extra := [...]field{{"event", string(e.Type)}, {"job_id", e.JobID}}
	if r, ok := e.Payload.(job.Raw); ok {
		return appendRaw(b, r, extra[:])
	}
	return appendEvent(b, e.Payload, (*commonBlock)(e.Common), extra[:], true)
}

// Encode returns the event's data as stores keep it: its fields, then its
// common block, unsorted. A Raw event's is its data as it was stored.
func (Events) Encode(e job.Event) ([]byte, error) {
	if r, ok := e.Payload.(job.Raw); ok {
		return r.Data, nil
	}
	if e.Payload == nil && e.Common == nil {
		return nil, nil
	}
	return encode(func(b []byte) ([]byte, error) {
		return appendEvent(b, e.Payload, (*commonBlock)(e.Common), nil, false)
	})
}

// appendEvent writes the fields of payload p (none when nil) over the block
// c, with extra over both.
func appendEvent(b []byte, p job.Payload, c *commonBlock, extra []field, sorted bool) ([]byte, error) {
	ps := getPairs()
	defer putPairs(ps)
	if p != nil {
		var ok bool
		if *ps, ok = payloadPairs((*ps)[:0], p); !ok {
			return nil, fmt.Errorf("jobcodec: no wire form for event payload %T", p)
		}
	}
	return appendObject(b, *ps, c, extra, sorted)
}

// appendRaw writes the stored data of an event this version could not type,
// sorted, with extra over it.
func appendRaw(b []byte, r job.Raw, extra []field) ([]byte, error) {
	var m map[string]any
	if len(r.Data) > 0 {
		if err := json.Unmarshal(r.Data, &m); err != nil {
			return nil, fmt.Errorf("jobcodec: stored %s event: %w", r.Type, err)
		}
	}
	ps := getPairs()
	defer putPairs(ps)
	*ps = mapPairs((*ps)[:0], m)
	return appendObject(b, *ps, nil, extra, true)
}

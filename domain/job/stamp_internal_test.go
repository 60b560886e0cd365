package job

import "testing"

// TestStampedSize: the size Stamp asks for is the size it fills, for events
// with and without fields of the common block among their own, so that the
// common block's list (isCommon, commonFields) stays the one Stamp writes.
func TestStampedSize(t *testing.T) {
	for _, p := range []Payload{
		ModelStarted{Model: "p::m", Strategy: "single_pass", Expertises: 2},
		ExpertiseCompleted{Model: "p::m", Key: "k", Completed: 1, Total: 2, Success: true},
		ModelCompleted{Model: "p::m", Success: true, RecordID: "r"},
		JobFailed{CodeInternal, "boom"},
	} {
		for _, typ := range []Type{TypeEnrichment, TypeBatchEnrichment} {
			d := NewDraft(p)
			if got, want := len(NewTracker(typ).Stamp(d).Data), stampedSize(d.Data); got != want {
				t.Errorf("%s on %s: stamped %d fields, sized for %d", p.EventType(), typ, got, want)
			}
		}
	}
}

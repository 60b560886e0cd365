package contract

import (
	"context"
	"errors"
	"testing"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

func events(jobID string, from, to int64) []job.Event {
	var out []job.Event
	for seq := from; seq <= to; seq++ {
		out = append(out, job.Event{JobID: jobID, Seq: seq, Type: job.EventAttempt,
			Payload:   job.Attempt{Model: "p::m", Expertise: "general", Attempt: int(seq), MaxAttempts: 200},
			CreatedAt: at(int(seq))})
	}
	return out
}

// common is a run's common block as its tracker stamps it on an event that
// leaves the job in status st.
func common(st job.State) *job.Common {
	return &job.Common{JobType: "single_enrichment", Status: st, TotalModels: 2, RunningModels: []string{"sandbox::echo"},
		CurrentModel: "sandbox::echo", CurrentAttempt: 1, MaxAttempts: 3, TotalEntities: -1}
}

func seqs(evs []job.Event) []int64 {
	var out []int64
	for _, e := range evs {
		out = append(out, e.Seq)
	}
	return out
}

func span(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}

// RunEventLog runs the EventLog contract against the logs newLog returns.
func RunEventLog(t *testing.T, newLog func(t *testing.T) ports.EventLog) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, l ports.EventLog)
	}{
		{"append and list round trip", func(t *testing.T, l ports.EventLog) {
			is := is.New(t)
			jobID := newID("job")
			// Numbers inside maps are float64, as JSON gives them back.
			signals := map[string]any{"domains": 1.0, "properties": 4.0, "models": []any{"sandbox::echo", "sandbox::b"},
				"ratio": 0.25, "ok": true, "none": nil, "text": "line\nbreak ünï"}
			in := []job.Event{
				{JobID: jobID, Seq: 1, Type: job.EventStrategySelected, CreatedAt: at(0), Common: common(job.Running),
					Payload: job.StrategySelected{Strategy: "single_pass", Requested: "auto", Reason: "r", Signals: signals}},
				{JobID: jobID, Seq: 2, Type: job.EventModelStarted, CreatedAt: at(1),
					Payload: job.ModelStarted{Model: "sandbox::echo", Strategy: "single_pass", Expertises: 1}},
				{JobID: jobID, Seq: 3, Type: job.EventCompleted, CreatedAt: at(2), Common: common(job.Completed),
					Payload: job.JobCompleted{Result: map[string]any{}, RecordIDs: []string{}}},
			}
			is.NoErr(l.Append(ctx, in))
			signals["ratio"] = "mutated" // the log keeps its own copy
			got, err := l.List(ctx, jobID, 0, 100)
			is.NoErr(err)
			is.Equal(seqs(got), []int64{1, 2, 3})
			signals["ratio"] = 0.25
			for i := range got {
				is.Equal(got[i].JobID, jobID)
				is.Equal(got[i].Type, in[i].Type)
				sameTime(t, "CreatedAt", got[i].CreatedAt, in[i].CreatedAt)
				is.Equal(got[i].Payload, in[i].Payload)
				is.Equal(got[i].Common, in[i].Common)
			}
			got[0].Payload.(job.StrategySelected).Signals.(map[string]any)["ratio"] = "mutated" // and hands out copies
			again, err := l.List(ctx, jobID, 0, 1)
			is.NoErr(err)
			is.Equal(again[0].Payload.(job.StrategySelected).Signals.(map[string]any)["ratio"], 0.25)
		}},
		{"a string is kept exactly, NUL, HTML characters and line separators included", func(t *testing.T, l ports.EventLog) {
			is := is.New(t)
			jobID := newID("job")
			text := "a\x00b <b>&amp;</b> \u2028 \"q\" \\ 東京"
			in := job.ModelCompleted{Model: text, Success: true, Result: map[string]any{"name": text}, RecordID: "r"}
			is.NoErr(l.Append(ctx, []job.Event{{JobID: jobID, Seq: 1, Type: job.EventModelCompleted, CreatedAt: at(0), Payload: in}}))
			got, err := l.List(ctx, jobID, 0, 10)
			is.NoErr(err)
			is.Equal(len(got), 1)
			is.Equal(got[0].Payload, in)
		}},
		{"an event of a type this version does not know is kept as it was", func(t *testing.T, l ports.EventLog) {
			is := is.New(t)
			jobID := newID("job")
			data := []byte(`{"zz":1,"status":"running","a":{"b":[1,2.5,"x<"]}}`)
			in := []job.Event{
				{JobID: jobID, Seq: 1, Type: "from_another_version", CreatedAt: at(0), Payload: job.Raw{Type: "from_another_version", Data: data}},
				{JobID: jobID, Seq: 2, Type: "without_data", CreatedAt: at(1), Payload: job.Raw{Type: "without_data"}},
			}
			is.NoErr(l.Append(ctx, in))
			got, err := l.List(ctx, jobID, 0, 10)
			is.NoErr(err)
			is.Equal(len(got), 2)
			is.Equal(got[0].Payload, in[0].Payload)
			is.Equal(got[0].Common, nil)
			is.Equal(len(got[1].Payload.(job.Raw).Data), 0)
		}},
		{"list after a sequence number, up to a limit", func(t *testing.T, l ports.EventLog) {
			is := is.New(t)
			jobID, other := newID("job"), newID("job")
			is.NoErr(l.Append(ctx, events(jobID, 1, 5)))
			is.NoErr(l.Append(ctx, events(other, 1, 3)))
			is.NoErr(l.Append(ctx, events(jobID, 6, 8)))
			for _, tt := range []struct {
				after int64
				limit int
				want  []int64
			}{
				{0, 100, span(1, 8)},
				{2, 2, []int64{3, 4}},
				{5, 100, span(6, 8)},
				{7, 1, []int64{8}},
				{8, 100, nil},
				{99, 100, nil},
			} {
				got, err := l.List(ctx, jobID, tt.after, tt.limit)
				is.NoErr(err)
				is.Equal(seqs(got), tt.want) // after, limit
				for _, e := range got {
					is.Equal(e.JobID, jobID)
				}
			}
			none, err := l.List(ctx, newID("job"), 0, 100)
			is.NoErr(err)
			is.Equal(len(none), 0)
		}},
		{"a batch is listed in sequence order whatever its order", func(t *testing.T, l ports.EventLog) {
			is := is.New(t)
			jobID := newID("job")
			evs := events(jobID, 1, 4)
			evs[0], evs[3] = evs[3], evs[0]
			is.NoErr(l.Append(ctx, evs))
			got, err := l.List(ctx, jobID, 0, 100)
			is.NoErr(err)
			is.Equal(seqs(got), span(1, 4))
		}},
		{"a batch of 100 events in one append", func(t *testing.T, l ports.EventLog) {
			is := is.New(t)
			jobID := newID("job")
			is.NoErr(l.Append(ctx, events(jobID, 1, 100)))
			got, err := l.List(ctx, jobID, 0, 1000)
			is.NoErr(err)
			is.Equal(seqs(got), span(1, 100))
			for _, e := range got {
				is.Equal(e.Payload, job.Attempt{Model: "p::m", Expertise: "general", Attempt: int(e.Seq), MaxAttempts: 200})
			}
			got, err = l.List(ctx, jobID, 50, 30)
			is.NoErr(err)
			is.Equal(seqs(got), span(51, 80))
		}},
		{"appending an existing sequence number is a conflict and stores nothing of the batch", func(t *testing.T, l ports.EventLog) {
			is := is.New(t)
			jobID := newID("job")
			is.NoErr(l.Append(ctx, events(jobID, 1, 3)))
			for _, batch := range [][]job.Event{
				events(jobID, 3, 3),
				append(events(jobID, 4, 5), events(jobID, 2, 2)...),
				append(events(jobID, 6, 6), events(jobID, 6, 6)...),     // twice in one batch
				append(events(jobID, 10, 40), events(jobID, 25, 25)...), // twice in a large batch
			} {
				err := l.Append(ctx, batch)
				is.True(errors.Is(err, ports.ErrConflict))
			}
			got, err := l.List(ctx, jobID, 0, 100)
			is.NoErr(err)
			is.Equal(seqs(got), span(1, 3))
			is.NoErr(l.Append(ctx, events(newID("job"), 1, 3))) // the same numbers for another job
		}},
		{"an empty append does nothing", func(t *testing.T, l ports.EventLog) {
			is := is.New(t)
			is.NoErr(l.Append(ctx, nil))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newLog(t)) })
	}
}

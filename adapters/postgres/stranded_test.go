package postgres_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
	"github.com/entityenrich/enrich/test/pgtest"
)

// TestStrandedRuns: a pending job whose only run a dispatcher took long ago
// and never finished (its replica died before claiming the job) is
// stranded; one whose run was taken just now, one that started, and one
// with another run waiting are not.
func TestStrandedRuns(t *testing.T) {
	is := is.New(t)
	ctx := context.Background()
	db := migrated(t, pgtest.Native(t))
	q, err := postgres.NewQueue(db, postgres.QueueConfig{}, slog.New(slog.DiscardHandler))
	is.NoErr(err)
	jobs := postgres.NewJobStore(db)
	now := time.Now()
	add := func(id string, state job.State, takenAgo time.Duration, waiting bool) {
		t.Helper()
		j := &job.Job{ID: id, OrgID: "org", Type: job.TypeEnrichment, State: job.Pending, Request: []byte(`{}`),
			CreatedAt: now, UpdatedAt: now, HeartbeatAt: now}
		if state == job.Running {
			is.NoErr(j.Claim("elsewhere", now, time.Minute))
		}
		is.NoErr(jobs.CreateJob(ctx, j))
		is.NoErr(q.Enqueue(ctx, ports.QueuedJob{JobID: id, OrgID: "org"}))
		// What River's fetch writes when a dispatcher takes the run.
		_, err := db.ExecContext(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = ?
			WHERE args->>'job_id' = ?`, now.Add(-takenAgo), id)
		is.NoErr(err)
		if waiting {
			is.NoErr(q.Enqueue(ctx, ports.QueuedJob{JobID: id, OrgID: "org"}))
		}
	}
	add("stranded", job.Pending, time.Minute, false)
	add("taken-now", job.Pending, time.Second, false)
	add("started", job.Running, time.Minute, false)
	add("queued-again", job.Pending, time.Minute, true)

	got, err := q.Stranded(ctx, now.Add(-10*time.Second), 100)
	is.NoErr(err)
	is.Equal(got, []ports.QueuedJob{{JobID: "stranded", OrgID: "org"}})
}

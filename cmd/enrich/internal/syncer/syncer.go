// Package syncer is the reference consumer of a registration's delta feed
// (enrich sync): it claims a window, applies it to the target PostgreSQL in
// one transaction together with its watermark, commits, then acknowledges.
// A window delivered again after a crash between commit and ack is skipped
// up to the watermark, so nothing is applied twice.
package syncer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/entityenrich/enrich/domain/dbsync"
)

// Stats is the progress so far.
type Stats struct {
	Applied    int64     // deltas applied by this run
	Skipped    int64     // deltas at or below the watermark, delivered again
	Refused    int64     // batches the target refused (reported)
	Watermark  int64     // the target's last applied delta id
	LastAt     time.Time // creation time of the last applied delta
	HasMore    bool
	CaughtUpAt time.Time // when the head was last reached
}

// Syncer applies one registration's feed to one target.
type Syncer struct {
	Feed       Feed
	Target     *pgx.Conn // opened with the simple protocol: a delta's SQL runs as one Exec, never split
	DatabaseID string
	// Progress is told after every window (nil: nobody).
	Progress func(Stats)
	// Notice reports what a person should know (a refused batch).
	Notice func(format string, args ...any)
	// AfterCommit runs between a window's commit and its ack (tests kill
	// the consumer there).
	AfterCommit func(upTo int64)

	stats Stats
}

// Options choose how long Run goes on.
type Options struct {
	// Follow keeps going at the head: it polls with backoff (up to
	// MaxIdle), woken early by Wake.
	Follow  bool
	MaxIdle time.Duration
	Wake    <-chan struct{}
	// Reload loads the snapshot again when the server asks for it
	// (snapshot_required); without it Run stops with ErrSnapshotRequired.
	Reload bool
}

// Prepare creates the watermark table and reads the watermark.
func (s *Syncer) Prepare(ctx context.Context) (int64, error) {
	if _, err := s.Target.Exec(ctx, dbsync.StateDDL()); err != nil {
		return 0, fmt.Errorf("create %s in the target: %w", dbsync.StateTable, err)
	}
	var wm int64
	err := s.Target.QueryRow(ctx, `SELECT last_delta_id FROM `+dbsync.StateTable+` WHERE database_id = $1`, s.DatabaseID).Scan(&wm)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return 0, err
	}
	s.stats.Watermark = wm
	return wm, nil
}

// ErrSnapshotRequired: the registration pauses its feed until the target
// reloads from a snapshot (a schema was linked to it again, and the rows
// written meanwhile exist only in the snapshot).
var ErrSnapshotRequired = errors.New("the server requires a snapshot reload before deltas resume: run enrich sync --snapshot")

// Run syncs until the head (and on, with Follow) or until ctx ends.
func (s *Syncer) Run(ctx context.Context, o Options) error {
	wm, err := s.Prepare(ctx)
	if err != nil {
		return err
	}
	if wm > 0 {
		// A crash between commit and ack left the window leased: acking
		// what the target has releases it. Past what the server delivered
		// (after a snapshot) it is refused, harmlessly.
		_ = s.Feed.Ack(ctx, wm)
	}
	idle := 0
	for ctx.Err() == nil {
		w, err := s.Feed.Claim(ctx)
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		if w.SnapshotRequired {
			if !o.Reload {
				return ErrSnapshotRequired
			}
			if _, err := s.load(ctx); err != nil {
				return err
			}
			if s.Notice != nil {
				s.Notice("snapshot reloaded as of delta %d, as the server asked", s.stats.Watermark)
			}
			continue
		}
		if len(w.Deltas) > 0 {
			idle = 0
			if err := s.window(ctx, w); err != nil {
				return err
			}
			continue
		}
		s.stats.HasMore = w.HasMore
		if !w.HasMore {
			s.stats.CaughtUpAt = time.Now()
			s.progress()
			if !o.Follow {
				return nil
			}
		}
		idle++
		if err := s.wait(ctx, o, idle, w); err != nil {
			return err
		}
	}
	return ctx.Err()
}

// wait sleeps before the next claim: until a live lease ends (another
// claim holds the window), or by backoff at the head.
func (s *Syncer) wait(ctx context.Context, o Options, idle int, w Window) error {
	d := min(time.Duration(1<<min(idle, 8))*250*time.Millisecond, max(o.MaxIdle, time.Second))
	if w.HasMore && w.LeaseExpiresAt != nil {
		d = min(max(time.Until(*w.LeaseExpiresAt), 50*time.Millisecond), 5*time.Second)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	case <-o.Wake:
	}
	return nil
}

// window applies one window and acknowledges it. A delta the target
// refuses rolls the whole window back; its batch is reported, and the
// next claim delivers the window again without it.
func (s *Syncer) window(ctx context.Context, w Window) error {
	upTo := w.Deltas[len(w.Deltas)-1].ID
	refused, cause, err := s.apply(ctx, w.Deltas)
	if err != nil {
		return err
	}
	if refused != nil {
		s.stats.Refused++
		if s.Notice != nil {
			s.Notice("delta %d (batch %s) refused by the target: %v; reported for quarantine", refused.ID, refused.BatchID, cause)
		}
		if err := s.Feed.Report(ctx, refused.ID, cause.Error()); err != nil {
			return fmt.Errorf("report delta %d: %w", refused.ID, err)
		}
		return nil
	}
	if s.AfterCommit != nil {
		s.AfterCommit(upTo)
	}
	if err := s.Feed.Ack(ctx, upTo); err != nil {
		return fmt.Errorf("ack %d: %w", upTo, err)
	}
	s.stats.HasMore = w.HasMore
	s.progress()
	return nil
}

// apply runs the window's deltas above the watermark in one transaction
// with the new watermark. A refusal by the target returns the delta and
// the database's error; other errors are returned as err.
func (s *Syncer) apply(ctx context.Context, ds []Delta) (refused *Delta, cause error, err error) {
	tx, err := s.Target.Begin(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	var wm int64
	err = tx.QueryRow(ctx, dbsync.ReadStateSQL(), s.DatabaseID).Scan(&wm)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, nil, err
	}
	var applied, skipped int64
	var last Delta
	for i := range ds {
		d := ds[i]
		if d.ID <= wm {
			skipped++
			continue
		}
		if _, err := tx.Exec(ctx, d.SQL); err != nil {
			var pg *pgconn.PgError
			if errors.As(err, &pg) && ctx.Err() == nil {
				return &d, pg, nil
			}
			return nil, nil, fmt.Errorf("apply delta %d: %w", d.ID, err)
		}
		applied, last = applied+1, d
	}
	upTo := ds[len(ds)-1].ID
	if upTo > wm {
		set, err := dbsync.SetStateSQL(s.DatabaseID, upTo)
		if err != nil {
			return nil, nil, err
		}
		if _, err := tx.Exec(ctx, set); err != nil {
			return nil, nil, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, nil, fmt.Errorf("commit: %w", err)
	}
	s.stats.Applied += applied
	s.stats.Skipped += skipped
	s.stats.Watermark = max(wm, upTo)
	if applied > 0 {
		s.stats.LastAt = last.CreatedAt
	}
	return nil, nil, nil
}

func (s *Syncer) progress() {
	if s.Progress != nil {
		s.Progress(s.stats)
	}
}

// Stats returns the progress so far.
func (s *Syncer) Stats() Stats { return s.stats }

// Bootstrap loads the snapshot (jsonl) into the target in one
// transaction; a target that already has a watermark for the
// registration is left as it is (false).
func (s *Syncer) Bootstrap(ctx context.Context) (bool, error) {
	wm, err := s.Prepare(ctx)
	if err != nil || wm > 0 {
		return false, err
	}
	return s.load(ctx)
}

// load applies the snapshot (jsonl) to the target in one transaction,
// whatever it holds: the snapshot's upserts are guarded by revision and
// it sets the watermark to its head.
func (s *Syncer) load(ctx context.Context) (bool, error) {
	rc, err := s.Feed.Snapshot(ctx)
	if err != nil {
		return false, err
	}
	defer rc.Close()
	tx, err := s.Target.Begin(ctx)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	var head int64 = -1
	ended := false
	for sc.Scan() {
		var u struct {
			AsOf *int64 `json:"as_of_delta_id"`
			SQL  string `json:"sql"`
			End  bool   `json:"end"`
		}
		if err := decodeJSON(sc.Bytes(), &u); err != nil {
			return false, fmt.Errorf("snapshot: %w", err)
		}
		switch {
		case u.AsOf != nil:
			head = *u.AsOf
		case u.End:
			ended = true
		case u.SQL != "":
			if _, err := tx.Exec(ctx, u.SQL); err != nil {
				return false, fmt.Errorf("snapshot: %w", err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return false, fmt.Errorf("snapshot: %w", err)
	}
	if !ended || head < 0 {
		return false, errors.New("snapshot: the download was cut short")
	}
	if err := tx.Commit(ctx); err != nil {
		return false, err
	}
	s.stats.Watermark = head
	return true, nil
}

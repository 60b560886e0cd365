package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/uptrace/bun"
	"github.com/uptrace/bun/dialect/pgdialect"

	"github.com/entityenrich/enrich/ports"
)

// invalidationChannel is the NOTIFY channel of cache invalidations.
const invalidationChannel = "enrich_invalidate"

// Invalidations announces cache invalidations to every instance sharing the
// database with NOTIFY, and listens with LISTEN on a dedicated connection
// (reconnecting after failures). PGlite delivers no notifications between
// connections; there a single instance relies on its local invalidation.
type Invalidations struct {
	db  bun.IDB
	dsn string
	log *slog.Logger
}

var _ ports.Invalidations = (*Invalidations)(nil)

// NewInvalidations returns the NOTIFY/LISTEN adapter; dsn opens the listening
// connection.
func NewInvalidations(db bun.IDB, dsn string, log *slog.Logger) *Invalidations {
	return &Invalidations{db: db, dsn: dsn, log: log}
}

// Publish sends kind:id on the channel.
func (n *Invalidations) Publish(ctx context.Context, kind, id string) error {
	if _, err := n.db.ExecContext(ctx, "SELECT pg_notify(?, ?)", invalidationChannel, kind+":"+id); err != nil {
		return fail(err, "notify "+kind+" "+id)
	}
	return nil
}

// PublishAll sends kind:id for every id, in one statement.
func (n *Invalidations) PublishAll(ctx context.Context, kind string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	if _, err := n.db.ExecContext(ctx, "SELECT pg_notify(?, ? || x) FROM unnest(?::text[]) AS x",
		invalidationChannel, kind+":", pgdialect.Array(ids)); err != nil {
		return fail(err, fmt.Sprintf("notify %d %s", len(ids), kind))
	}
	return nil
}

// Listen delivers every notification to fn until ctx ends.
func (n *Invalidations) Listen(ctx context.Context, fn func(kind, id string)) error {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := n.listenOnce(ctx, fn)
		if ctx.Err() != nil {
			return nil
		}
		n.log.Warn("invalidation listener stopped; reconnecting", "err", err, "in", backoff.String())
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil
		}
		backoff = min(backoff*2, 10*time.Second)
	}
	return nil
}

func (n *Invalidations) listenOnce(ctx context.Context, fn func(kind, id string)) error {
	conn, err := pgx.Connect(ctx, n.dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+invalidationChannel); err != nil {
		return err
	}
	// Anything may have changed while no listener ran: say so.
	fn("*", "")
	for {
		note, err := conn.WaitForNotification(ctx)
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		if kind, id, ok := strings.Cut(note.Payload, ":"); ok {
			fn(kind, id)
		}
	}
}

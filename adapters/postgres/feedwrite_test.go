package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/matryer/is"

	"github.com/entityenrich/enrich/adapters/postgres"
	"github.com/entityenrich/enrich/domain/delta"
	"github.com/entityenrich/enrich/ports"
)

// TestFeedAppendOrder: concurrent writers to one registration's feed get
// contiguous ids, and a reader never sees a gap (id n+1 committed before
// id n), because the ids are handed out under the feed row's lock.
func TestFeedAppendOrder(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			is := is.New(t)
			ctx := context.Background()
			db := migrated(t, b.dsn(t))
			dbID := fmt.Sprintf("db-%d", time.Now().UnixNano())
			_, err := db.DB.ExecContext(ctx, `INSERT INTO databases (id, org_id, name, page_limit, on_gaps, pk_strategy,
				index_scalars, notify_debounce_s, max_threshold_timeout_s, created_at, updated_at)
				VALUES (?, 'org', 'n', 100, 'reject_entity', 'surrogate', 'filterable', 5, 300, now(), now())`, dbID)
			is.NoErr(err)
			_, err = db.DB.ExecContext(ctx, `INSERT INTO delta_feeds (database_id) VALUES (?)`, dbID)
			is.NoErr(err)
			uow := postgres.NewUnitOfWork(db.DB, nil, nil)

			writers, each := 4, 10
			if !b.parallel {
				writers = 1
			}
			var wg sync.WaitGroup
			errs := make(chan error, writers)
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						err := uow.InTx(ctx, func(ctx context.Context, r ports.Repos) error {
							batch := fmt.Sprintf("b-%d-%d", w, i)
							rows := []ports.FeedRow{
								{Delta: delta.Delta{Kind: delta.Data, Op: delta.Upsert, SQL: "SELECT 1", BatchID: batch, Revision: 1, EntityType: "t", CreatedAt: time.Now()}},
								{Delta: delta.Delta{Kind: delta.Data, Op: delta.Upsert, SQL: "SELECT 2", BatchID: batch, Revision: 1, EntityType: "t", CreatedAt: time.Now()}},
							}
							ids, err := r.Feed.Append(ctx, dbID, rows)
							if err == nil && (len(ids) != 2 || ids[1] != ids[0]+1) {
								err = fmt.Errorf("ids %v", ids)
							}
							return err
						})
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				is.NoErr(err)
			}
			var ids []int64
			is.NoErr(db.DB.NewRaw(`SELECT id FROM deltas WHERE database_id = ? ORDER BY id`, dbID).Scan(ctx, &ids))
			is.Equal(len(ids), writers*each*2)
			for i, id := range ids {
				is.Equal(id, int64(i+1)) // contiguous from 1
			}

			// A registration without a feed is ErrNotFound; an invalid row
			// is ErrInvalid and nothing is written.
			_, err = postgres.NewFeedWriter(db.DB).Append(ctx, "nope", []ports.FeedRow{{Delta: delta.Delta{Kind: delta.Schema, Op: delta.Migrate, SQL: "x", CreatedAt: time.Now()}}})
			is.True(errors.Is(err, ports.ErrNotFound))
			_, err = postgres.NewFeedWriter(db.DB).Append(ctx, dbID, []ports.FeedRow{{Delta: delta.Delta{Kind: delta.Data, Op: delta.Migrate, SQL: "x"}}})
			is.True(errors.Is(err, ports.ErrInvalid))
		})
	}
}

package postgres

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/maypok86/otter/v2"
	"github.com/uptrace/bun"

	"github.com/entityenrich/enrich/domain/rotation"
	"github.com/entityenrich/enrich/ports"
)

// Picks that arrive together for the same organization and provider (and
// no sticky key or exclusions, the common case: a job's first pick) are
// combined: one of them, the leader, reads the candidates once and takes
// as many idle keys as there are picks in one statement (FOR UPDATE SKIP
// LOCKED, as a single pick does), so that n concurrent picks cost two
// round trips instead of 2n and no longer queue for connections and row
// locks. Picks that arrive while a batch runs wait for the next one, which
// the first of them leads. Across replicas the statement's row locks still
// keep two picks off one idle key while another is free; within a batch
// each pick gets a key of its own while idle keys last, and the rest share
// the keys in rotation order, as a single pick does once every key is
// busy.

// maxPickBatch bounds the picks one statement serves.
const maxPickBatch = 64

// pickCombiner queues the picks of each organization and provider, and
// keeps the candidates a batch last read.
type pickCombiner struct {
	mu     sync.Mutex
	queues map[string]*pickQueue
	// read holds each group's candidates as last read, for the TTL of
	// WithCandidateCache (nil: none are kept): a batch then takes its keys
	// in one statement instead of two. Stale candidates cannot make a
	// wrong pick: the statement takes a key only if its version (bumped
	// when it leaves or rejoins rotation, or its secret changes) and rest
	// are as read, and orders by the live last use; rotation.Ranked
	// re-checks expiry at each pick. What a stale read can miss is a key
	// added, or brought back, by another replica in the meantime, for at
	// most the TTL. Writes through this store drop it.
	read *otter.Cache[string, candidates]
}

// candidates are a group's keys as read.
type candidates struct {
	org, global []*rotation.Key
}

// WithCandidateCache lets a batch of picks reuse the candidate keys that a
// batch of the same organization and provider read less than ttl ago, by
// clock, for at most groups organizations and providers. Without it every
// batch reads them.
func WithCandidateCache(ttl time.Duration, groups int, clock ports.Clock) ProviderKeyOption {
	return func(s *ProviderKeyStore) {
		s.picks.read = otter.Must(&otter.Options[string, candidates]{MaximumSize: groups,
			ExpiryCalculator: otter.ExpiryWriting[string, candidates](ttl), Clock: newOtterClock(clock)})
	}
}

// otterClock gives otter the time of the Clock port, so that a test's clock
// decides when the candidates are read again. It counts from start on the
// monotonic clock when the port's times carry it (time.Now's do), so that
// a step of the wall clock neither ages nor revives an entry.
type otterClock struct {
	ports.Clock
	start time.Time
}

func newOtterClock(c ports.Clock) otterClock { return otterClock{Clock: c, start: c.Now()} }

func (c otterClock) NowNano() int64 { return c.start.UnixNano() + int64(c.Now().Sub(c.start)) }

// Tick drives otter's periodic removal of expired entries; reads check
// expiry whatever the ticks. otter's clean-up goroutine, and with it the
// ticker, ends with its cache.
func (otterClock) Tick(d time.Duration) <-chan time.Time { return time.NewTicker(d).C }

// cached returns the group's candidates if they are kept.
func (c *pickCombiner) cached(name string) (candidates, bool) {
	if c.read == nil {
		return candidates{}, false
	}
	return c.read.GetIfPresent(name)
}

func (c *pickCombiner) remember(name string, r candidates) {
	if c.read != nil {
		c.read.Set(name, r)
	}
}

// forget drops every group's candidates: a key changed here.
func (c *pickCombiner) forget() {
	if c.read != nil {
		c.read.InvalidateAll()
	}
}

type pickQueue struct {
	waiting []*pickCall
}

// pickCall is one waiting pick. wake is closed when its result is in, or
// when it is to lead the next batch (lead set).
type pickCall struct {
	req  rotation.Request
	wake chan struct{}
	lead bool
	pick rotation.Pick
	err  error
}

// pick returns run's answer for req, combined with the other picks of
// orgID and req.Provider waiting at the same time.
func (c *pickCombiner) pick(ctx context.Context, orgID string, req rotation.Request,
	run func(ctx context.Context, orgID string, batch []*pickCall)) (rotation.Pick, error) {
	name := orgID + "\x00" + req.Provider
	call := &pickCall{req: req, wake: make(chan struct{})}
	c.mu.Lock()
	if c.queues == nil {
		c.queues = map[string]*pickQueue{}
	}
	q, busy := c.queues[name]
	if !busy {
		q = &pickQueue{}
		c.queues[name] = q
	} else {
		q.waiting = append(q.waiting, call)
	}
	c.mu.Unlock()
	lead := !busy
	if busy {
		select {
		case <-call.wake:
		case <-ctx.Done():
			if c.leave(name, q, call) {
				return rotation.Pick{}, ctx.Err()
			}
			<-call.wake // already in a batch, or chosen to lead: not long
		}
		lead = call.lead // set before wake was closed
	}
	if lead {
		c.lead(ctx, name, q, call, run)
	}
	return call.pick, call.err
}

// leave takes call out of q if it still waits there.
func (c *pickCombiner) leave(name string, q *pickQueue, call *pickCall) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, w := range q.waiting {
		if w == call {
			q.waiting = append(q.waiting[:i], q.waiting[i+1:]...)
			return true
		}
	}
	return false
}

// lead runs one batch: call and the picks waiting now. Then it hands the
// lead to the first pick that arrived meanwhile, or closes the queue.
func (c *pickCombiner) lead(ctx context.Context, name string, q *pickQueue, call *pickCall,
	run func(ctx context.Context, orgID string, batch []*pickCall)) {
	c.mu.Lock()
	n := min(len(q.waiting), maxPickBatch-1)
	batch := append([]*pickCall{call}, q.waiting[:n]...)
	q.waiting = q.waiting[n:]
	c.mu.Unlock()

	orgID, _, _ := strings.Cut(name, "\x00")
	// The batch serves others too: the leader's cancellation must not fail
	// their picks.
	run(context.WithoutCancel(ctx), orgID, batch)

	c.mu.Lock()
	if len(q.waiting) > 0 {
		next := q.waiting[0]
		q.waiting = q.waiting[1:]
		next.lead = true
		close(next.wake)
	} else {
		delete(c.queues, name)
	}
	c.mu.Unlock()
	for _, b := range batch[1:] {
		close(b.wake)
	}
}

// pickBatch serves a batch of picks of orgID for one provider, none sticky
// and none excluding a key. Picks it cannot serve in the batch (every key
// held by concurrent statements, twice) go the single way.
func (s *ProviderKeyStore) pickBatch(ctx context.Context, orgID string, batch []*pickCall) {
	req := batch[0].req
	for _, b := range batch[1:] {
		if b.req.Now.After(req.Now) {
			req.Now = b.req.Now
		}
	}
	var keys []*rotation.Key
	for round := 0; round < pickRounds && len(keys) == 0; round++ {
		ranked, err := s.rankedCached(ctx, orgID, req, round == 0)
		if err == nil {
			keys, err = s.takeIdleN(ctx, ranked, len(batch), req.Now)
		}
		if err != nil {
			for _, b := range batch {
				b.err = err
			}
			return
		}
	}
	for i, b := range batch {
		if i < len(keys) {
			b.pick = rotation.Pick{Key: keys[i], Source: keys[i].Source()}
		} else {
			b.pick, b.err = s.pickOne(ctx, orgID, b.req)
		}
	}
}

// rankedCached ranks the candidates of orgID for req.Provider, as kept
// (WithCandidateCache) if reuse is true and there are some, else read now.
func (s *ProviderKeyStore) rankedCached(ctx context.Context, orgID string, req rotation.Request, reuse bool) ([]*rotation.Key, error) {
	name := orgID + "\x00" + req.Provider
	if r, ok := s.picks.cached(name); ok && reuse {
		return rotation.Ranked(r.org, r.global, req)
	}
	org, global, err := s.candidates(ctx, orgID, req.Provider)
	if err != nil {
		return nil, err
	}
	s.picks.remember(name, candidates{org: org, global: global})
	return rotation.Ranked(org, global, req)
}

// ranked reads the candidate keys of orgID for req.Provider and ranks them
// with rotation.Ranked.
func (s *ProviderKeyStore) ranked(ctx context.Context, orgID string, req rotation.Request) ([]*rotation.Key, error) {
	org, global, err := s.candidates(ctx, orgID, req.Provider)
	if err != nil {
		return nil, err
	}
	return rotation.Ranked(org, global, req)
}

// candidates reads orgID's keys of provider and the global ones.
func (s *ProviderKeyStore) candidates(ctx context.Context, orgID, provider string) (org, global []*rotation.Key, _ error) {
	var rows []providerKeyRow
	q := s.db.NewSelect().Model(&rows).Where("provider = ?", provider)
	if orgID == "" {
		q.Where("org_id IS NULL")
	} else {
		q.Where("(org_id = ? OR org_id IS NULL)", orgID)
	}
	if err := q.Scan(ctx); err != nil {
		return nil, nil, fail(err, "pick provider key")
	}
	for i := range rows {
		if rows[i].OrgID == "" {
			global = append(global, rows[i].key())
		} else {
			org = append(org, rows[i].key())
		}
	}
	return org, global, nil
}

// takeIdleN serves n picks in one statement: it takes, in ranked's tiers
// and by live last use as takeIdle does (keyOrder), up to n keys that are
// neither held by another transaction nor changed since read (version,
// rest, expiry, switch and health as read: what rotation.Ranked judged),
// and records n uses over them: one each, and when there are fewer such keys than picks, the rest
// spread evenly over them (every idle key is in use: sharing is
// unavoidable). It returns one key per pick served (a shared key once per
// pick), none when every key is held or changed.
func (s *ProviderKeyStore) takeIdleN(ctx context.Context, ranked []*rotation.Key, n int, now time.Time) ([]*rotation.Key, error) {
	c := candidateColumns{}
	for _, k := range ranked {
		tier := int32(1) // the organization's
		if k.OrgID == "" {
			tier = 2
		}
		c.id = append(c.id, k.ID)
		c.tier = append(c.tier, tier)
		c.version = append(c.version, int32(k.Version))
		c.restUntil = append(c.restUntil, utcPtr(k.RestUntil))
		c.expiresAt = append(c.expiresAt, utcPtr(k.ExpiresAt))
		c.enabled = append(c.enabled, k.Enabled)
		c.health = append(c.health, string(k.Health))
	}
	rows, err := s.takeIdleNRows(ctx, len(ranked), c.id, c.tier, c.version, c.restUntil, c.expiresAt,
		c.enabled, c.health, n, utc(now))
	if err != nil {
		return nil, fail(err, "pick provider keys")
	}
	out := make([]*rotation.Key, 0, n)
	for i := range rows {
		k := rows[i].key()
		out = append(out, k)
		for range rows[i].Share - 1 { // a copy each: picks hand their key to different jobs
			c := *k
			out = append(out, &c)
		}
	}
	return out, nil
}

// takeIdleNRows runs takeIdleNSQL with args and returns its rows (at most
// size). On a pgx pool it runs there, scanning each row by hand: a batch is
// served while its picks wait, and database/sql and Bun's reflection were a
// large part of the batch's own time and most of what it allocated.
func (s *ProviderKeyStore) takeIdleNRows(ctx context.Context, size int, args ...any) ([]sharedKeyRow, error) {
	out := make([]sharedKeyRow, 0, size)
	if s.native == nil {
		err := s.scanParams(ctx, takeIdleNSQL, &out, args...)
		return out, err
	}
	rows, err := s.native.Query(ctx, takeIdleNSQL, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var org *string
	for rows.Next() {
		out = append(out, sharedKeyRow{})
		r := &out[len(out)-1] // scanned in place: a row of its own would escape
		if err := rows.Scan(&r.ID, &org, &r.Provider, &r.Name, &r.Suffix, &r.Sealed, &r.Version, &r.Enabled, &r.Health,
			&r.CheckedAt, &r.ExpiresAt, &r.RestUntil, &r.LastUsedAt, &r.Uses, &r.CreatedAt, &r.Share); err != nil {
			return nil, err
		}
		if org != nil {
			r.OrgID = *org
		}
	}
	return out, rows.Err()
}

// candidateColumns are the ranked candidates as columns, one array each.
type candidateColumns struct {
	id, health           []string
	tier, version        []int32
	restUntil, expiresAt []*time.Time
	enabled              []bool
}

// takeIdleNSQL is takeIdleN's statement. Its text never changes (the
// candidates come as arrays), so each connection prepares and plans it
// once: planning the statement with its values written in took longer than
// running it.
const takeIdleNSQL = `WITH cand AS (
		SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::timestamptz[], $5::timestamptz[],
			$6::boolean[], $7::text[]) AS c (id, tier, version, rest_until, expires_at, enabled, health)),
	pick AS (
		SELECT k.id, c.tier, seen.last_used_at AS seen_used, k.created_at
		FROM provider_keys k JOIN cand c ON c.id = k.id JOIN provider_keys seen ON seen.id = k.id
		WHERE k.version = c.version AND k.rest_until IS NOT DISTINCT FROM c.rest_until
			AND k.expires_at IS NOT DISTINCT FROM c.expires_at AND k.enabled = c.enabled AND k.health = c.health
			AND k.last_used_at IS NOT DISTINCT FROM seen.last_used_at
		ORDER BY c.tier, ` + keyOrder + ` LIMIT $8
		FOR UPDATE OF k SKIP LOCKED),
	numbered AS (
		SELECT id, row_number() OVER (ORDER BY tier, seen_used ASC NULLS FIRST, created_at, id COLLATE "C") - 1 AS i,
			count(*) OVER () AS m
		FROM pick),
	shares AS (
		SELECT id, 1 + ($8::int - m) / m + CASE WHEN i < ($8::int - m) % m THEN 1 ELSE 0 END AS share FROM numbered),
	lazy AS (SELECT set_config('synchronous_commit', 'off', true))
	UPDATE provider_keys p SET last_used_at = $9, uses = p.uses + shares.share FROM shares, lazy WHERE p.id = shares.id
	RETURNING p.id, p.org_id, p.provider, p.name, p.suffix, p.sealed, p.version, p.enabled, p.health, p.checked_at,
		p.expires_at, p.rest_until, p.last_used_at, p.uses, p.created_at, shares.share`

// scanParams runs a statement written with $n parameters on the pool (its
// constant text lets pgx prepare it once per connection) and scans its rows
// into dest, a pointer to a slice.
func (s *ProviderKeyStore) scanParams(ctx context.Context, query string, dest any, args ...any) error {
	if s.pool == nil {
		return fmt.Errorf("postgres: %w: a combined pick outside the pool", ports.ErrInvalid)
	}
	rows, err := s.pool.DB.QueryContext(ctx, query, args...)
	if err != nil {
		return err
	}
	return s.pool.ScanRows(ctx, rows, dest)
}

// sharedKeyRow is a key and how many picks of a batch it serves.
type sharedKeyRow struct {
	providerKeyRow `bun:",extend"`
	Share          int `bun:"share"`
}

// combinable reports whether a pick may join a batch: no sticky key, no
// exclusions, and on the pool (a caller's transaction's statements are its
// own).
func (s *ProviderKeyStore) combinable(req rotation.Request) bool {
	return req.Sticky == "" && len(req.Exclude) == 0 && s.pool != nil
}

// scanOnce runs q and scans its rows into dest (a pointer to a slice: no
// row is an empty slice, not sql.ErrNoRows) in one round trip. Bun writes
// the values into the statement's text, and a pick's text is new every time
// (its timestamps): pgx's default, preparing each new text to cache its plan,
// would cost a second round trip for a plan never reused and push reusable
// plans (the same key's or schema's lookups) out of the connection's cache.
// db is the pool; nil (a caller's transaction) runs q as any statement.
func scanOnce(ctx context.Context, db *bun.DB, q *bun.RawQuery, dest any) error {
	if db == nil {
		return q.Scan(ctx, dest)
	}
	rows, err := db.DB.QueryContext(ctx, q.String(), pgx.QueryExecModeExec)
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := db.ScanRows(ctx, rows, dest); err != nil {
		return err
	}
	return rows.Err()
}

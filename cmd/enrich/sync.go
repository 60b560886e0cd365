package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/spf13/cobra"

	"github.com/entityenrich/enrich/cmd/enrich/internal/api"
	"github.com/entityenrich/enrich/cmd/enrich/internal/syncer"
)

// syncFlags are enrich sync's flags.
type syncFlags struct {
	database, target, credential string
	once, follow, snapshot       bool
	verify                       bool
	limit, leaseS                int
	listen, webhookSecret        string
	maxIdle                      time.Duration
}

func (c *cli) syncCmd() *cobra.Command {
	var f syncFlags
	cmd := &cobra.Command{
		Use:   "sync --database ID --target DSN",
		Short: "Replicate a registration's delta feed into a PostgreSQL database",
		Long: `sync is the reference consumer of a database registration's feed. It claims
a window of deltas, applies it to the target in one transaction together with
its watermark (table ee_sync_state of the target), commits, then acknowledges
it, and repeats. After a crash between commit and acknowledgement the window
comes again and is skipped up to the watermark, so nothing is applied twice.
A delta the target refuses rolls its window back; its batch is reported for
quarantine and the rest goes on.

It authenticates with the registration's database credential (--credential or
ENRICH_SYNC_CREDENTIAL: the refresh token of POST /api/databases/ID/credential,
exchanged for short-lived access tokens), or else like every other command
(ENRICH_API_KEY or the stored session).

--once (the default) catches up to the head of the feed and exits 0; --follow
keeps going, polling with backoff, and with --listen wakes at once when the
registration's delta webhook (pointed at that address) calls. --snapshot first
loads the snapshot into an empty target, in one transaction. --verify compares
the target with the server's checksum and exits 1 when they differ.`,
		Example: `  enrich sync --database DB_ID --target postgres://localhost/replica --snapshot
  ENRICH_SYNC_CREDENTIAL=eesr_... enrich sync --database DB_ID --target $REPLICA --follow
  enrich sync --database DB_ID --target $REPLICA --verify`,
		Args: args(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error { return c.sync(cmd.Context(), f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.database, "database", "", "the registration's id (required)")
	fl.StringVar(&f.target, "target", "", "the target PostgreSQL's connection string (required)")
	fl.StringVar(&f.credential, "credential", "", "the database credential's refresh token (default $ENRICH_SYNC_CREDENTIAL)")
	fl.BoolVar(&f.once, "once", false, "catch up to the head, then exit (the default)")
	fl.BoolVar(&f.follow, "follow", false, "keep following the feed")
	fl.BoolVar(&f.snapshot, "snapshot", false, "load the snapshot into an empty target first")
	fl.BoolVar(&f.verify, "verify", false, "compare the target with the server's checksum after syncing")
	fl.IntVar(&f.limit, "limit", 0, "deltas per window (default: the registration's page_limit)")
	fl.IntVar(&f.leaseS, "lease", 0, "lease of a window in seconds, 10 to 3600 (default: the server's, 120)")
	fl.StringVar(&f.listen, "listen", "", "with --follow: address (e.g. 127.0.0.1:8787) whose webhook calls wake the sync")
	fl.StringVar(&f.webhookSecret, "webhook-secret", "", "with --listen: check X-EE-Signature with this secret")
	fl.DurationVar(&f.maxIdle, "max-idle", 30*time.Second, "with --follow: the longest wait between polls at the head")
	return cmd
}

func (c *cli) sync(ctx context.Context, f syncFlags) error {
	switch {
	case f.database == "" || f.target == "":
		return usagef("sync needs --database and --target")
	case f.once && f.follow:
		return usagef("give --once or --follow, not both")
	case f.listen != "" && !f.follow:
		return usagef("--listen needs --follow")
	}
	cl, err := c.syncClient(f.credential)
	if err != nil {
		return err
	}
	cfg, err := pgx.ParseConfig(f.target)
	if err != nil {
		return usagef("--target: %v", err)
	}
	// A delta's SQL is a script: it runs as one Exec on the simple protocol.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect to the target: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	s := &syncer.Syncer{Feed: &syncer.HTTPFeed{Client: cl, DatabaseID: f.database, Limit: f.limit, LeaseS: f.leaseS},
		Target: conn, DatabaseID: f.database,
		Notice: func(format string, a ...any) { fmt.Fprintf(c.io.err, "\r\033[K"+format+"\n", a...) }}
	if !isTerminal(c.io.err) {
		s.Notice = func(format string, a ...any) { fmt.Fprintf(c.io.err, format+"\n", a...) }
	}
	view := c.syncView()
	s.Progress = view
	if f.snapshot {
		loaded, err := s.Bootstrap(ctx)
		if err != nil {
			return err
		}
		if loaded {
			fmt.Fprintf(c.io.err, "snapshot loaded as of delta %d\n", s.Stats().Watermark)
		}
	}
	o := syncer.Options{Follow: f.follow, MaxIdle: f.maxIdle, Reload: f.snapshot}
	if f.listen != "" {
		wake, stop, err := listenWebhook(f.listen, f.webhookSecret)
		if err != nil {
			return err
		}
		defer stop()
		o.Wake = wake
	}
	if err := s.Run(ctx, o); err != nil {
		return err
	}
	st := s.Stats()
	if isTerminal(c.io.err) {
		fmt.Fprintln(c.io.err)
	}
	if !c.quiet {
		fmt.Fprintf(c.io.out, "applied %d deltas, at delta %d (%d refused and reported)\n", st.Applied, st.Watermark, st.Refused)
	}
	if f.verify {
		return c.verify(ctx, s)
	}
	return nil
}

// syncClient authenticates with the database credential when there is one,
// else like every other command.
func (c *cli) syncClient(credential string) (*api.Client, error) {
	if credential == "" {
		credential = c.getenv("ENRICH_SYNC_CREDENTIAL")
	}
	if credential == "" {
		return c.api()
	}
	base := c.url
	if base == "" {
		base = c.getenv("ENRICH_URL")
	}
	if base == "" {
		base = defaultURL
	}
	return api.New(base, &syncer.Credential{RefreshToken: credential}), nil
}

// syncView draws the progress on a terminal (one line, redrawn): nothing
// otherwise.
func (c *cli) syncView() func(syncer.Stats) {
	if !isTerminal(c.io.err) {
		return nil
	}
	return func(st syncer.Stats) {
		lag := "caught up"
		if st.HasMore || st.CaughtUpAt.IsZero() {
			lag = "catching up"
		}
		if !st.LastAt.IsZero() && st.HasMore {
			lag = "lag " + time.Since(st.LastAt).Round(time.Second).String()
		}
		fmt.Fprintf(c.io.err, "\r\033[Kapplied %d · at delta %d · %s", st.Applied, st.Watermark, lag)
	}
}

func (c *cli) verify(ctx context.Context, s *syncer.Syncer) error {
	asOf, diffs, err := s.Verify(ctx)
	if err != nil {
		return err
	}
	if len(diffs) > 0 {
		return fmt.Errorf("the target differs from the server's checksum as of delta %d:\n  %s", asOf, strings.Join(diffs, "\n  "))
	}
	fmt.Fprintf(c.io.out, "checksum agrees as of delta %d\n", asOf)
	return nil
}

// listenWebhook serves addr: every POST (with a good X-EE-Signature when
// secret is set) wakes the sync.
func listenWebhook(addr, secret string) (<-chan struct{}, func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("--listen: %w", err)
	}
	wake := make(chan struct{}, 1)
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if r.Method != http.MethodPost || err != nil || (secret != "" && !signed(r.Header.Get("X-EE-Signature"), body, secret)) {
			http.Error(w, "refused", http.StatusUnauthorized)
			return
		}
		select {
		case wake <- struct{}{}:
		default:
		}
		w.WriteHeader(http.StatusNoContent)
	})}
	go func() { _ = srv.Serve(ln) }()
	return wake, func() { _ = srv.Close() }, nil
}

// signed checks "t=<unix>,v1=<hex HMAC-SHA256 of "<t>.<body>">".
func signed(header string, body []byte, secret string) bool {
	var t, v1 string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			t = v
		case "v1":
			v1 = v
		}
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(t + "." + string(body)))
	want := hex.EncodeToString(mac.Sum(nil))
	return t != "" && hmac.Equal([]byte(v1), []byte(want))
}

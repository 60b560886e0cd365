// Package enrich is the Entity Enrichment Service as a library: NewEmbedded
// returns the app services over memory adapters (or PostgreSQL when
// Config.DatabaseURL is set), and NewServer adds the HTTP API on top.
package enrich

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/entityenrich/enrich/adapters/cache"
	"github.com/entityenrich/enrich/adapters/eventhub"
	"github.com/entityenrich/enrich/adapters/httpapi"
	"github.com/entityenrich/enrich/adapters/jobrun"
	"github.com/entityenrich/enrich/adapters/metrics"
	"github.com/entityenrich/enrich/adapters/notify"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/ports"
)

var stderr = os.Stderr

// Stores are the repository adapters the services run on. Embedders may
// supply their own (for example to run the contract suites' fakes).
type Stores struct {
	Orgs    ports.OrgStore
	Users   ports.UserStore
	Keys    ports.APIKeyStore
	Schemas ports.SchemaStore
	Records ports.RecordStore
	Jobs    ports.JobStore
	Events  ports.EventLog
	// UoW runs writes that must agree in one transaction.
	UoW ports.UnitOfWork
	// Queue is the durable job queue.
	Queue ports.JobQueue
	// RefreshTokens keeps session refresh tokens.
	RefreshTokens ports.RefreshTokenStore
	// ProviderKeys keeps LLM provider keys (nil: kept in memory when Kind
	// is memory, and the log says so; refused for any other Kind).
	ProviderKeys ports.ProviderKeyStore
	// OrgProviders keeps organizations' own providers (nil: as
	// ProviderKeys).
	OrgProviders ports.ProviderStore
	// Usage is the LLM call ledger, written by UoW (Repos.Usage); this
	// handle reads it (nil: none kept).
	Usage ports.UsageLedger
	// LoginFailures, DeniedTokens and Invitations keep the login throttle's
	// counters, the denied access tokens and the registration invitations
	// (nil: kept in memory when Kind is memory; refused for any other Kind).
	LoginFailures ports.LoginThrottleStore
	DeniedTokens  ports.DeniedTokenStore
	Invitations   ports.InvitationStore
	// Databases keeps database registrations and their links (nil: kept
	// in memory when Kind is memory; database sync is off otherwise).
	Databases ports.DatabaseStore
	// Feed is the read side of the database-sync feeds (nil: the feed
	// routes answer 500).
	Feed ports.FeedStore
	// Subscriptions, Outbox and LinkWebhooks keep the notifications:
	// schema event subscriptions, the outbox of their deliveries (which
	// UoW's job ends queue to) and the links' delta webhooks (nil: kept in
	// memory when Kind is memory; refused for any other Kind).
	Subscriptions ports.SubscriptionStore
	Outbox        ports.Outbox
	LinkWebhooks  ports.LinkWebhookStore
	// Invalidations spreads cache invalidations between instances (nil: this
	// process is the only one).
	Invalidations ports.Invalidations
	// Credentials keeps the registrations' database credentials and
	// Snapshots reads a registration consistently (snapshot, checksum).
	Credentials ports.CredentialStore
	Snapshots   ports.SnapshotReader
	// Attachments keeps attachments' metadata and Blobs their bytes (nil:
	// kept in memory when Kind is memory; attachments are refused
	// otherwise). Config.BlobURL replaces Blobs with object storage.
	Attachments ports.AttachmentStore
	Blobs       ports.BlobStore
	// Concepts keeps the semantic concept vocabulary and Vectors its
	// embeddings; Reviews the pairs left to a person, ConceptLinks the
	// records' uses of concepts and EmbeddingSettings each organization's
	// embedding model (issue 30). A nil one leaves its part out.
	Concepts          ports.ConceptStore
	Vectors           ports.VectorIndex
	Reviews           ports.ConceptReviews
	ConceptLinks      ports.ConceptLinks
	EmbeddingSettings ports.EmbeddingSettings
	// ConceptMigrations keeps the embedding-model migrations and their
	// progress.
	ConceptMigrations ports.ConceptMigrations
	// Ready reports whether the storage answers (nil: always ready).
	Ready func(ctx context.Context) error
	// Kind names the storage for logs: memory or postgres.
	Kind string
	// Entities is the entity layer (database sync, issue 28).
	Entities ports.EntityStore
}

// Embedded is the service without HTTP: the app services, ready to call with
// an access.Principal, and their background work.
type Embedded struct {
	Access     *app.AccessService
	Schemas    *app.SchemaService
	Records    *app.RecordService
	Enrichment *app.EnrichmentService
	// Batches starts batches of enrichments.
	Batches *app.BatchService
	// Models lists the models, their availability and the pinned defaults.
	Models *app.ModelService
	// SchemaGen generates schemas from samples and applies AI edits.
	SchemaGen *app.SchemaGenService
	// Databases manages database registrations and their links.
	Databases *app.DatabaseService
	// Entities lists the entity layer and feeds records through it.
	Entities *app.EntityService
	// Fusion merges stored records into fused records.
	Fusion *app.FusionService
	Jobs   *app.JobService
	// ProviderKeys manages the organizations' and the global provider keys.
	ProviderKeys *app.ProviderKeyService
	// Costs answers the cost analytics from the usage ledger.
	Costs *app.CostService
	// Analysis runs the schema analyses (ambiguity, identity scoping).
	Analysis *app.AnalysisService
	// Samples generates sample objects of an entity type (a job).
	Samples *app.SampleService
	// Fetch fetches a batch's entities from a URL (SSRF-safe).
	Fetch *app.FetchService
	// OrgProviders manages organizations' own OpenAI-compatible providers.
	OrgProviders *app.OrgProviderService
	// Feed serves the database-sync delta feeds.
	Feed *app.FeedService
	// Consumer serves the database credential, the snapshot and the
	// checksum of database sync.
	Consumer *app.ConsumerService
	// Attachments resolves and reads jobs' attachments.
	Attachments *app.AttachmentLoader
	// AttachmentFiles uploads, lists, downloads and deletes attachments,
	// and manages the policies per media type.
	AttachmentFiles *app.AttachmentService
	// Concepts is the semantic concept vocabulary and its ladder.
	Concepts *app.ConceptService
	// ConceptMigrations moves an organization's concepts to another
	// embedding model.
	ConceptMigrations *app.ConceptMigrationService
	// Notifications manages schema event subscriptions and links' delta
	// webhooks.
	Notifications *app.NotificationService

	Stores *Stores
	Log    *slog.Logger
	// Metrics are the service's Prometheus metrics.
	Metrics *metrics.Metrics

	stream *eventhub.Hub
	engine *jobrun.Engine
	// dispatcher delivers the notifications (nil: this replica does not).
	dispatcher *notify.Dispatcher
	cfg        Config
	// The caches that other instances' changes reach (listen).
	schemaCache *cache.Schemas
	authCache   *cache.Auth
	// conceptRoutes keeps the organizations' concept routes.
	conceptRoutes *cache.ConceptRoutes
	denylist      *cache.Denylist

	stop    context.CancelFunc
	bg      sync.WaitGroup
	once    sync.Once
	cleanup func()
}

// RunningJobs lists the ids of the jobs running in this process.
func (e *Embedded) RunningJobs() []string { return e.engine.Running() }

// start launches the background work: the job engine (queue dispatch and
// lease renewal), the change listener, and the batched flush of access-key
// usage.
func (e *Embedded) start() error {
	ctx, cancel := context.WithCancel(context.Background())
	e.stop = cancel
	if err := e.engine.Start(ctx); err != nil {
		cancel()
		return err
	}
	if e.dispatcher != nil {
		e.dispatcher.Start()
	}
	e.bg.Add(3)
	go func() {
		defer e.bg.Done()
		e.purge(ctx)
	}()
	go func() {
		defer e.bg.Done()
		e.listen(ctx)
	}()
	go func() {
		defer e.bg.Done()
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := e.Access.FlushUsage(ctx); err != nil && ctx.Err() == nil {
					e.Log.Warn("flush key usage", "err", err)
				}
			}
		}
	}()
	return nil
}

// purge drops expired denylist entries and quiet login failures, every
// minute.
func (e *Embedded) purge(ctx context.Context) {
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := e.denylist.Purge(ctx); err != nil && ctx.Err() == nil {
				e.Log.Warn("purge denied access tokens", "err", err)
			}
			if err := e.Access.PurgeExpired(ctx); err != nil && ctx.Err() == nil {
				e.Log.Warn("purge login failures", "err", err)
			}
		}
	}
}

// listen applies other instances' changes: cache invalidations, new events
// of jobs followed here, and jobs that another instance ended.
func (e *Embedded) listen(ctx context.Context) {
	if e.Stores.Invalidations == nil {
		return
	}
	err := e.Stores.Invalidations.Listen(ctx, func(kind, id string) {
		switch kind {
		case "events":
			e.stream.Delivered(id)
		case "job":
			e.engine.Lost(id)
		case "cancel":
			e.engine.CancelRequested(id)
		default:
			// A cache's kind, or "*": the listener (re)connected, and
			// anything may have changed. Each cache takes its own.
			e.schemaCache.Forget(kind, id)
			e.authCache.Forget(kind, id)
			e.conceptRoutes.Forget(kind, id)
			e.denylist.Forget(kind, id)
		}
	})
	if err != nil {
		e.Log.Error("change listener", "err", err)
	}
}

// StopDispatcher stops this replica's notification dispatcher: its sends
// in flight are abandoned (their claims lapse to another replica's
// dispatcher). Close stops it too.
func (e *Embedded) StopDispatcher() {
	if e.dispatcher != nil {
		e.dispatcher.Stop()
	}
}

// Close lets running jobs finish for up to Config.ShutdownGrace, fails the
// rest with code shutdown, writes pending events and key usage, and closes
// the storage. It is safe to call more than once.
func (e *Embedded) Close() error {
	e.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), e.cfg.ShutdownGrace)
		defer cancel()
		if err := e.engine.Stop(ctx); err != nil {
			e.Log.Warn("jobs still running at the end of the grace period were stopped", "err", err)
		}
		e.StopDispatcher()
		e.stop()
		e.bg.Wait()
		fctx, fcancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer fcancel()
		if err := e.Access.FlushUsage(fctx); err != nil {
			e.Log.Warn("flush key usage at shutdown", "err", err)
		}
		e.stream.Close()
		if e.cleanup != nil {
			e.cleanup()
		}
	})
	return nil
}

// NewEmbedded builds the service on memory adapters, or on PostgreSQL when
// cfg.DatabaseURL is set (migrating it first). Call Close when done.
func NewEmbedded(ctx context.Context, cfg Config) (*Embedded, error) {
	cfg, warns, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	var e *Embedded
	var cleanup func()
	if cfg.DatabaseURL == "" {
		e, cleanup, err = initMemory(ctx, cfg)
	} else {
		e, cleanup, err = initPostgres(ctx, cfg)
	}
	if err != nil {
		return nil, err
	}
	return e.ready(cfg, warns, cleanup)
}

// NewEmbeddedWithStores builds the service on caller-supplied stores.
func NewEmbeddedWithStores(ctx context.Context, cfg Config, st *Stores) (*Embedded, error) {
	cfg, warns, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	e, cleanup, err := initWithStores(ctx, cfg, st)
	if err != nil {
		return nil, err
	}
	return e.ready(cfg, warns, cleanup)
}

func (e *Embedded) ready(cfg Config, warns []string, cleanup func()) (*Embedded, error) {
	e.cfg, e.cleanup = cfg, cleanup
	for _, w := range warns {
		e.Log.Warn(w)
	}
	if e.Stores.Kind == "memory" {
		e.Log.Warn("DATABASE_URL is empty: running on in-memory storage; nothing is kept when the process stops")
	}
	if cfg.Sandbox {
		e.Log.Info("sandbox models enabled (deterministic, no network)", "models", len(e.Models.Catalog.Models()))
	}
	if err := e.start(); err != nil {
		cleanup()
		return nil, err
	}
	return e, nil
}

// Server is the HTTP service around an Embedded core.
type Server struct {
	*Embedded
	HTTP *httpapi.Server
}

// NewServer builds the whole service with its HTTP API.
func NewServer(ctx context.Context, cfg Config) (*Server, error) {
	e, err := NewEmbedded(ctx, cfg)
	if err != nil {
		return nil, err
	}
	h, err := initHTTP(e)
	if err != nil {
		_ = e.Close()
		return nil, err
	}
	return &Server{Embedded: e, HTTP: h}, nil
}

// ListenAndServe serves until ctx ends, then shuts down gracefully: it stops
// accepting connections, lets jobs finish or fails them (which ends their
// event streams), and closes the rest.
func (s *Server) ListenAndServe(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return err
	}
	return s.Serve(ctx, ln)
}

// Serve is ListenAndServe on an existing listener.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.HTTP, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(s.Log.Handler(), slog.LevelWarn)}
	if s.cfg.MetricsAddr != "" {
		mln, err := net.Listen("tcp", s.cfg.MetricsAddr)
		if err != nil {
			_ = s.Close()
			return err
		}
		msrv := &http.Server{Handler: metricsOnly(s.Metrics.Handler(s.cfg.MetricsToken)), ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = msrv.Serve(mln) }()
		defer msrv.Close()
		s.Log.Info("metrics listening", "addr", mln.Addr().String())
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.Log.Info("listening", "addr", ln.Addr().String(), "storage", s.Stores.Kind)
	select {
	case err := <-errc:
		_ = s.Close()
		return err
	case <-ctx.Done():
	}
	s.Log.Info("shutting down")
	shut := make(chan error, 1)
	go func() {
		sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownGrace+5*time.Second)
		defer cancel()
		shut <- srv.Shutdown(sctx)
	}()
	err := s.Close()
	if serr := <-shut; serr != nil {
		_ = srv.Close()
		s.Log.Warn("connections closed forcibly", "err", serr)
	}
	if e := <-errc; e != nil && !errors.Is(e, http.ErrServerClosed) {
		return e
	}
	return err
}

// metricsOnly serves h at /metrics and nothing else.
func metricsOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

package enrich

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/google/wire"

	"github.com/entityenrich/enrich/adapters/blobstore"
	"github.com/entityenrich/enrich/adapters/cache"
	"github.com/entityenrich/enrich/adapters/crypto"
	"github.com/entityenrich/enrich/adapters/eventhub"
	"github.com/entityenrich/enrich/adapters/httpapi"
	"github.com/entityenrich/enrich/adapters/inspect"
	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/jobrun"
	"github.com/entityenrich/enrich/adapters/jsonschema"
	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/adapters/llmlimit"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/adapters/metrics"
	"github.com/entityenrich/enrich/adapters/netguard"
	"github.com/entityenrich/enrich/adapters/notify"
	"github.com/entityenrich/enrich/adapters/system"
	"github.com/entityenrich/enrich/adapters/urlfetch"
	"github.com/entityenrich/enrich/adapters/webhooks"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/domain/model"
	"github.com/entityenrich/enrich/domain/quota"
	"github.com/entityenrich/enrich/ports"
)

// coreSet builds the app services from a *Stores and a Config.
var coreSet = wire.NewSet(
	wire.FieldsOf(new(*Stores), "Orgs", "Users", "Keys", "Schemas", "Records", "Jobs", "Events", "UoW", "Queue", "RefreshTokens",
		"Usage", "Invalidations", "Databases"),
	provideEntityStore,
	provideLogger,
	wire.Struct(new(system.Clock)),
	wire.Bind(new(ports.Clock), new(system.Clock)),
	wire.Struct(new(system.IDs)),
	wire.Bind(new(ports.IDs), new(system.IDs)),
	provideCompiler,
	wire.Bind(new(ports.SchemaCompiler), new(*cache.Compiler)),
	provideRegistry,
	metrics.New,
	provideLLM,
	wire.Bind(new(ports.ModelCatalog), new(*llm.Registry)),
	wire.Bind(new(ports.Providers), new(*llm.Registry)),
	wire.Bind(new(ports.KeyTester), new(*llm.Registry)),
	wire.Bind(new(ports.ClientCache), new(*llm.Registry)),
	wire.Bind(new(ports.ProviderProbe), new(*llm.Registry)),
	provideCipher,
	wire.Bind(new(ports.Cipher), new(*crypto.Fernet)),
	providePasswords,
	wire.Bind(new(ports.Passwords), new(*crypto.Passwords)),
	provideTokens,
	provideStream,
	wire.Bind(new(ports.EventStream), new(*eventhub.Hub)),
	jobcodec.New,
	wire.Bind(new(app.JobRequests), new(jobcodec.Codec)),
	provideFetcher,
	provideProviderKeyStore,
	provideOrgProviderStore,
	provideKeyRing,
	provideSchemaCache,
	wire.Bind(new(ports.SchemaCache), new(*cache.Schemas)),
	provideAuthCache,
	wire.Bind(new(ports.AuthCache), new(*cache.Auth)),
	provideConceptRoutes,
	provideEnrichMemos,
	provideAccessConfig,
	provideAccessGuards,
	provideDenylist,
	provideConsumerService,
	provideBlobs,
	provideAttachmentLoader,
	provideAttachmentService,
	provideConceptService,
	provideConceptMigrator,
	provideConceptMigrationService,
	provideSchemaConfig,
	provideEnrichConfig,
	provideCallsConfig,
	provideSpendGuard,
	// The job runtime and the Runners of its jobs (which submit nothing).
	app.NewModelService,
	app.NewCalls,
	app.NewFuser,
	app.NewEnricher,
	app.NewSchemaGenerator,
	app.NewMerger,
	app.NewSampleGenerator,
	provideRunners,
	provideEngine,
	wire.Bind(new(ports.JobRunner), new(*jobrun.Engine)),
	// The use cases.
	app.NewAccessService,
	app.NewSchemaService,
	app.NewRecordService,
	app.NewJobService,
	app.NewEnrichmentService,
	app.NewBatchService,
	wire.Bind(new(app.BatchStarter), new(*app.BatchService)),
	app.NewSampleService,
	app.NewSchemaGenService,
	app.NewFusionService,
	app.NewCostService,
	app.NewAnalysisService,
	app.NewFetchService,
	app.NewProviderKeyService,
	app.NewOrgProviderService,
	app.NewDatabaseService,
	provideFeed,
	// Notifications.
	provideNotifyStores,
	wire.FieldsOf(new(notifyStores), "Subscriptions", "Outbox", "Links"),
	provideSender,
	wire.Bind(new(ports.WebhookSender), new(*webhooks.Sender)),
	app.NewNotificationService,
	provideSchemaEvents,
	provideDispatcher,
	provideEntityService,
	provideEmbedded,
)

func provideLogger(cfg Config) *slog.Logger { return cfg.logger() }

func provideRegistry(cfg Config) (*llm.Registry, error) {
	var overrides [][]byte
	if cfg.ModelCatalog != "" {
		raw, err := os.ReadFile(cfg.ModelCatalog)
		if err != nil {
			return nil, fmt.Errorf("ENRICH_MODEL_CATALOG: %w", err)
		}
		overrides = append(overrides, raw)
	}
	cat, err := llm.LoadCatalog(overrides...)
	if err != nil {
		return nil, fmt.Errorf("ENRICH_MODEL_CATALOG %s: %w", cfg.ModelCatalog, err)
	}
	return llm.NewRegistry(llm.Config{Providers: cfg.Providers, Catalog: cat, Sandbox: cfg.Sandbox, SandboxLatency: cfg.SandboxLatency,
		GuardedHTTPClient: llm.GuardedHTTPClientFor(netguard.Options{AllowLoopbackPorts: cfg.OrgProviderAllowLoopbackPorts}),
		ClientCacheSize:   cfg.Caches.Clients, SandboxPDFText: sandboxPDFText})
}

// sandboxPDFText has the sandbox models read a PDF's text layer as uploads
// are read (adapters/inspect), so a demo is grounded in the real text.
func sandboxPDFText(data []byte) (string, error) {
	return inspect.PDFText(bytes.NewReader(data), int64(len(data)))
}

// provideLLM is the provider registry with the call metrics around it,
// behind the per-provider concurrency limits (a call's wait for a slot is
// not part of its measured latency).
func provideLLM(cfg Config, reg *llm.Registry, m *metrics.Metrics) ports.LLM {
	limits := llmlimit.Limits{Overall: cfg.LLMConcurrency, PerOrg: cfg.LLMOrgConcurrency, Providers: map[string]int{},
		Exempt: []string{llm.SandboxProvider}}
	for _, p := range cfg.Providers {
		if p.Concurrency > 0 {
			limits.Providers[p.Name] = p.Concurrency
		}
	}
	return llmlimit.New(m.InstrumentLLM(reg, reg), limits)
}

// provideCipher seals provider keys with ENRICH_ENCRYPTION_KEYS (withDefaults
// has checked them, or generated one in development).
func provideCipher(cfg Config) (*crypto.Fernet, error) {
	return crypto.NewFernet(strings.Split(cfg.EncryptionKeys, ","))
}

// provideProviderKeyStore is the stores' provider-key store.
func provideProviderKeyStore(st *Stores, lg *slog.Logger) (ports.ProviderKeyStore, error) {
	if st.ProviderKeys == nil {
		if err := inMemory(st, lg, "ProviderKeys", "provider keys"); err != nil {
			return nil, err
		}
		st.ProviderKeys = memory.NewProviderKeyStore()
	}
	return st.ProviderKeys, nil
}

// provideOrgProviderStore is the stores' store of organizations' own
// providers.
func provideOrgProviderStore(st *Stores, lg *slog.Logger) (ports.ProviderStore, error) {
	if st.OrgProviders == nil {
		if err := inMemory(st, lg, "OrgProviders", "organizations' own providers"); err != nil {
			return nil, err
		}
		st.OrgProviders = memory.NewProviderStore()
	}
	return st.OrgProviders, nil
}

// inMemory decides for stores that lack the store of field: memory stores
// get a memory one, and the log says so; any other stores are refused,
// because what is saved there would vanish at the next restart while the
// rest of the data stayed.
func inMemory(st *Stores, lg *slog.Logger, field, what string) error {
	if st.Kind != "memory" {
		return fmt.Errorf("stores of kind %q have no %s store (Stores.%s): %s would be kept in memory only", st.Kind, what, field, what)
	}
	lg.Info("the stores have no store of "+what+": kept in memory", "field", field)
	return nil
}

func provideKeyRing(ks ports.ProviderKeyStore, c ports.Cipher, p ports.Providers, cc ports.ClientCache, clock ports.Clock, lg *slog.Logger,
	ops ports.ProviderStore) *app.KeyRing {
	return &app.KeyRing{Keys: ks, Cipher: c, Providers: p, Clients: cc, Clock: clock, Log: lg, Endpoints: ops}
}

func providePasswords(cfg Config) *crypto.Passwords {
	if cfg.PasswordHashing == "fast" {
		return crypto.NewPasswords(crypto.FastParams)
	}
	return crypto.NewPasswords(crypto.DefaultParams)
}

func provideStream(st *Stores, clock ports.Clock, lg *slog.Logger) (*eventhub.Hub, func()) {
	h := eventhub.New(st.UoW, st.Events, clock, lg, eventhub.Config{Announce: st.Invalidations})
	// Embedded.Close closes the hub in order; this is the backstop for an
	// injector that fails after creating it.
	return h, h.Close
}

// provideTokens signs session access tokens with ENRICH_JWT_SECRET.
func provideTokens(cfg Config, clock ports.Clock) ports.Tokens {
	return crypto.NewTokens([]byte(cfg.JWTSecret), cfg.AccessTokenTTL, clock.Now)
}

// provideFetcher fetches batches from customers' URLs through the SSRF
// guard; loopback ports are let through only when the configuration names
// them (tests).
func provideFetcher(cfg Config, lg *slog.Logger) ports.EntityFetcher {
	return urlfetch.New(urlfetch.Config{Guard: netguard.Options{AllowLoopbackPorts: cfg.FetchAllowLoopbackPorts}, Log: lg})
}

func provideAccessConfig(cfg Config) app.AccessConfig {
	return app.AccessConfig{AccessTTL: cfg.AccessTokenTTL, SysAdminEmails: cfg.SysAdminEmails, Registration: cfg.Registration}
}

// provideAccessGuards are the stores' login-throttle counters and
// invitations, kept in memory for memory stores, and the denylist.
func provideAccessGuards(st *Stores, lg *slog.Logger, d *cache.Denylist) (app.AccessGuards, error) {
	if st.LoginFailures == nil {
		if err := inMemory(st, lg, "LoginFailures", "login failures"); err != nil {
			return app.AccessGuards{}, err
		}
		st.LoginFailures = memory.NewLoginThrottleStore()
	}
	if st.Invitations == nil {
		if err := inMemory(st, lg, "Invitations", "invitations"); err != nil {
			return app.AccessGuards{}, err
		}
		st.Invitations = memory.NewInvitationStore()
	}
	return app.AccessGuards{Failures: st.LoginFailures, Denylist: d, Invitations: st.Invitations}, nil
}

// provideBlobs is where attachments' bytes live: object storage when
// ENRICH_BLOB_URL names it (closed with the service), else the stores' own
// blob store (PostgreSQL's attachment_blobs, memory for memory stores).
func provideBlobs(ctx context.Context, cfg Config, st *Stores, lg *slog.Logger) (ports.BlobStore, func(), error) {
	if cfg.BlobURL != "" {
		b, err := blobstore.Open(ctx, cfg.BlobURL)
		if err != nil {
			return nil, nil, fmt.Errorf("ENRICH_BLOB_URL: %w", err)
		}
		lg.Info("attachment bytes in object storage", "blob_storage", b.Name())
		st.Blobs = b
		return b, func() { _ = b.Close() }, nil
	}
	if st.Blobs == nil && st.Kind == "memory" {
		st.Blobs = memory.NewBlobStore()
	}
	if st.Blobs == nil {
		// An embedder's stores without a blob store: attachments are
		// refused (not_supported_yet), the rest of the service runs.
		lg.Info("the stores keep no attachment bytes: attachments are refused", "field", "Blobs")
		return nil, func() {}, nil
	}
	lg.Info("attachment bytes in the stores", "blob_storage", st.Kind)
	return st.Blobs, func() {}, nil
}

// provideConceptService runs the semantic concept vocabulary on the
// stores' concept adapters, embedding through the registry (langchaingo's
// embedders, and the built-in one) with the organizations' keys.
func provideConceptService(cfg Config, st *Stores, routes *cache.ConceptRoutes, reg *llm.Registry, keys *app.KeyRing, guard *app.SpendGuard,
	clock ports.Clock, ids ports.IDs, lg *slog.Logger) (*app.ConceptService, error) {
	// A Config built in code (the embedded library, tests) has no env
	// default: the built-in embedder, as ENRICH_EMBEDDING_MODEL's.
	def, err := model.ParseKey(cmp.Or(cfg.EmbeddingModel, "builtin::ngram-384"))
	if err != nil {
		return nil, fmt.Errorf("ENRICH_EMBEDDING_MODEL: %w", err)
	}
	s := &app.ConceptService{Store: st.Concepts, Vectors: st.Vectors, Reviews: st.Reviews, Links: st.ConceptLinks,
		Settings: routes.Settings(), Schemas: st.Schemas, Databases: st.Databases, Embedder: reg, Catalog: reg, Usage: st.Usage,
		Keys: keys, Guard: guard, DefaultModel: def, Clock: clock, IDs: ids, Log: lg, UoW: st.UoW, Entities: st.Entities,
		Migrations: routes.Migrations(), Records: st.Records}
	if cfg.ConceptJudgeModel != "" {
		k, err := model.ParseKey(cfg.ConceptJudgeModel)
		if err != nil {
			return nil, fmt.Errorf("ENRICH_CONCEPT_JUDGE_MODEL: %w", err)
		}
		info, err := reg.Model(k)
		if err != nil {
			return nil, fmt.Errorf("ENRICH_CONCEPT_JUDGE_MODEL: %w", err)
		}
		s.Judge = &app.LLMConceptJudge{LLM: reg, Model: info, Keys: keys, Usage: st.Usage, Clock: clock, IDs: ids, Log: lg}
	}
	return s, nil
}

// provideConceptMigrator is the Runner of the embedding-model migrations.
func provideConceptMigrator(cs *app.ConceptService, clock ports.Clock, lg *slog.Logger) *app.ConceptMigrator {
	return &app.ConceptMigrator{Concepts: cs, Store: cs.Migrations, Clock: clock, Log: lg}
}

// provideConceptRoutes is the cache of what routes each organization's
// concept lookups to an embedding model (ConceptRouteCacheTTL 0: reads
// go to the stores). The concept service and the migrator write through
// it.
func provideConceptRoutes(cfg Config, st *Stores, clock ports.Clock, lg *slog.Logger) *cache.ConceptRoutes {
	return cache.NewConceptRoutes(st.EmbeddingSettings, st.ConceptMigrations, st.Invalidations, clock, lg,
		cache.ConceptRouteConfig{TTL: cfg.ConceptRouteCacheTTL, MaxEntries: cfg.Caches.ConceptRoutes})
}

// provideConceptMigrationService answers the migration routes and submits
// the migrations' jobs.
func provideConceptMigrationService(st *Stores, cm *app.ConceptMigrator, jr ports.JobRunner, reg *llm.Registry,
	ids ports.IDs) *app.ConceptMigrationService {
	return &app.ConceptMigrationService{ConceptMigrator: cm, JobRunner: jr, Jobs: st.Jobs, Catalog: reg, IDs: ids}
}

// provideAttachmentLoader resolves jobs' attachment_ids against the stores'
// attachments (none: attachment_ids is refused as not supported).
func provideAttachmentLoader(st *Stores, blobs ports.BlobStore) *app.AttachmentLoader {
	if blobs == nil {
		return &app.AttachmentLoader{}
	}
	return &app.AttachmentLoader{Store: st.Attachments, Blobs: blobs}
}

// provideAttachmentService uploads and serves attachments: their bytes in
// blobs, their text read by the inspector, within the configured limits.
func provideAttachmentService(cfg Config, st *Stores, blobs ports.BlobStore, clock ports.Clock, ids ports.IDs,
	lg *slog.Logger) *app.AttachmentService {
	return app.NewAttachmentService(st.Attachments, blobs, inspect.New(), clock, ids, lg,
		app.AttachmentLimits{MaxBytes: cfg.AttachmentMaxBytes, MaxRequestBytes: cfg.AttachmentMaxRequestBytes})
}

// provideConsumerService serves the database credential (its access
// tokens signed with ENRICH_JWT_SECRET as their own token type, living as
// long as session access tokens), the snapshot and the checksum.
func provideConsumerService(cfg Config, st *Stores, clock ports.Clock, ids ports.IDs, lg *slog.Logger, d *cache.Denylist) *app.ConsumerService {
	tokens := crypto.NewTokens([]byte(cfg.JWTSecret), cfg.AccessTokenTTL, clock.Now).WithType("database")
	if st.Credentials == nil || st.Snapshots == nil {
		// An embedder's stores without database sync: nothing registered.
		sync := memory.NewSyncStore()
		st.Credentials, st.Snapshots = memory.NewCredentialStore(sync), sync
	}
	return app.NewConsumerService(st.Credentials, st.Snapshots, tokens, d, clock, ids, lg, cfg.AccessTokenTTL)
}

// provideDenylist is the process's denylist of revoked access tokens,
// loaded from the stores and kept current through Invalidations.
func provideDenylist(ctx context.Context, st *Stores, clock ports.Clock, lg *slog.Logger) (*cache.Denylist, error) {
	if st.DeniedTokens == nil {
		if err := inMemory(st, lg, "DeniedTokens", "denied access tokens"); err != nil {
			return nil, err
		}
		st.DeniedTokens = memory.NewDeniedTokenStore()
	}
	return cache.NewDenylist(ctx, st.DeniedTokens, st.Invalidations, clock, lg)
}

func provideSchemaConfig(cfg Config) app.SchemaConfig {
	return app.SchemaConfig{RestoreWindow: cfg.SchemaRestoreWindow}
}

func provideEnrichConfig(cfg Config) app.EnrichConfig {
	return app.EnrichConfig{MaxAttempts: cfg.LLMAttempts, BatchMaxEntities: cfg.BatchMaxEntities, BatchConcurrency: cfg.BatchConcurrency,
		MaxDomains: cfg.MaxExpertiseDomains}
}

func provideCallsConfig(cfg Config) app.CallsConfig {
	return app.CallsConfig{MaxPerJob: cfg.MaxCallsPerJob}
}

// provideSpendGuard is the guard of every spend: the operator's quotas
// per organization, read from the usage ledger (each organization's count
// reused for a second). Billing's plan limits join it as another check.
func provideSpendGuard(cfg Config, st *Stores, clock ports.Clock) *app.SpendGuard {
	limits := quota.Limits{}
	if cfg.QuotaCallsPerDay != nil {
		limits.CallsPerDay = *cfg.QuotaCallsPerDay
	}
	if cfg.QuotaTokensPerDay != nil {
		limits.TokensPerDay = *cfg.QuotaTokensPerDay
	}
	spent := cache.NewMemo[app.SpentKey, quota.Spent](cfg.Caches.QuotaCounts)
	return app.NewSpendGuard(app.NewOperatorQuota(app.QuotaConfig{Limits: limits}, st.Usage, clock, spent))
}

// provideSchemaCache is the one schema cache of the process: job starts
// read through it, and every service that writes schemas tells it.
func provideSchemaCache(cfg Config, st *Stores, clock ports.Clock, lg *slog.Logger) *cache.Schemas {
	return cache.NewSchemas(st.Schemas, st.Invalidations, clock, lg, cache.SchemaConfig{TTL: cfg.SchemaCacheTTL, MaxBytes: cfg.Caches.SchemaBytes})
}

// provideAuthCache is the cache of the keys and users that authenticate
// requests (AuthCacheTTL 0: reads go to the stores).
func provideAuthCache(cfg Config, st *Stores, clock ports.Clock, lg *slog.Logger) *cache.Auth {
	return cache.NewAuth(st.Keys, st.Users, st.Invalidations, clock, lg, cache.AuthConfig{TTL: cfg.AuthCacheTTL, MaxEntries: cfg.Caches.AuthEntries})
}

// provideCompiler compiles JSON Schemas held to the schema limits, and
// keeps them by content.
func provideCompiler(cfg Config) *cache.Compiler {
	return cache.NewCompiler(jsonschema.New(cfg.schemaLimits()), cfg.Caches.Validators)
}

// provideEnrichMemos keep the decoded contracts and the run shapes.
func provideEnrichMemos(cfg Config) app.EnrichMemos {
	return app.EnrichMemos{Contracts: cache.NewMemo[[32]byte, map[string]any](cfg.Caches.Shapes),
		Shapes: cache.NewMemo[string, *app.Shape](cfg.Caches.Shapes)}
}

// provideRunners is the table from job type to the Runner of its jobs,
// handed to the job runtime.
// The runs that store enrichment records queue their schema events with
// their end (SchemaEvents).
func provideRunners(enr *app.Enricher, sg *app.SchemaGenerator, mg *app.Merger, smp *app.SampleGenerator, se *app.SchemaEvents,
	cm *app.ConceptMigrator) jobrun.Runners {
	return jobrun.Runners{
		job.TypeEnrichment:       se.Wrap(enr),
		job.TypeBatchEnrichment:  se.Wrap(enr.BatchRunner()),
		job.TypeSchemaGeneration: sg,
		job.TypeSchemaEdit:       sg,
		job.TypeFusion:           se.Wrap(mg),
		job.TypeSampleGeneration: smp,
		job.TypeConceptMigration: cm,
	}
}

func provideEngine(cfg Config, st *Stores, s ports.EventStream, clock ports.Clock, lg *slog.Logger, m *metrics.Metrics,
	runners jobrun.Runners) *jobrun.Engine {
	return jobrun.New(jobrun.Deps{UoW: st.UoW, Jobs: st.Jobs, Events: st.Events, Queue: st.Queue, Stream: s, Clock: clock, Log: lg,
		Invalidations: st.Invalidations, Observer: m},
		jobrun.Config{Owner: replicaName(), LeaseTTL: cfg.LeaseTTL, Workers: cfg.Workers, PerOrg: cfg.PerOrgWorkers,
			MaxAttempts: cfg.JobAttempts, ReleaseAtShutdown: st.Kind != "memory"},
		runners)
}

// replicaName names this process in job leases: host, pid and a random
// suffix (a restarted process is a new owner).
func replicaName() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

func provideEmbedded(st *Stores, a *app.AccessService, sc *app.SchemaService, rc *app.RecordService, en *app.EnrichmentService,
	bs *app.BatchService, ms *app.ModelService,
	js *app.JobService, pk *app.ProviderKeyService, cs *app.CostService, an *app.AnalysisService, smp *app.SampleService,
	sg *app.SchemaGenService, fs *app.FetchService, fu *app.FusionService, h *eventhub.Hub, eng *jobrun.Engine, lg *slog.Logger,
	m *metrics.Metrics, op *app.OrgProviderService, scc *cache.Schemas, ac *cache.Auth, dl *cache.Denylist, cr *cache.ConceptRoutes,
	dbs *app.DatabaseService,
	fd *app.FeedService, cons *app.ConsumerService,
	ns *app.NotificationService, nd *notify.Dispatcher, ent *app.EntityService, al *app.AttachmentLoader,
	af *app.AttachmentService, cpt *app.ConceptService, cmg *app.ConceptMigrationService) *Embedded {
	m.WatchRunning(func() int { return len(eng.Running()) })
	return &Embedded{Access: a, Schemas: sc, Records: rc, Enrichment: en, Batches: bs, Models: ms, Jobs: js, ProviderKeys: pk, Costs: cs,
		Analysis: an, Samples: smp, SchemaGen: sg, Fetch: fs, Fusion: fu, Stores: st, Log: lg, Metrics: m, stream: h, engine: eng,
		OrgProviders: op, schemaCache: scc, authCache: ac, denylist: dl, conceptRoutes: cr, Databases: dbs, Feed: fd, Consumer: cons,
		Notifications: ns, dispatcher: nd, Entities: ent, Attachments: al, AttachmentFiles: af,
		Concepts: cpt, ConceptMigrations: cmg}
}

// provideFeed is the feed's use cases on the stores' feed.
func provideFeed(st *Stores, clock ports.Clock, ids ports.IDs) *app.FeedService {
	return app.NewFeedService(st.Feed, clock, ids)
}

// provideEntityStore is the stores' entity layer with the registrations
// of each schema read through the schema cache (an enrichment's decision
// then costs no round trip).
func provideEntityStore(st *Stores, scc *cache.Schemas) ports.EntityStore {
	return scc.Entities(st.Entities)
}

// provideEntityService is the entity layer's use cases, with the stores'
// feed for a reinject.
func provideEntityService(st *Stores, schemas ports.SchemaStore, records ports.RecordStore, uow ports.UnitOfWork,
	compiler ports.SchemaCompiler, clock ports.Clock, ids ports.IDs, events *app.SchemaEvents) *app.EntityService {
	s := app.NewEntityService(st.Entities, schemas, records, uow, compiler, st.Feed, clock, ids)
	// sync-to-database announces what it writes as an enrichment does.
	s.Events = events
	return s
}

// httpSet builds the HTTP API from an Embedded core.
var httpSet = wire.NewSet(
	wire.FieldsOf(new(*Embedded), "Log"),
	eventCodecSet,
	provideServices,
	provideHTTPConfig,
	provideReadiness,
	httpapi.NewServer,
)

// provideServices hands the HTTP API the app services it serves.
func provideServices(e *Embedded) httpapi.Services {
	return httpapi.Services{Access: e.Access, Schemas: e.Schemas, Records: e.Records, Enrichment: e.Enrichment, Batches: e.Batches,
		Models: e.Models, Jobs: e.Jobs,
		ProviderKeys: e.ProviderKeys, Costs: e.Costs, Analysis: e.Analysis, Samples: e.Samples,
		SchemaGen: e.SchemaGen, Fetch: e.Fetch, Fusion: e.Fusion, OrgProviders: e.OrgProviders, Databases: e.Databases, Feed: e.Feed, Consumer: e.Consumer,
		Notifications: e.Notifications, Entities: e.Entities, Attachments: e.AttachmentFiles,
		Concepts: e.Concepts, ConceptMigrations: e.ConceptMigrations}
}

func provideHTTPConfig(e *Embedded) httpapi.Config {
	// withDefaults has checked the proxies.
	proxies, _ := httpapi.ParseTrustedProxies(e.cfg.TrustedProxies)
	c := httpapi.Config{MaxBodyBytes: e.cfg.MaxBodyBytes, SSEHeartbeat: e.cfg.SSEHeartbeat, Observer: e.Metrics, TrustedProxies: proxies}
	if e.cfg.MetricsAddr == "" {
		c.Metrics = e.Metrics.Handler(e.cfg.MetricsToken)
	}
	return c
}

func provideReadiness(e *Embedded) httpapi.Readiness { return e.Stores.Ready }

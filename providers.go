package enrich

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/google/wire"

	"github.com/entityenrich/enrich/adapters/cache"
	"github.com/entityenrich/enrich/adapters/crypto"
	"github.com/entityenrich/enrich/adapters/eventhub"
	"github.com/entityenrich/enrich/adapters/httpapi"
	"github.com/entityenrich/enrich/adapters/jobcodec"
	"github.com/entityenrich/enrich/adapters/jobrun"
	"github.com/entityenrich/enrich/adapters/jsonschema"
	"github.com/entityenrich/enrich/adapters/llm"
	"github.com/entityenrich/enrich/adapters/llmlimit"
	"github.com/entityenrich/enrich/adapters/memory"
	"github.com/entityenrich/enrich/adapters/metrics"
	"github.com/entityenrich/enrich/adapters/netguard"
	"github.com/entityenrich/enrich/adapters/system"
	"github.com/entityenrich/enrich/adapters/urlfetch"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/domain/access"
	"github.com/entityenrich/enrich/domain/job"
	"github.com/entityenrich/enrich/ports"
)

// coreSet builds the app services from a *Stores and a Config.
var coreSet = wire.NewSet(
	wire.FieldsOf(new(*Stores), "Orgs", "Users", "Keys", "Schemas", "Records", "Jobs", "Events", "UoW", "Queue"),
	provideLogger,
	wire.Struct(new(system.Clock)),
	wire.Bind(new(ports.Clock), new(system.Clock)),
	wire.Struct(new(system.IDs)),
	wire.Bind(new(ports.IDs), new(system.IDs)),
	jsonschema.New,
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
	provideProviderKeyStore,
	provideKeyRing,
	provideProviderKeys,
	provideOrgProviderStore,
	provideOrgProviders,
	providePasswords,
	wire.Bind(new(ports.Passwords), new(*crypto.Passwords)),
	provideStream,
	wire.Bind(new(ports.EventStream), new(*eventhub.Hub)),
	provideEngine,
	wire.Bind(new(ports.JobRunner), new(*jobrun.Engine)),
	jobcodec.New,
	wire.Bind(new(app.JobRequests), new(jobcodec.Codec)),
	provideAuthCache,
	wire.Bind(new(ports.AuthCache), new(*cache.Auth)),
	provideAccess,
	provideSchemaCache,
	wire.Bind(new(ports.SchemaCache), new(*cache.Schemas)),
	provideSchemas,
	provideRecords,
	provideJobs,
	provideEnrichment,
	provideCosts,
	provideAnalysis,
	provideSamples,
	provideSchemaGen,
	provideFetch,
	provideFusion,
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
		GuardedHTTPClient: llm.GuardedHTTPClientFor(netguard.Options{AllowLoopbackPorts: cfg.OrgProviderAllowLoopbackPorts})})
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
	return llmlimit.New(m.InstrumentLLM(reg), limits)
}

// provideCipher seals provider keys with ENRICH_ENCRYPTION_KEYS (withDefaults
// has checked them, or generated one in development).
func provideCipher(cfg Config) (*crypto.Fernet, error) {
	return crypto.NewFernet(strings.Split(cfg.EncryptionKeys, ","))
}

// provideProviderKeyStore is the stores' provider-key store; caller-supplied
// stores without one keep provider keys in memory.
func provideProviderKeyStore(st *Stores) ports.ProviderKeyStore {
	if st.ProviderKeys == nil {
		st.ProviderKeys = memory.NewProviderKeyStore()
	}
	return st.ProviderKeys
}

func provideKeyRing(ks ports.ProviderKeyStore, c ports.Cipher, p ports.Providers, cc ports.ClientCache, clock ports.Clock, lg *slog.Logger,
	ops ports.ProviderStore) *app.KeyRing {
	return &app.KeyRing{Keys: ks, Cipher: c, Providers: p, Clients: cc, Clock: clock, Log: lg, Endpoints: ops}
}

func provideProviderKeys(st *Stores, ks ports.ProviderKeyStore, c ports.Cipher, p ports.Providers, t ports.KeyTester,
	cc ports.ClientCache, clock ports.Clock, ids ports.IDs, lg *slog.Logger) *app.ProviderKeyService {
	return &app.ProviderKeyService{Keys: ks, Cipher: c, Providers: p, Tester: t, Clients: cc, Ledger: st.Usage, Clock: clock,
		IDs: ids, Log: lg}
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

func provideEngine(cfg Config, st *Stores, s ports.EventStream, clock ports.Clock, lg *slog.Logger, m *metrics.Metrics) *jobrun.Engine {
	return &jobrun.Engine{Observer: m, UoW: st.UoW, Jobs: st.Jobs, Events: st.Events, Queue: st.Queue, Stream: s, Clock: clock, Log: lg,
		Invalidations: st.Invalidations, Owner: replicaName(), LeaseTTL: cfg.LeaseTTL, Workers: cfg.Workers, PerOrg: cfg.PerOrgWorkers,
		MaxAttempts: cfg.JobAttempts, ReleaseAtShutdown: st.Kind != "memory", Runners: map[job.Type]ports.Runner{}}
}

// replicaName names this process in job leases: host, pid and a random
// suffix (a restarted process is a new owner).
func replicaName() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// provideCompiler keeps the compiled JSON Schemas by content.
func provideCompiler(cfg Config, c *jsonschema.Compiler) *cache.Compiler {
	return cache.NewCompiler(c, cfg.Caches.Validators)
}

// provideAuthCache is the cache of the keys and users that authenticate
// requests (AuthCacheTTL 0: reads go to the stores).
func provideAuthCache(cfg Config, st *Stores, clock ports.Clock, lg *slog.Logger) *cache.Auth {
	return cache.NewAuth(st.Keys, st.Users, st.Invalidations, clock, lg, cache.AuthConfig{TTL: cfg.AuthCacheTTL, MaxEntries: cfg.Caches.AuthEntries})
}

func provideAccess(cfg Config, st *Stores, ac ports.AuthCache, pw ports.Passwords, clock ports.Clock, ids ports.IDs, lg *slog.Logger) *app.AccessService {
	now := func() time.Time { return clock.Now() }
	admins := map[string]bool{}
	for _, e := range cfg.SysAdminEmails {
		if e = strings.ToLower(strings.TrimSpace(e)); e != "" {
			admins[e] = true
		}
	}
	return &app.AccessService{UoW: st.UoW, Orgs: st.Orgs, Users: st.Users, Keys: st.Keys, Passwords: pw,
		Access: crypto.NewTokens([]byte(cfg.JWTSecret), cfg.AccessTokenTTL, now), RefreshTokens: st.RefreshTokens,
		Throttle: access.NewThrottle(), SysAdminEmails: admins, Cache: ac,
		Clock: clock, IDs: ids, Log: lg, AccessTTL: cfg.AccessTokenTTL}
}

// provideSchemaCache is the one schema cache of the process: job starts
// read through it, and every service that writes schemas tells it.
func provideSchemaCache(cfg Config, st *Stores, clock ports.Clock, lg *slog.Logger) *cache.Schemas {
	return cache.NewSchemas(st.Schemas, st.Invalidations, clock, lg, cache.SchemaConfig{TTL: cfg.SchemaCacheTTL, MaxBytes: cfg.Caches.SchemaBytes})
}

func provideSchemas(cfg Config, st *Stores, sc ports.SchemaCache, c ports.SchemaCompiler, clock ports.Clock, ids ports.IDs) *app.SchemaService {
	return &app.SchemaService{Schemas: st.Schemas, Records: st.Records, UoW: st.UoW, Compiler: c, Clock: clock, IDs: ids,
		RestoreWindow: cfg.SchemaRestoreWindow, SchemaCache: sc}
}

func provideRecords(st ports.RecordStore, clock ports.Clock) *app.RecordService {
	return &app.RecordService{Records: st, Clock: clock}
}

func provideJobs(st *Stores, jr ports.JobRunner, s ports.EventStream, lg *slog.Logger) *app.JobService {
	return &app.JobService{Jobs: st.Jobs, EventLog: st.Events, JobRunner: jr, Stream: s, Log: lg}
}

func provideEnrichment(cfg Config, st *Stores, sch ports.SchemaCache, en *jobrun.Engine, s ports.EventStream, js *app.JobService, l ports.LLM,
	cat ports.ModelCatalog, c ports.SchemaCompiler, kr *app.KeyRing, reqs app.JobRequests, clock ports.Clock, ids ports.IDs,
	lg *slog.Logger) *app.EnrichmentService {
	svc := &app.EnrichmentService{Schemas: st.Schemas, SchemaCache: sch, Orgs: st.Orgs, JobRunner: en, Stream: s, JobSvc: js, Requests: reqs,
		LLM: l, Catalog: cat, Compiler: c, Keys: kr, Clock: clock, IDs: ids, Log: lg, MaxAttempts: cfg.LLMAttempts,
		BatchMaxEntities: cfg.BatchMaxEntities, BatchConcurrency: cfg.BatchConcurrency,
		Contracts: cache.NewMemo[[32]byte, map[string]any](cfg.Caches.Shapes), Shapes: cache.NewMemo[string, *app.Shape](cfg.Caches.Shapes)}
	en.Runners[job.TypeEnrichment] = svc
	en.Runners[job.TypeBatchEnrichment] = svc.BatchRunner()
	return svc
}

func provideCosts(st *Stores, clock ports.Clock) *app.CostService {
	return &app.CostService{Ledger: st.Usage, Clock: clock}
}

// provideSchemaGen is the Runner of schema generation and AI edit jobs.
func provideSchemaGen(st *Stores, en *jobrun.Engine, s ports.EventStream, js *app.JobService, enr *app.EnrichmentService,
	sc *app.SchemaService, c ports.SchemaCompiler, clock ports.Clock, ids ports.IDs, lg *slog.Logger) *app.SchemaGenService {
	svc := &app.SchemaGenService{Enrich: enr, Schemas: st.Schemas, Saved: sc, Compiler: c, JobRunner: en, Stream: s, JobSvc: js,
		Clock: clock, IDs: ids, Log: lg, SchemaCache: sc.SchemaCache}
	en.Runners[job.TypeSchemaGeneration] = svc
	en.Runners[job.TypeSchemaEdit] = svc
	return svc
}

// provideFusion builds the merge of stored records, the Runner of fusion
// jobs.
func provideFusion(st *Stores, en *jobrun.Engine, s ports.EventStream, js *app.JobService, enr *app.EnrichmentService,
	clock ports.Clock, ids ports.IDs, lg *slog.Logger) *app.FusionService {
	svc := &app.FusionService{Enrich: enr, Records: st.Records, JobRunner: en, Stream: s, JobSvc: js, Clock: clock, IDs: ids, Log: lg}
	en.Runners[job.TypeFusion] = svc
	return svc
}

// provideSamples builds sample generation, the Runner of its jobs.
func provideSamples(en *jobrun.Engine, enr *app.EnrichmentService, s ports.EventStream, js *app.JobService, clock ports.Clock,
	ids ports.IDs, lg *slog.Logger) *app.SampleService {
	svc := &app.SampleService{Enrich: enr, JobRunner: en, Stream: s, JobSvc: js, Clock: clock, IDs: ids, Log: lg}
	en.Runners[job.TypeSampleGeneration] = svc
	return svc
}

func provideEmbedded(st *Stores, a *app.AccessService, sc *app.SchemaService, rc *app.RecordService, en *app.EnrichmentService,
	js *app.JobService, pk *app.ProviderKeyService, cs *app.CostService, an *app.AnalysisService, smp *app.SampleService,
	sg *app.SchemaGenService, fs *app.FetchService, fu *app.FusionService, h *eventhub.Hub, eng *jobrun.Engine, lg *slog.Logger,
	m *metrics.Metrics, op *app.OrgProviderService, scc *cache.Schemas, ac *cache.Auth) *Embedded {
	m.WatchRunning(func() int { return len(eng.Running()) })
	return &Embedded{Access: a, Schemas: sc, Records: rc, Enrichment: en, Jobs: js, ProviderKeys: pk, Costs: cs, Analysis: an,
		Samples: smp, SchemaGen: sg, Fetch: fs, Fusion: fu, Stores: st, Log: lg, Metrics: m, stream: h, engine: eng, OrgProviders: op,
		schemaCache: scc, authCache: ac}
}

func provideAnalysis(st *Stores, sch ports.SchemaCache, l ports.LLM, cat ports.ModelCatalog, c ports.SchemaCompiler, kr *app.KeyRing,
	clock ports.Clock, ids ports.IDs, lg *slog.Logger) *app.AnalysisService {
	return &app.AnalysisService{Schemas: st.Schemas, Records: st.Records, UoW: st.UoW, LLM: l, Catalog: cat, Compiler: c,
		Keys: kr, Orgs: st.Orgs, Clock: clock, IDs: ids, Log: lg, SchemaCache: sch}
}

// provideFetch fetches batches from customers' URLs through the SSRF guard;
// loopback ports are let through only when the configuration names them
// (tests).
func provideFetch(cfg Config, en *app.EnrichmentService, clock ports.Clock) *app.FetchService {
	f := urlfetch.New(urlfetch.Config{Guard: netguard.Options{AllowLoopbackPorts: cfg.FetchAllowLoopbackPorts}})
	return &app.FetchService{Fetcher: f, Batches: en, MaxEntities: cfg.BatchMaxEntities, Clock: clock}
}

// httpSet builds the HTTP API from an Embedded core.
var httpSet = wire.NewSet(
	wire.FieldsOf(new(*Embedded), "Log"),
	provideServices,
	provideHTTPConfig,
	provideReadiness,
	httpapi.NewServer,
)

// provideServices hands the HTTP API the app services it serves.
func provideServices(e *Embedded) httpapi.Services {
	return httpapi.Services{Access: e.Access, Schemas: e.Schemas, Records: e.Records, Enrichment: e.Enrichment, Jobs: e.Jobs,
		ProviderKeys: e.ProviderKeys, Costs: e.Costs, Analysis: e.Analysis, Samples: e.Samples,
		SchemaGen: e.SchemaGen, Fetch: e.Fetch, Fusion: e.Fusion, OrgProviders: e.OrgProviders}
}

func provideHTTPConfig(e *Embedded) httpapi.Config {
	c := httpapi.Config{MaxBodyBytes: e.cfg.MaxBodyBytes, SSEHeartbeat: e.cfg.SSEHeartbeat, Observer: e.Metrics}
	if e.cfg.MetricsAddr == "" {
		c.Metrics = e.Metrics.Handler()
	}
	return c
}

func provideReadiness(e *Embedded) httpapi.Readiness { return e.Stores.Ready }

// provideOrgProviderStore is the stores' store of organizations' own
// providers; caller-supplied stores without one get a memory store.
func provideOrgProviderStore(st *Stores) ports.ProviderStore {
	if st.OrgProviders == nil {
		st.OrgProviders = memory.NewProviderStore()
	}
	return st.OrgProviders
}

// provideOrgProviders manages organizations' own providers; their
// endpoints are reached through the registry's SSRF-guarded client.
func provideOrgProviders(ps ports.ProviderStore, c ports.Cipher, p ports.Providers, probe ports.ProviderProbe, cc ports.ClientCache,
	clock ports.Clock, ids ports.IDs, lg *slog.Logger) *app.OrgProviderService {
	return &app.OrgProviderService{Store: ps, Cipher: c, Providers: p, Probe: probe, Clients: cc, Clock: clock, IDs: ids, Log: lg}
}

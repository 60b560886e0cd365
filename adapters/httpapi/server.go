package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/gorilla/mux"

	"github.com/entityenrich/enrich/adapters/httpapi/api"
	"github.com/entityenrich/enrich/app"
	"github.com/entityenrich/enrich/ports"
)

// The HTTP surface's defaults, for a zero Config field (the service's
// configuration takes them from here).
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultSSEHeartbeat = 15 * time.Second
)

// Config tunes the HTTP surface.
type Config struct {
	// MaxBodyBytes bounds request bodies (default DefaultMaxBodyBytes);
	// past it: 413.
	MaxBodyBytes int64
	// SSEHeartbeat is the interval of comment heartbeats on event streams
	// (default DefaultSSEHeartbeat).
	SSEHeartbeat time.Duration
	// SSEWriteTimeout bounds one write to a stream client (default 10 s).
	SSEWriteTimeout time.Duration
	// Observer receives every request's route, status and latency (nil:
	// nobody).
	Observer Observer
	// TrustedProxies are the proxies whose X-Forwarded-For names the client
	// (ParseTrustedProxies; none: the peer is the client).
	TrustedProxies []netip.Prefix
	// Metrics serves GET /metrics without credentials (nil: 404, for
	// metrics served on their own address, ENRICH_METRICS_ADDR).
	Metrics http.Handler
}

// Observer receives the HTTP metrics.
type Observer interface {
	ObserveRequest(method, route string, status int, d time.Duration)
}

// Readiness reports whether the service can serve (its database answers).
type Readiness func(ctx context.Context) error

// Server is the HTTP API.
type Server struct {
	cfg           Config
	clients       clientAddrs
	access        *app.AccessService
	schemas       *app.SchemaService
	records       *app.RecordService
	enrich        *app.EnrichmentService
	batches       *app.BatchService
	models        *app.ModelService
	jobs          *app.JobService
	keys          *app.ProviderKeyService
	costs         *app.CostService
	samples       *app.SampleService
	gen           *app.SchemaGenService
	fetch         *app.FetchService
	fusion        *app.FusionService
	dbs           *app.DatabaseService
	notifications *app.NotificationService
	// entities is the entity layer's listing, injection and reinject.
	entities *app.EntityService
	// attachments are the uploaded files (/api/attachments).
	attachments *app.AttachmentService
	// concepts is the semantic concept vocabulary (/api/semantic-concepts).
	concepts *app.ConceptService
	log      *slog.Logger
	ready    Readiness
	// events writes job events: the SSE lines and the answers built
	// from an event.
	events ports.EventCodec

	// analysis runs the ambiguity analyses and the scoping split.
	analysis *app.AnalysisService

	// orgProviders are the organizations' own providers (/api/providers).
	orgProviders *app.OrgProviderService
	// feed serves the database-sync delta feeds.
	feed *app.FeedService

	// consumer serves the database credential, the snapshot and the
	// checksum.
	consumer *app.ConsumerService

	spec     *openapi3.T
	specJSON []byte
	router   *mux.Router
}

// Services are the app services the API serves; a nil one leaves its
// routes answering 500 (tests of the router alone pass none).
type Services struct {
	Access       *app.AccessService
	Schemas      *app.SchemaService
	Records      *app.RecordService
	Enrichment   *app.EnrichmentService
	Batches      *app.BatchService
	Models       *app.ModelService
	Jobs         *app.JobService
	ProviderKeys *app.ProviderKeyService
	OrgProviders *app.OrgProviderService
	Costs        *app.CostService
	Analysis     *app.AnalysisService
	Samples      *app.SampleService
	SchemaGen    *app.SchemaGenService
	Fetch        *app.FetchService
	Fusion       *app.FusionService
	Databases    *app.DatabaseService
	Feed         *app.FeedService
	Consumer     *app.ConsumerService
	// Notifications are schema event subscriptions and links' webhooks.
	Notifications *app.NotificationService
	Entities      *app.EntityService
	// Attachments are the organization's uploaded files.
	Attachments *app.AttachmentService
	// Concepts is the semantic concept vocabulary.
	Concepts *app.ConceptService
	// ConceptMigrations moves the vocabulary to another embedding model.
	ConceptMigrations *app.ConceptMigrationService
}

// NewServer builds the router; events writes the job events it serves.
func NewServer(cfg Config, svc Services, events ports.EventCodec, lg *slog.Logger, ready Readiness) (*Server, error) {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.SSEHeartbeat <= 0 {
		cfg.SSEHeartbeat = DefaultSSEHeartbeat
	}
	if cfg.SSEWriteTimeout <= 0 {
		cfg.SSEWriteTimeout = 10 * time.Second
	}
	s := &Server{cfg: cfg, access: svc.Access, schemas: svc.Schemas, records: svc.Records, enrich: svc.Enrichment, jobs: svc.Jobs,
		keys: svc.ProviderKeys, costs: svc.Costs, analysis: svc.Analysis, samples: svc.Samples, gen: svc.SchemaGen, log: lg,
		ready: ready, fetch: svc.Fetch, fusion: svc.Fusion, events: events}
	s.orgProviders, s.batches, s.models, s.dbs = svc.OrgProviders, svc.Batches, svc.Models, svc.Databases
	s.feed = svc.Feed
	s.consumer = svc.Consumer
	s.notifications = svc.Notifications
	s.entities = svc.Entities
	s.attachments = svc.Attachments
	s.concepts = svc.Concepts
	s.clients = clientAddrs{trusted: cfg.TrustedProxies}
	var err error
	if s.spec, err = LoadSpec(); err != nil {
		return nil, err
	}
	if s.specJSON, err = SpecJSON(); err != nil {
		return nil, err
	}
	validate, err := ValidateRequests(s.spec, func(w http.ResponseWriter, r *http.Request, status int, field, detail string) {
		code := "invalid_request"
		if status == http.StatusRequestEntityTooLarge {
			code = "body_too_large"
		}
		s.fail(w, r, status, code, field, detail)
	})
	if err != nil {
		return nil, err
	}
	r := mux.NewRouter()
	r.NotFoundHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusNotFound, "not_found", "", "no route "+r.URL.Path)
	})
	r.MethodNotAllowedHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusMethodNotAllowed, "method_not_allowed", "", r.Method+" is not allowed on "+r.URL.Path)
	})
	r.Use(noteRoute, s.authenticate, s.authorize, s.checkText, validate)
	s.registerHealthRoutes(r)
	// mux tries the routes in order, each a regular expression: the runs'
	// routes, whose paths no other route's can match, come first, so that
	// the most frequent requests do not try every other route on the way.
	s.registerEnrichmentRoutes(r)
	s.registerJobRoutes(r)
	s.registerAuthRoutes(r)
	s.registerSchemaLifecycleRoutes(r) // before registerSchemaRoutes: /deleted before /{id}
	s.registerSchemaRoutes(r)
	s.registerAnalysisRoutes(r)
	s.registerSchemaGenRoutes(r)
	s.registerRecordRoutes(r)
	s.registerEmbeddingModelRoutes(r) // before registerProviderKeyRoutes: a fixed path under /api/org-keys
	s.registerProviderKeyRoutes(r)
	s.registerOrgProviderRoutes(r)
	s.registerCostRoutes(r)
	s.registerSettingsRoutes(r)
	s.registerSampleRoutes(r)
	s.registerBatchFetchRoutes(r)
	s.registerFusionRoutes(r)
	s.registerDatabaseRoutes(r)
	s.registerBatchRoutes(r)
	s.registerFeedRoutes(r)
	s.registerConsumerRoutes(r)
	s.registerNotificationRoutes(r)
	s.registerAttachmentRoutes(r)
	s.registerConceptFamily(r, svc)
	s.registerDocsRoutes(r)
	s.router = r
	return s, nil
}

// Router exposes the router (for route listings and tests).
func (s *Server) Router() *mux.Router { return s.router }

// ServeHTTP serves a request through the outer middleware: request id,
// recovery, access log and body limit.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.outer(s.router).ServeHTTP(w, r)
}

func (s *Server) registerHealthRoutes(r *mux.Router) {
	r.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, api.Health{Status: api.Ok})
	}).Methods(http.MethodGet)
	r.HandleFunc("/readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if s.ready != nil {
			if err := s.ready(ctx); err != nil {
				// The cause names hosts, users and databases: it goes to the
				// log, not to an unauthenticated caller.
				s.log.WarnContext(r.Context(), "not ready", "request_id", requestID(r), "err", err)
				w.Header().Set("Retry-After", "2")
				writeJSON(w, http.StatusServiceUnavailable, api.Unready{Status: api.Unavailable, Detail: "storage unreachable"})
				return
			}
		}
		writeJSON(w, http.StatusOK, api.Health{Status: api.Ok})
	}).Methods(http.MethodGet)
	r.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.Metrics == nil {
			s.fail(w, r, http.StatusNotFound, "not_found", "", "metrics are served on their own address")
			return
		}
		s.cfg.Metrics.ServeHTTP(w, r)
	}).Methods(http.MethodGet)
	r.HandleFunc("/api/openapi.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(s.specJSON)
	}).Methods(http.MethodGet)
}

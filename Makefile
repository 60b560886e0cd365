# enrich — Entity Enrichment Service. `make` lists the targets.
SHELL := /bin/bash
GO ?= go
PKGS := ./...
PGLITE_DIR := test/pglite

.DEFAULT_GOAL := help

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

run: ## serve the API on 127.0.0.1:8080 (ENRICH_ADDR overrides) with in-memory storage and the sandbox models
	ENRICH_SANDBOX=true ENRICH_ADDR=$${ENRICH_ADDR:-127.0.0.1:8080} $(GO) run ./cmd/enrichd

build: ## build bin/enrichd and bin/enrich
	$(GO) build -o bin/enrichd ./cmd/enrichd
	$(GO) build -o bin/enrich ./cmd/enrich

migrate: ## apply migrations to DATABASE_URL and list what was applied
	$(GO) run ./cmd/enrichd migrate

test-deps: ## start native PostgreSQL if installed but down; install the PGlite server
	@bash scripts/test-deps.sh

test: test-deps ## run every test with the race detector (memory, native PostgreSQL, PGlite)
	$(GO) vet $(PKGS)
	@if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then export ENRICH_REQUIRE_NATIVE_PG=1; fi; \
	$(GO) test -race -count=1 -timeout 25m $(PKGS)

# The short run leaves out what needs PostgreSQL or builds and starts the
# binaries: it is the inner loop, and make test runs everything.
SHORT_PKGS = $$($(GO) list ./... | grep -vE -e '/test/(e2e|load|bench|readme|pgtest)$$' -e '/cmd/enrichd?$$' \
	-e '/adapters/postgres$$' -e '/third_party/')

# GORACE: the race detector waits 1 s at every test binary's exit for late
# reports; a race met while the tests run is reported at once either way,
# and the wait would be most of this run's time.
test-short: ## the inner loop, under a minute: domain, app, memory and every package that needs no PostgreSQL (race detector, -short)
	GORACE="$${GORACE:-atexit_sleep_ms=0}" $(GO) test -race -short -count=1 $(SHORT_PKGS)

bench: test-deps ## benchmarks (overhead per job and call, allocations, SSE first event), then the HTTP load test against issue 6 goals, the batch benchmark (issue 11), the provider path against a bare proxy (issue 8), the kill soak (issue 26), the long pause-and-continue race (issue 27) and the feed's claim/apply/ack against raw SQL and the end-to-end replication of 10,000 enrichments by enrich sync (issue 28), the attachment blob stores' throughput (issue 29), and the semantic concept probe's latency and recall@10 at 100,000 concepts on memory, PGlite's pgvector and PostgreSQL's exact index (issue 30)
	@if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then export ENRICH_REQUIRE_NATIVE_PG=1; fi; \
	$(GO) test -run '^$$' -bench . -skip ProviderKeyPick/postgres -benchtime 2000x -benchmem ./test/bench/ ./adapters/llm/ && \
	$(GO) test -run '^$$' -bench ProviderKeyPick/postgres -benchtime 20000x -benchmem ./test/bench/ && \
	$(GO) test -run '^$$' -bench BlobStore -benchtime 20x -benchmem ./adapters/blobstore/ && \
	ENRICH_LOAD=1 $(GO) test -count=1 -run '^(TestLoad|TestBatchLoad|TestProviderPathLoad|TestKillSoak|TestFeedLoad|TestAttachmentLoad)$$' -v -timeout 25m ./test/load/ && \
	ENRICH_LOAD=1 $(GO) test -count=1 -run '^TestConceptLoad$$' -v -timeout 45m ./test/load/ && \
	ENRICH_LOAD=1 $(GO) test -count=1 -run '^TestPauseContinueRace$$' -v -timeout 10m ./test/jobrace/ && \
	ENRICH_REPLICATION_N=10000 ENRICH_LOAD=1 $(GO) test -count=1 -run '^(TestSyncReplicates|TestCrashMatrix)$$' -v -timeout 15m ./cmd/enrich/internal/syncer/

generate: ## regenerate wire_gen.go and the HTTP types (adapters/httpapi/api/types.gen.go)
	$(GO) tool wire gen .
	$(GO) generate ./adapters/httpapi/api

verify: ## gofmt, vet, wire diff, generated HTTP types diff, dependency rule
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1)
	$(GO) vet $(PKGS)
	$(GO) tool wire diff . || (echo "wire_gen.go is stale: make generate"; exit 1)
	@set -o pipefail; cd adapters/httpapi/api && $(GO) tool oapi-codegen -config cfg.yaml ../openapi.yaml | diff -u types.gen.go - \
		|| (echo "adapters/httpapi/api/types.gen.go is stale: make generate"; exit 1)
	$(GO) test -count=1 -run TestDependencyRule .

.PHONY: help run build migrate test-deps test test-short bench generate verify

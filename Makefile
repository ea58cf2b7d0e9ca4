# Lore: `make run` starts everything on the embedded defaults; `make test` runs all tests.
SHELL := /bin/bash
export GOTOOLCHAIN := local
export CGO_ENABLED := 0
BIN := $(CURDIR)/bin
TEMPORAL_CLI_VERSION := v1.5.1
MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
TEMPORAL_SERVER_VERSION := v1.32.1
GO_TEST_FLAGS ?= -count=1 -timeout 20m
# Release builds: no debug symbols or DWARF (-s -w) and no local paths in the
# binary (-trimpath). Stack traces and pprof profiles keep their function
# names and lines (the runtime's own tables stay); only debuggers lose.
GO_RELEASE_FLAGS ?= -trimpath -ldflags "-s -w"

.PHONY: build run test test-unit test-milvus tools tools-temporal-server tools-staticcheck bench bench-scale eval embedder chaos fuzz vet fmt check docs-assets clean

build:
	go build $(GO_RELEASE_FLAGS) -o $(BIN)/lore .

# scripts/run.sh builds lore (and the Temporal CLI once), saying so, then starts both.
run:
	@scripts/run.sh

# Binaries the tests need: the Temporal CLI (dev server) and MinIO (real S3).
tools: tools-temporal tools-minio

tools-temporal:
	@test -x $(BIN)/temporal || { echo "==> building the Temporal CLI $(TEMPORAL_CLI_VERSION) into bin/ (first time only, several minutes)"; GOBIN=$(BIN) scripts/progress.sh "building the Temporal CLI" go install github.com/temporalio/cli/cmd/temporal@$(TEMPORAL_CLI_VERSION); }

tools-minio:
	@test -x $(BIN)/minio || { echo "==> building MinIO into bin/ for the S3 tests (first time only, several minutes)"; GOBIN=$(BIN) scripts/progress.sh "building MinIO" go install github.com/minio/minio@$(MINIO_VERSION); }

test: tools
	@echo "==> go test ./... (every package; each prints ok or FAIL as it ends)"
	TEMPORAL_CLI=$(BIN)/temporal MINIO_BIN=$(BIN)/minio scripts/progress.sh "go test" go test $(GO_TEST_FLAGS) -p 2 ./...

# The tests that need no service (no PostgreSQL, Redis, Temporal, MinIO,
# Milvus, browser); scripts/test-unit.sh lists them and fails when a listed
# one reaches for a service. UNIT_TEST_FLAGS=-count=1 skips the test cache.
test-unit:
	@scripts/test-unit.sh

# The vector-store conformance suite against a real Milvus (README, "Milvus").
MILVUS_ADDRESS ?= 127.0.0.1:19530
test-milvus:
	MILVUS_ADDRESS=$(MILVUS_ADDRESS) go test -count=1 -v -run TestConformance ./internal/vector/milvus/

# Every fuzz target, briefly (FUZZTIME each); the seed corpora also run in make test.
# A count of executions (Nx), not a duration: with a duration, Go's fuzzing
# coordinator can fail a clean run with a bare "context deadline exceeded" when
# a busy worker misses the stop (golang/go#75804); a count has no deadline.
FUZZTIME ?= 50000x
fuzz:
	go test -run '^$$' -fuzz '^FuzzDecoders$$' -fuzztime $(FUZZTIME) ./api/
	go test -run '^$$' -fuzz '^FuzzValidateName$$' -fuzztime $(FUZZTIME) ./internal/blob/
	go test -run '^$$' -fuzz '^FuzzDecrypt$$' -fuzztime $(FUZZTIME) ./internal/msgr/
	go test -run '^$$' -fuzz '^FuzzSafeUnmarshal$$' -fuzztime $(FUZZTIME) ./internal/msgr/
	go test -run '^$$' -fuzz '^FuzzSplit$$' -fuzztime $(FUZZTIME) ./internal/chunk/
	go test -run '^$$' -fuzz '^FuzzConvertPDF$$' -fuzztime $(FUZZTIME) ./internal/convert/builtin/
	go test -run '^$$' -fuzz '^FuzzConvertDOCX$$' -fuzztime $(FUZZTIME) ./internal/convert/builtin/
	go test -run '^$$' -fuzz '^FuzzConvertPPTX$$' -fuzztime $(FUZZTIME) ./internal/convert/builtin/
	go test -run '^$$' -fuzz '^FuzzConvertXLSX$$' -fuzztime $(FUZZTIME) ./internal/convert/builtin/
	go test -run '^$$' -fuzz '^FuzzConvertHTML$$' -fuzztime $(FUZZTIME) ./internal/convert/builtin/
	go test -run '^$$' -fuzz '^FuzzConvertText$$' -fuzztime $(FUZZTIME) ./internal/convert/builtin/

vet:
	go vet ./...

# The static checks CI runs before the tests: go vet, gofmt and staticcheck
# (its default checks).
STATICCHECK_VERSION := v0.8.2
tools-staticcheck:
	@test -x $(BIN)/staticcheck || { echo "==> building staticcheck $(STATICCHECK_VERSION) into bin/ (first time only)"; GOBIN=$(BIN) go install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); }

check: tools-staticcheck
	go vet ./...
	go vet -tags chaos ./chaos/
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt -l lists files to format (make fmt):"; echo "$$out"; exit 1; fi
	$(BIN)/staticcheck ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

bench: build tools
	@scripts/bench.sh

# The long run (up to 40 minutes): a million chunks, the chat and ingestion
# curves, re-index and delete at 100,000 documents, and the server parts again
# on a Temporal server on PostgreSQL.
bench-scale: build tools tools-temporal-server
	@scripts/bench.sh -scale

# The real Temporal server and its SQL tool (a production-shaped Temporal for
# bench-scale; about 4 minutes to build the first time).
tools-temporal-server:
	@test -x $(BIN)/temporal-server -a -x $(BIN)/temporal-sql-tool || { d=$$(mktemp -d) && \
	  GOBIN=$$d go install go.temporal.io/server/cmd/server@$(TEMPORAL_SERVER_VERSION) go.temporal.io/server/cmd/tools/sql@$(TEMPORAL_SERVER_VERSION) && \
	  mv $$d/server $(BIN)/temporal-server && mv $$d/sql $(BIN)/temporal-sql-tool && rmdir $$d; }

# Retrieval and answer quality on real Debian docs (bench/EVAL.md); under 10 minutes.
eval: build tools-temporal
	@scripts/eval.sh

# The learned English embedder's model, rebuilt from Debian packages
# (scripts/embedder.sh; about ten minutes on two idle cores).
embedder:
	@scripts/embedder.sh

# Fault suite (chaos/, build tag chaos): real processes, kill -9 and outages.
# CHAOS_DOCS sets the batch size (default 500). It stops PostgreSQL for 5 s.
chaos: build tools-temporal
	TEMPORAL_CLI=$(BIN)/temporal CHAOS_LORE_BIN=$(BIN)/lore go test -tags chaos -count=1 -timeout 20m -run 'Chaos' -v ./chaos/...

# Re-vendor the offline /docs assets from the npm registry.
docs-assets:
	@rm -rf /tmp/lore-swui && mkdir -p /tmp/lore-swui && cd /tmp/lore-swui && npm pack swagger-ui-dist@5.35.0 >/dev/null && tar xzf swagger-ui-dist-*.tgz
	cp /tmp/lore-swui/package/{swagger-ui-bundle.js,swagger-ui-standalone-preset.js,swagger-ui.css,LICENSE,favicon-32x32.png} api/docsui/

clean:
	rm -rf $(BIN)/lore

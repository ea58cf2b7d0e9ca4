#!/usr/bin/env bash
# make bench: build and run the benchmark program (bench/cmd/lorebench), which
# starts a Temporal dev server and bin/lore serve on a scratch PostgreSQL
# database, measures the API, vectorization and chat, prints one report and
# writes it to bench/REPORT.md. Flags go through: scripts/bench.sh -quick, or
# `make bench BENCH_FLAGS=-quick`. scripts/bench.sh -h lists them.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local CGO_ENABLED=0
mkdir -p bench/out
go build -o bench/out/lorebench ./bench/cmd/lorebench
# The MCP server's search latency on the embedded defaults (a Go test that
# measures, printing its TARGET line).
LORE_MEASURE_MCP=1 TEMPORAL_CLI="$PWD/bin/temporal" go test -count=1 -v -run '^TestMCPSearchLatency$' ./e2e/ | grep -E '^(MCP search|TARGET)' || true
# The sync of a 1,000-file Git repository against a plain import, and its re-syncs.
LORE_SYNC_TARGETS=1 TEMPORAL_CLI="$PWD/bin/temporal" go test -count=1 -v -run '^TestSyncTargets$' ./e2e/ | grep -E '^(Sync of|TARGET)' || true
# What storing a revision adds to a document update, on both dialects.
LORE_MEASURE_REVISIONS=1 go test -count=1 -v -run '^TestRevisionCostOfAnUpdate$' ./api/ | grep -E '^(PUT|TARGET)' || true
# shellcheck disable=SC2086 # BENCH_FLAGS is a list of flags
exec bench/out/lorebench -root . ${BENCH_FLAGS:-} "$@"

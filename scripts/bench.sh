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
# Three parts are Go tests that measure and print their TARGET lines; the
# report gets them in a section of their own.
E2E=bench/out/test-targets.txt
: >"$E2E"
# The MCP server's search latency on the embedded defaults.
LORE_MEASURE_MCP=1 TEMPORAL_CLI="$PWD/bin/temporal" go test -count=1 -v -run '^TestMCPSearchLatency$' ./e2e/ | grep -E '^(MCP search|TARGET)' | tee -a "$E2E" || true
# The sync of a 1,000-file Git repository against a plain import, and its re-syncs.
LORE_SYNC_TARGETS=1 TEMPORAL_CLI="$PWD/bin/temporal" go test -count=1 -v -run '^TestSyncTargets$' ./e2e/ | grep -E '^(Sync of|TARGET)' | tee -a "$E2E" || true
# What storing a revision adds to a document update, on both dialects.
LORE_MEASURE_REVISIONS=1 go test -count=1 -v -run '^TestRevisionCostOfAnUpdate$' ./api/ | grep -E '^(PUT|TARGET)' | tee -a "$E2E" || true
# shellcheck disable=SC2086 # BENCH_FLAGS is a list of flags
bench/out/lorebench -root . ${BENCH_FLAGS:-} "$@"
case " ${BENCH_FLAGS:-} $* " in
*" -out"* | *" -h "* | *" -help "*) ;; # the report went elsewhere, or there is none
*) if [ -s "$E2E" ]; then
  { echo; echo "## Measured by Go tests in the same run (MCP search, Git sync, revisions)"; echo
    sed 's/^/    /' "$E2E"; } >>bench/REPORT.md
fi ;;
esac

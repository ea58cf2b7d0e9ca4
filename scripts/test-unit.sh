#!/usr/bin/env bash
# make test-unit: the tests that need no service (no PostgreSQL, Redis,
# Temporal, MinIO, Milvus or browser). Every package with tests is either
# listed here as a unit package or named as a service package; a new one
# that is neither stops this script until it is classified.
#
# Kept honest two ways: a whole unit package must not import the helpers
# that reach services (dbtest, testenv), and while the tests run every
# service address points at a closed port or a missing binary, so a listed
# test that starts needing a service fails here instead of quietly using one
# that happens to run on the machine.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local CGO_ENABLED=0
mod=github.com/lorekb/lore

# Whole packages.
unit=(
	activities workflows worker
	bench/cmd/lorebench bench/cmd/loreeval bench/internal/corpus bench/internal/gen bench/internal/load
	internal/analyze internal/blob internal/blob/local internal/cache/memory internal/chatbudget internal/chatevent
	internal/chunk internal/config internal/convert internal/convert/builtin internal/convert/docx internal/convert/html
	internal/convert/pdf internal/convert/pdf/internal/pdfread internal/convert/pptx internal/convert/processor internal/convert/sheet internal/convert/text
	internal/datasource/websrc internal/deps internal/embed/learned internal/embed/local internal/embed/oai
	internal/enrich internal/gctune internal/llm internal/llm/extractive internal/llm/oai internal/memo internal/msgr
	internal/netguard internal/readcache internal/redact internal/rerank/cohere internal/rerank/lexical
	internal/retrieve internal/sealed internal/streamhub internal/telemetry internal/vector/local
)
# Packages whose tests mostly need a service: only these of their tests run
# (go test flags).
declare -A some=(
	[api]="-run ^Test(FollowRun|ChatStream|ChatAttach|PagingStatesWhatWasAnswered)"
	[web]="-skip ^TestBrowser"
	[.]="-run ^Test(LayoutDocMatchesTree|UsersResetPasswordAndCreate)$"
)
# The rest need a service: PostgreSQL (internal/db), Temporal (e2e), MinIO (internal/blob/s3, internal/datasource), Redis
# (internal/cache/redis), Milvus (internal/vector/milvus), a Git server
# (internal/datasource/gitsrc).
services=(e2e internal/db internal/blob/s3 internal/datasource internal/datasource/gitsrc internal/cache/redis
	internal/vector/milvus)

fail=0
declare -A known=()
for p in "${unit[@]}" "${!some[@]}" "${services[@]}"; do
	k=$mod/$p
	known[${k%/.}]=1 # . is the module root, the lore command
done
for p in $(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}' ./...); do
	if [[ -z ${known[$p]:-} ]]; then
		echo "test-unit: $p has tests but is in no list of scripts/test-unit.sh" >&2
		fail=1
	fi
done
# One line per test binary: its package, then what it links.
while read -r bin deps; do
	if [[ " $deps " =~ " $mod/internal/"(db/dbtest|testenv)" " ]]; then
		echo "test-unit: ${bin%.test} links a service helper (dbtest or testenv) in its tests: list it elsewhere" >&2
		fail=1
	fi
done < <(go list -test -f '{{if .ForTest}}{{else if eq .Name "main"}}{{.ImportPath}}{{range .Deps}} {{.}}{{end}}{{end}}' "${unit[@]/#/./}" | grep '\.test ')
[[ $fail == 0 ]] || exit 1

# Nothing to reach: a closed port for the databases, no binaries to start.
export LORE_TEST_PG_URL='postgres://postgres@127.0.0.1:1/postgres?sslmode=disable' REDIS_URL='redis://127.0.0.1:1'
export TEMPORAL_ADDRESS=none TEMPORAL_CLI=/nonexistent MINIO_BIN=/nonexistent LORE_CHROMIUM=/nonexistent
unset MILVUS_ADDRESS LORE_REQUIRE_BROWSER

# Results of unchanged packages come from Go's test cache (these tests read
# no service, so the cache knows all they depend on); UNIT_TEST_FLAGS=-count=1
# runs everything. Test binaries are linked without symbol table and DWARF
# (a third less link time; failures keep their file:line traces).
flags=${UNIT_TEST_FLAGS:-}
pids=()
for p in "${!some[@]}"; do
	# shellcheck disable=SC2086 # flags are words
	go test -timeout 5m -ldflags='-s -w' $flags ${some[$p]} "./$p" &
	pids+=($!)
done
status=0
# shellcheck disable=SC2086
go test -timeout 5m -ldflags='-s -w' $flags "${unit[@]/#/./}" || status=1
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
exit $status

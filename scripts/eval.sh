#!/usr/bin/env bash
# make eval: build and run the retrieval-quality benchmark (bench/cmd/loreeval),
# which starts a Temporal dev server and bin/lore serve on the embedded
# defaults, loads nodejs-doc, sqlite3-doc, manpages-zh and apache2-doc through the API,
# asks held-out questions and writes bench/EVAL.md. Your own documents:
# scripts/eval.sh -corpus DIR -questions FILE.jsonl -out ''. Flags go through: scripts/eval.sh -keep,
# or `make eval EVAL_FLAGS='-lore-env EMBED_PROVIDER=openai …'`.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local CGO_ENABLED=0
mkdir -p bench/out
go build -o bench/out/loreeval ./bench/cmd/loreeval
# shellcheck disable=SC2086 # EVAL_FLAGS is a list of flags
exec bench/out/loreeval -root . ${EVAL_FLAGS:-} "$@"

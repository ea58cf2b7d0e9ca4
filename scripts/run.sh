#!/usr/bin/env bash
# make run: build lore (and, the first time, the Temporal CLI), then start the
# Temporal dev server (via temporal-dev.sh) and lore serve on the embedded
# defaults; Ctrl-C stops both. Data persists in $LORE_DATA_DIR. It says what
# it is doing while it builds, and refuses to start (touching nothing) when a
# port it needs is taken, naming the process that holds it.
set -euo pipefail
cd "$(dirname "$0")/.."
export LORE_DATA_DIR="${LORE_DATA_DIR:-./data}"
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}" CGO_ENABLED="${CGO_ENABLED:-0}"
say() { printf '==> %s\n' "$*"; }

# holder PORT: the process listening on the port ("" when free).
holder() {
  local line
  if command -v ss >/dev/null 2>&1; then
    line="$(ss -Hltnp "sport = :$1" 2>/dev/null | head -1)"
    [ -z "$line" ] && return 0
    if [[ $line =~ users:\(\(\"([^\"]+)\",pid=([0-9]+) ]]; then
      echo "${BASH_REMATCH[1]} (pid ${BASH_REMATCH[2]}: $(tr '\0' ' ' </proc/"${BASH_REMATCH[2]}"/cmdline 2>/dev/null | cut -c1-100))"
    else
      echo "a process of another user"
    fi
  elif (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
    echo "another process"
  fi
}
http_port="${LORE_HTTP_ADDR:-:8080}"; http_port="${http_port##*:}"
ports=("$http_port:lore API (LORE_HTTP_ADDR)")
if [ -z "${TEMPORAL_ADDRESS:-}" ]; then
  ports+=("${TEMPORAL_PORT:-7233}:Temporal dev server (TEMPORAL_PORT)" "${TEMPORAL_UI_PORT:-8233}:Temporal Web UI (TEMPORAL_UI_PORT)")
fi
busy=0
for p in "${ports[@]}"; do
  who="$(holder "${p%%:*}")"
  if [ -n "$who" ]; then
    echo "make run: port ${p%%:*} (${p#*:}) is in use by $who; stop it or choose another port" >&2
    busy=1
  fi
done
if [ "$busy" = 1 ]; then
  echo "make run: nothing was started (a Lore already running keeps its logs in $LORE_DATA_DIR)" >&2
  exit 1
fi

say "Building lore into ./bin/lore (about a minute the first time, seconds after)..."
start=$(date +%s)
scripts/progress.sh "building lore" go build -o bin/lore .
say "Built lore in $(( $(date +%s) - start ))s"
if [ -z "${TEMPORAL_ADDRESS:-}" ] && [ ! -x bin/temporal ]; then
  say "Building the Temporal CLI ${TEMPORAL_CLI_VERSION:-v1.5.1} into ./bin/temporal: first run only, 3 to 15 minutes depending on the machine (it compiles the Temporal server and Web UI)..."
  start=$(date +%s)
  scripts/progress.sh "building the Temporal CLI" ./temporal-dev.sh --build-only
  say "Built the Temporal CLI in $(( $(date +%s) - start ))s"
fi

mkdir -p "$LORE_DATA_DIR"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM
if [ -z "${TEMPORAL_ADDRESS:-}" ]; then
  # Appended, never truncated: earlier runs' lines stay.
  printf '\n--- make run %s ---\n' "$(date -u +%FT%TZ)" >>"$LORE_DATA_DIR/temporal.log"
  ./temporal-dev.sh >>"$LORE_DATA_DIR/temporal.log" 2>&1 &
  pids+=($!)
  say "Starting the Temporal dev server (log: $LORE_DATA_DIR/temporal.log)..."
  for i in $(seq 1 120); do
    if (exec 3<>"/dev/tcp/127.0.0.1/${TEMPORAL_PORT:-7233}") 2>/dev/null; then break; fi
    if ! kill -0 "${pids[0]}" 2>/dev/null; then
      echo "make run: the Temporal dev server exited; the end of its log:" >&2
      tail -n 20 "$LORE_DATA_DIR/temporal.log" >&2
      exit 1
    fi
    sleep 0.5
  done
fi
if [ ${#pids[@]} -gt 0 ]; then
  export TEMPORAL_ADDRESS="127.0.0.1:${TEMPORAL_PORT:-7233}" TEMPORAL_UI_URL="${TEMPORAL_UI_URL:-http://127.0.0.1:${TEMPORAL_UI_PORT:-8233}}"
fi
say "Starting lore serve..."
./bin/lore serve &
pids+=($!)
wait -n "${pids[@]}"

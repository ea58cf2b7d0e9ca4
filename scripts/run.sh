#!/usr/bin/env bash
# make run: start the Temporal dev server (via temporal-dev.sh) and lore serve on
# the embedded defaults; Ctrl-C stops both. Data persists in $LORE_DATA_DIR.
set -euo pipefail
cd "$(dirname "$0")/.."
export LORE_DATA_DIR="${LORE_DATA_DIR:-./data}"
mkdir -p "$LORE_DATA_DIR"
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT INT TERM
if [ -z "${TEMPORAL_ADDRESS:-}" ]; then
  ./temporal-dev.sh >"$LORE_DATA_DIR/temporal.log" 2>&1 &
  pids+=($!)
  echo "Starting Temporal dev server (log: $LORE_DATA_DIR/temporal.log)..."
  for i in $(seq 1 120); do
    if (exec 3<>/dev/tcp/127.0.0.1/7233) 2>/dev/null; then break; fi
    sleep 0.5
  done
fi
./bin/lore serve &
pids+=($!)
wait -n "${pids[@]}"

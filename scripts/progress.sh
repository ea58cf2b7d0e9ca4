#!/usr/bin/env bash
# progress.sh LABEL COMMAND...: run COMMAND and, while it runs, print a line
# every 30 seconds saying it still is (a first build of the Temporal CLI or
# MinIO compiles for minutes without a word). Exits with COMMAND's status;
# Ctrl-C stops COMMAND too. PROGRESS_EVERY changes the interval (seconds).
set -uo pipefail
label=$1
shift
every=${PROGRESS_EVERY:-30}
"$@" &
pid=$!
start=$(date +%s)
(
  while sleep "$every"; do
    kill -0 "$pid" 2>/dev/null || exit 0
    echo "    ... $label: still running, $(( $(date +%s) - start ))s so far" >&2
  done
) &
ticker=$!
trap 'kill "$pid" "$ticker" 2>/dev/null; exit 130' INT TERM
wait "$pid"
rc=$?
kill "$ticker" 2>/dev/null
wait "$ticker" 2>/dev/null
exit "$rc"

#!/usr/bin/env bash
# Builds (once) the Temporal CLI into ./bin and starts the local Temporal dev
# server: SQLite file under the data dir, frontend on :7233, Web UI on :8233.
# It registers Lore's custom search attributes (workflows/jobmeta.go), so the
# Web UI can filter by them (LoreSiteId = 3) and GET /jobs can list jobs; a
# cluster gets them from `lore temporal setup`. The flags are those of
# workflows.DevServerArgs (the tests' and the bench's dev servers): the search
# attribute cache stays in memory instead of being re-read from SQLite on every
# read (`start-dev` turns that on), so an attribute created later with
# `temporal operator search-attribute create` shows within a minute.
set -euo pipefail
cd "$(dirname "$0")"
TEMPORAL_VERSION="${TEMPORAL_CLI_VERSION:-v1.5.1}"
BIN="$PWD/bin/temporal"
DATA_DIR="${LORE_DATA_DIR:-./data}"
if [ ! -x "$BIN" ]; then
  echo "temporal-dev.sh: building Temporal CLI $TEMPORAL_VERSION into ./bin (first run takes a few minutes)..." >&2
  GOBIN="$PWD/bin" go install "github.com/temporalio/cli/cmd/temporal@$TEMPORAL_VERSION"
fi
mkdir -p "$DATA_DIR"
if [ "${1:-}" = "--build-only" ]; then exit 0; fi
# SQLite in WAL mode with synchronous=NORMAL: the default (rollback journal,
# synchronous=FULL) syncs the file on every commit; measured with the chat
# bench at 100 concurrent (docs/chat.md), WAL nearly halves the server's CPU
# per turn and doubles turns per second. A crash keeps the database
# consistent; a power loss may drop the last transactions (a dev server).
exec "$BIN" server start-dev \
  --db-filename "$DATA_DIR/temporal.db" \
  --sqlite-pragma journal_mode=wal --sqlite-pragma synchronous=normal \
  --ip 127.0.0.1 --port "${TEMPORAL_PORT:-7233}" \
  --ui-port "${TEMPORAL_UI_PORT:-8233}" \
  --dynamic-config-value system.enableActivityEagerExecution=true \
  --dynamic-config-value system.forceSearchAttributesCacheRefreshOnRead=false \
  --search-attribute LoreDocumentId=Int --search-attribute LoreJob=Bool \
  --search-attribute LoreKind=Keyword \
  --search-attribute LoreRequestedBy=Keyword --search-attribute LoreSiteId=Int \
  --search-attribute LoreTenantId=Int \
  --log-level warn

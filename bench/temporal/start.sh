#!/usr/bin/env bash
# Starts a production-shaped Temporal server for the bench: the real server
# binary (go install go.temporal.io/server/cmd/server) on PostgreSQL, its
# schema set up by its own SQL tool (go.temporal.io/server/cmd/tools/sql),
# then runs in the foreground until SIGTERM (the bench registers the
# namespace with `lore temporal setup`).
#
#   bench/temporal/start.sh WORKDIR
#
# Environment (the bench sets all of it):
#   TEMPORAL_SERVER_BIN, TEMPORAL_SQL_BIN   the two binaries
#   PGHOST PGPORT PGUSER PGPASSWORD         the PostgreSQL server
#   TEMPORAL_DB                             database name prefix (created here;
#                                           <prefix> and <prefix>_visibility)
#   TEMPORAL_PORT                           frontend gRPC port; the other
#                                           services use PORT_BASE..PORT_BASE+9
#   PORT_BASE, TEMPORAL_SHARDS (default 4)
# It prints "temporal-pg ready" once the frontend listens.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
work="$1"
mkdir -p "$work"
: "${TEMPORAL_SHARDS:=4}" "${PGPASSWORD:=}"
db="$TEMPORAL_DB" visdb="${TEMPORAL_DB}_visibility"
sqlt() { "$TEMPORAL_SQL_BIN" --plugin postgres12 --ep "$PGHOST" -p "$PGPORT" -u "$PGUSER" --pw "$PGPASSWORD" "$@"; }

for d in "$db" "$visdb"; do
  sqlt --db "$d" create-database
done
sqlt --db "$db" setup-schema -v 0.0
sqlt --db "$db" update-schema --schema-name postgresql/v12/temporal
sqlt --db "$visdb" setup-schema -v 0.0
sqlt --db "$visdb" update-schema --schema-name postgresql/v12/visibility
echo "temporal-pg: schemas set up in $db and $visdb"

cp "$here/dynamicconfig.yaml" "$work/dynamicconfig.yaml"
b=$PORT_BASE
sed -e "s|@SHARDS@|$TEMPORAL_SHARDS|; s|@DB@|$db|; s|@VISDB@|$visdb|" \
    -e "s|@PGHOST@|$PGHOST|g; s|@PGPORT@|$PGPORT|g; s|@PGUSER@|$PGUSER|g; s|@PGPASSWORD@|$PGPASSWORD|g" \
    -e "s|@FRONTEND@|$TEMPORAL_PORT|g; s|@FRONTEND_M@|$((b))|; s|@FRONTEND_HTTP@|$((b+1))|" \
    -e "s|@MATCHING@|$((b+2))|; s|@MATCHING_M@|$((b+3))|; s|@HISTORY@|$((b+4))|; s|@HISTORY_M@|$((b+5))|" \
    -e "s|@WORKER@|$((b+6))|; s|@WORKER_M@|$((b+7))|; s|@PPROF@|$((b+8))|" \
    -e "s|@DYNCONFIG@|$work/dynamicconfig.yaml|" \
    "$here/server.yaml" > "$work/server.yaml"

"$TEMPORAL_SERVER_BIN" --config-file "$work/server.yaml" --allow-no-auth start &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server' TERM INT
# The namespace and Lore's search attributes are `lore temporal setup`'s to
# register, as on any cluster: here the frontend only has to listen.
for _ in $(seq 1 600); do
  if (exec 3<>"/dev/tcp/127.0.0.1/$TEMPORAL_PORT") 2>/dev/null; then
    break
  fi
  kill -0 $server 2>/dev/null || { echo "temporal-pg: server exited" >&2; exit 1; }
  sleep 0.2
done
echo "temporal-pg ready on 127.0.0.1:$TEMPORAL_PORT ($TEMPORAL_SHARDS history shards, pprof on 127.0.0.1:$((b+8)))"
wait $server

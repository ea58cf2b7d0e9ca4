#!/usr/bin/env bash
# Runs on a bigger machine, in the project root, over what bench/device/pack.sh left in .dev/, in two calls of
# one warm machine (each call carries one part):
#   bash bench/device/run.sh engine   unpacks .dev/engine (Temporal server, SQL tool, PostgreSQL) into /tmp/lorew
#   bash bench/device/run.sh bench    unpacks .dev/lore, then runs the chat bench against the Temporal server on
#                                     PostgreSQL (Lore's turns beside the bare workflow of the same shape) on all
#                                     cores, then the same pinned to eight and to two cores with taskset
# Reports, logs and profiles (one tar) go to $OUT.
#   CURVE_ALL / CURVE_8 / CURVE_2   concurrent levels past 100 (200,400,800; 200,400,800; 200,400)
#   SHARDS                history shards of the Temporal server, both runs (16)
#   ROUNDS                chats per client per level (3); QUICK=1 runs on all cores only
set -u
ulimit -n 65536 2>/dev/null || ulimit -n 4096
D=$(pwd)/.dev; ROOT=$(pwd); W=/tmp/lorew
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
t0=$(date +%s)
stamp() { echo "$(( $(date +%s) - t0 )) s: $*" | tee -a $OUT/machine.txt; }
case "${1:-}" in
engine)
  rm -rf $W; mkdir -p $W/bin
  ( cd $W && tar xJf $D/engine/bins.tar.xz && tar xJf $D/engine/pgnative.tar.xz && mv temporal-server temporal-sql-tool bin/ ) || { echo "unpack failed"; exit 1; }
  stamp "engine unpacked into $W"; exit 0 ;;
bench) ;;
*) echo "usage: run.sh engine|bench"; exit 2 ;;
esac
[ -x $W/bin/temporal-server ] || { echo "$W/bin/temporal-server missing: run 'run.sh engine' first, on the same warm machine"; exit 1; }
{ nproc; free -g | head -2; lscpu | grep -E 'Model name|^CPU\(s\)|Thread|Socket'; } > $OUT/machine.txt 2>&1
( cd $W && tar xJf $D/lore/bins.tar.xz && mv lore bin/ ) || { echo "unpack failed"; exit 1; }
stamp unpacked
N=$W/native
if [ "$(id -u)" = 0 ]; then id pgrun >/dev/null 2>&1 || useradd -M pgrun; RU="runuser -u pgrun --"; else RU=""; fi
chmod -R a+rX $W; rm -rf $W/pg; mkdir -p $W/pg; chmod 777 $W/pg # a rerun starts from a fresh cluster
$RU $N/bin/initdb -D $W/pg/data -U postgres -A trust -E UTF8 --locale=C > $W/initdb.log 2>&1 || { echo "initdb failed"; tail -5 $W/initdb.log; exit 1; }
PGP=${PGP:-5432}
pgstart() { $1 $RU $N/bin/pg_ctl -D $W/pg/data -o "-p $PGP -k /tmp -c listen_addresses=127.0.0.1 -c max_connections=1000 -c shared_buffers=2GB" -l $W/pg/log -w start > /dev/null; }
pgstop() { $RU $N/bin/pg_ctl -D $W/pg/data -w stop -m fast > /dev/null; }
PGURL="postgres://postgres@127.0.0.1:$PGP/postgres?sslmode=disable"
bench() { # name, CPU pinning prefix, levels
  $2 $W/lorebench -root $ROOT -lore $W/bin/lore -temporal-server $W/bin/temporal-server -temporal-sql-tool $W/bin/temporal-sql-tool \
    -temporal-pg -temporal-dev=false -temporal-shards ${SHARDS:-16} -pg "$PGURL" -corpus-dir $D/lore/corpus -only chat \
    -chat-concurrency 100 -chat-curve $3 -chat-rounds ${ROUNDS:-3} -chat-single-rounds 5 -chat-steady 0 -chat-burst 0 \
    -chat-profile $W/prof-$1 -out $OUT/chat-$1.md > $OUT/chat-$1.log 2>&1
  stamp "bench $1 rc=$?"
}
pgstart ""; bench all "" ${CURVE_ALL:-200,400,800}; pgstop
if [ -z "${QUICK:-}" ]; then
  pgstart "taskset -c 0-7"; bench cores8 "taskset -c 0-7" ${CURVE_8:-200,400,800}; pgstop
  pgstart "taskset -c 0,1"; bench cores2 "taskset -c 0,1" ${CURVE_2:-200,400}; pgstop
fi
(cd $W && tar cf $OUT/profiles.tar prof-* 2>/dev/null)
grep -hE "^\| (100|200|400|800) concurrent|^TARGET" $OUT/chat-*.md

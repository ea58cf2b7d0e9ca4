#!/usr/bin/env bash
# make embedder: rebuild the learned English embedder's model
# (internal/embed/learned/en.lmodel.gz) from public text: Debian packages of
# English documentation and man pages, fetched with apt-get download and
# unpacked with dpkg -x (no root needed for either once the package lists are
# current). Debian's fasttext trains skip-gram word vectors over the text's
# analyzer terms, and internal/embed/learned/build packs them. It takes about
# a quarter of an hour on two idle cores.
#
# The evaluated corpora (nodejs-doc, sqlite3-doc, manpages-zh, apache2-doc) and the
# packages others hold out (git, docker) are not in the list, on purpose.
#
# Several threads make fastText's result depend on scheduling, so a rebuild
# gives a model of the same quality rather than the same bytes; pass
# EMBEDDER_THREADS=1 for a byte-for-byte repeatable (and slower) run.
set -euo pipefail
cd "$(dirname "$0")/.."
export GOTOOLCHAIN=local CGO_ENABLED=0
PACKAGES=(manpages manpages-dev perl-doc python3.11-doc golang-1.19-doc debian-reference-en
  debian-handbook bash-doc coreutils util-linux findutils grep sed tar gzip openssh-client procps
  iproute2 systemd apt dpkg rsync curl wget bash less man-db
  postgresql-doc-15 python-django-doc ruby3.1-doc debian-policy developers-reference)
DIM=${EMBEDDER_DIM:-128}
EPOCHS=${EMBEDDER_EPOCHS:-10}
WS=${EMBEDDER_WS:-5}
THREADS=${EMBEDDER_THREADS:-$(nproc)}
OUT=${EMBEDDER_OUT:-internal/embed/learned/en.lmodel.gz}
WORK=${EMBEDDER_WORK:-$(mktemp -d /tmp/lore-embedder.XXXXXX)}

if ! command -v fasttext >/dev/null; then
  echo "embedder: installing Debian's fasttext" >&2
  if [ "$(id -u)" = 0 ]; then apt-get install -y fasttext >/dev/null; else sudo apt-get install -y fasttext >/dev/null; fi
fi
mkdir -p "$WORK/debs" "$WORK/root"
echo "embedder: downloading ${#PACKAGES[@]} packages into $WORK" >&2
(cd "$WORK/debs" && { apt-get download "${PACKAGES[@]}" >/dev/null 2>&1 ||
  { [ "$(id -u)" = 0 ] && apt-get update >/dev/null && apt-get download "${PACKAGES[@]}" >/dev/null; }; })
SOURCES=()
for deb in "$WORK"/debs/*.deb; do
  dpkg -x "$deb" "$WORK/root"
  SOURCES+=("$(basename "$deb" .deb)")
done
go build -o "$WORK/build" ./internal/embed/learned/build
echo "embedder: extracting text" >&2
"$WORK/build" prep "$WORK/root" "$WORK/corpus.txt"
echo "embedder: training (dim $DIM, $EPOCHS epochs, window $WS, $THREADS threads)" >&2
fasttext skipgram -input "$WORK/corpus.txt" -output "$WORK/vectors" -dim "$DIM" -epoch "$EPOCHS" \
  -minCount 5 -minn 0 -maxn 0 -ws "$WS" -neg 5 -thread "$THREADS" -verbose 1 >&2
EMBEDDER_TRAINER="fasttext 0.9.2 skipgram -dim $DIM -epoch $EPOCHS -minCount 5 -minn 0 -maxn 0 -ws $WS -neg 5" \
  "$WORK/build" pack "$WORK/vectors.vec" "$WORK/corpus.txt" "$OUT" "${SOURCES[@]}"
ls -l "$OUT" >&2
[ -n "${EMBEDDER_WORK:-}" ] || rm -rf "$WORK"

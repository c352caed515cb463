#!/bin/sh
# A/B of git states, the measurement behind docs/replacements.md: builds
# tree-ring from each REV (git archive into $OUT, no checkout), gives every
# build an identical project and times them all in the same run,
# interleaved (cmd/tree-ring/ab_bench_test.go): the SessionStart hook
# through its installed line and `tree-ring version` ($HOOKS rounds,
# default 200), then `tree-ring import` of 5,000 memories ($IMPORTS rounds,
# default 15; 0 skips a phase). The first REV is the baseline every ratio
# divides by. The benchmark code is this checkout's; only the binaries come
# from the REVs.
#
#	sh docs/bench-ab.sh BASE_REV OTHER_REV...
#	OUT=/tmp/ab HOOKS=300 sh docs/bench-ab.sh main HEAD
set -eu
[ $# -ge 2 ] || {
	echo "usage: sh docs/bench-ab.sh BASE_REV OTHER_REV..." >&2
	exit 2
}
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/tree-ring-ab.XXXXXX")}
HOOKS=${HOOKS:-200}
IMPORTS=${IMPORTS:-15}
mkdir -p "$OUT"
spec=
for rev in "$@"; do
	sha=$(git rev-parse --short "$rev^{commit}")
	rm -rf "$OUT/src/$sha"
	mkdir -p "$OUT/src/$sha"
	git archive "$sha" | tar -x -C "$OUT/src/$sha"
	spec="$spec $sha=$OUT/src/$sha"
	echo "$sha $rev: $(git log -1 --format=%s "$sha")"
done
load() { echo "$1 $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"; }
bench() { # pattern, rounds
	TREE_RING_BENCH_AB="$spec" go test -run '^$' -timeout 120m ./cmd/tree-ring -bench "$1" -benchtime "$2x" -v 2>&1 |
		grep -E '^Benchmark|load average' | tr '\t' '\n' | sed 's/^ *//'
}
echo "nproc $(nproc)"
load start
[ "$HOOKS" -eq 0 ] || {
	bench 'BenchmarkABHook$' "$HOOKS"
	load hook
}
[ "$IMPORTS" -eq 0 ] || {
	bench 'BenchmarkABImport$' "$IMPORTS"
	load end
}
rm -rf "$OUT/src"

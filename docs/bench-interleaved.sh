#!/bin/sh
# The interleaved runs behind docs/benchmarks.md, *Imports, rebuild and
# long commands*: each subject beside its baseline, alternating, ROUNDS
# times (default 5) at 100k events, then once at 10k and 1M for the growth
# table, the memory import and rebuild twice, and the hooks' lock wait
# during a 1M-event import. Test binaries and output go to $OUT.
#
#	OUT=/tmp/b sh docs/bench-interleaved.sh
set -eu
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/tree-ring-bench.XXXXXX")}
ROUNDS=${ROUNDS:-5}
mkdir -p "$OUT"
W=$(pwd)
go test -c -o "$OUT/bolt.test" ./bolt
go test -c -o "$OUT/cmd.test" ./cmd/tree-ring
go test -c -o "$OUT/recall.test" ./projections/recall
run() { # package dir, binary, -bench pattern, events, label
	(cd "$W/$1" && TREE_RING_BENCH_EVENTS=$4 RECALL_BENCH_DIR="$OUT/recall-data" "$OUT/$2" \
		-test.run '^$' -test.bench "$3" -test.benchtime 1x -test.timeout 60m 2>&1 |
		grep '^Benchmark' | sed "s/^/$5 n=$4 /")
}
load() { echo "$1 $(date -u +%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)"; }
pair() { # events, label
	run bolt bolt.test 'BenchmarkImport$/ledger' "$1" "$2"
	run bolt bolt.test 'BenchmarkImport$/bbolt' "$1" "$2"
	run bolt bolt.test 'BenchmarkRebuild$/ledger' "$1" "$2"
	run bolt bolt.test 'BenchmarkRebuild$/bbolt' "$1" "$2"
	run cmd/tree-ring cmd.test 'BenchmarkEventsImport/store' "$1" "$2"
	run cmd/tree-ring cmd.test 'BenchmarkEventsImport/command' "$1" "$2"
}
load start
i=1
while [ "$i" -le "$ROUNDS" ]; do
	pair 100000 "r$i"
	load "round $i"
	i=$((i + 1))
done
for n in 10000 1000000; do
	pair "$n" g
	load "growth $n"
done
for i in 1 2; do
	run cmd/tree-ring cmd.test '^BenchmarkImport$' 0 "m$i"
	run projections/recall recall.test 'RebuildMemories/n=(10000|100000)$' 0 "m$i"
	load "memory $i"
done
run bolt bolt.test 'HookWaitDuringImport' 1000000 h
load end

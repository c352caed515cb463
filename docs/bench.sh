#!/bin/sh
# Runs every benchmark behind docs/benchmarks.md, in order, in one go
# (about 15 minutes on 2 cores). Raw output goes to $OUT (default: a new
# temporary directory), never into the repository; one summary line per
# benchmark is printed as it finishes.
#
#	sh docs/bench.sh            # from the repository root
#	OUT=/tmp/b sh docs/bench.sh
#	FROM=recall sh docs/bench.sh  # resume at a step (skips the ones before)
set -eu
cd "$(dirname "$0")/.."
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/tree-ring-bench.XXXXXX")}
mkdir -p "$OUT"
export RECALL_BENCH_DIR="$OUT/recall-data"

FROM=${FROM:-}
step() { # name, then the command; output to $OUT/name.txt
	name=$1
	shift
	[ "$name" = "$FROM" ] && FROM=
	[ -z "$FROM" ] || return 0
	echo "== $name: $*"
	"$@" >"$OUT/$name.txt" 2>&1 || {
		tail -20 "$OUT/$name.txt"
		exit 1
	}
	grep -E '^Benchmark' "$OUT/$name.txt" || true
}

{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo -)"
	echo "nproc: $(nproc)"
	grep -m1 'model name' /proc/cpuinfo
	grep -m1 MemTotal /proc/meminfo
	echo "filesystem: $(df -T "${TMPDIR:-/tmp}" | awk 'NR==2 {print $1, $2}')"
	go version
	uname -sr
	uptime
} | tee "$OUT/machine.txt"

gt() { go test -run '^$' -timeout 60m "$@"; }

# Ledger: durable append, bulk import, scan, rebuild (1M events), then the
# same at 100k and 300k events for the growth table.
step append gt ./bolt -bench AppendDurable -benchtime 500x
step ledger-1m gt ./bolt -bench 'Import|Scan|Rebuild' -benchtime 1x
step ledger-100k env TREE_RING_BENCH_EVENTS=100000 go test -run '^$' -timeout 60m ./bolt -bench 'Import|Scan|Rebuild' -benchtime 1x
step ledger-300k env TREE_RING_BENCH_EVENTS=300000 go test -run '^$' -timeout 60m ./bolt -bench 'Import|Scan|Rebuild' -benchtime 1x
step events-import gt ./cmd/tree-ring -bench EventsImport -benchtime 1x
# Imports and rebuild beside their baselines, interleaved; growth; hooks'
# lock wait during a 1M-event import (docs/bench-interleaved.sh).
step interleaved env OUT="$OUT/interleaved" sh docs/bench-interleaved.sh
step codec gt ./events -bench . -benchtime 1s

# Strict JSON: objects of 1k/10k/80k keys against encoding/json, then the
# same with encoding/json/v2 (GOEXPERIMENT=jsonv2; v1 then runs on v2).
step strictjson gt ./events/strictjson -bench . -benchtime 1s -benchmem
step strictjson-v2 env GOEXPERIMENT=jsonv2 go test -run '^$' -timeout 60m ./events/strictjson -bench . -benchtime 1s -benchmem

# The installed program: the hook's quick check, the full digest status
# computes and a bare stat, on a release-sized (7.7 MB) file.
step program gt ./adapters -bench InspectProgram -benchtime 2s -count 5

# FSM replay of 100k harness events.
step replay gt ./fsm -bench Replay100k -benchtime 3x -count 3

# Memory: recall latencies and projection rebuild at 10k/30k/100k, import.
step recall gt ./projections/recall -bench 'Recall' -benchtime 2000x
step memory-rebuild gt ./projections/recall -bench RebuildMemories -benchtime 1x
step memory-import gt ./cmd/tree-ring -bench '^BenchmarkImport$' -benchtime 1x

# Fleet: publish and collect of 1M events on an embedded NATS server, beside
# raw nats.go publish/consume and the replica's own append (docs/fleet.md).
step fleet env TREE_RING_FLEET_BENCH_EVENTS=1000000 go test -run '^$' -timeout 60m ./cmd/tree-ring -bench BenchmarkFleet -benchtime 1x

# Run ledger: the recorder's extra commit, its fold and rebuild.
step runs gt ./cmd/tree-ring -bench 'RunRecorder' -benchtime 300x
step runs-fold gt ./projections -bench RunsFold -benchmem
step runs-rebuild gt ./cmd/tree-ring -bench RunLedgerRebuild -benchtime 2x

# The SessionStart hook, whole process: 10k memories + 10k receipts, then
# memories and receipts varied one at a time for the growth table.
step hook-10k-10k gt ./cmd/tree-ring -bench HookSessionStart -benchtime 200x
for mr in "0 10000" "100000 10000" "10000 0" "10000 1000"; do
	set -- $mr
	step "hook-$1-$2" env TREE_RING_BENCH_MEMORIES=$1 TREE_RING_BENCH_RECEIPTS=$2 \
		go test -run '^$' ./cmd/tree-ring -bench HookSessionStart -benchtime 150x
done

rm -rf "$RECALL_BENCH_DIR"
echo "raw output: $OUT"

#!/usr/bin/env bash
# The service's V8 setting (bin/catcomfort-service: --initial-old-space-size=128) side by side with
# Node's default, in one run: the service on the echo device with decoding simulated (every Run and
# decode free: docs/gpu.md "A simulated device"), started in the order DEFAULT SET SET DEFAULT, each
# loaded with the fixture photos at each concurrency (bench/load.js: 2 s warm-up, OS_DURATION_S
# measured). Per run and level: answers a second, p50 and p99 from load.js, and for the whole run
# the full collections (--trace-gc's Mark-Compact lines) and the resident memory at its end.
# Usage: bash bench/old-space.sh   (OS_CONCURRENCY=1,32,256, OS_DURATION_S=8)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
key=old-space-key-0123456789
port=${OS_PORT:-18710}
out=$(mktemp -d)
run() { # label flags...
  local label=$1 data pid; shift
  data=$(mktemp -d)
  (cd "$root" && CATCOMFORT_BENCH_SIMULATE=echo CATCOMFORT_BENCH_SIMULATE_DECODE=true CATCOMFORT_API_KEYS=$key CATCOMFORT_PORT=$port CATCOMFORT_HOST=127.0.0.1 CATCOMFORT_DRAIN_DELAY_MS=0 CATCOMFORT_DATA_DIR=$data CATCOMFORT_LOG_LEVEL=warn exec node --trace-gc "$@" dist/src/main.js) >"$out/$label.log" 2>&1 &
  pid=$!
  until curl -sf -o /dev/null "http://127.0.0.1:$port/readyz"; do
    kill -0 $pid 2>/dev/null || { cat "$out/$label.log"; exit 1; }
    sleep 0.5
  done
  local levels
  levels=$(cd "$root" && BENCH_CONCURRENCY=${OS_CONCURRENCY:-1,32,256} BENCH_DURATION_S=${OS_DURATION_S:-8} BENCH_WARMUP_S=2 node dist/bench/load.js "http://127.0.0.1:$port/v2/predict" $key 2>&1 | grep -E '^ +c=[0-9]+: [0-9.]+ req/s' | sed -E 's/^ +c=([0-9]+): ([0-9.]+) req\/s, p50 ([0-9.]+) ms, p90 [0-9.]+ ms, p99 ([0-9.]+) ms.*/\1 \2 \3 \4/')
  local rss; rss=$(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$pid/status")
  kill $pid; wait $pid 2>/dev/null || true
  local mc; mc=$(grep -c Mark-Compact "$out/$label.log" || true)
  while read -r c rps p50 p99; do echo "| $label | $c | $rps | $p50 | $p99 | $mc | $rss |"; done <<<"$levels"
  rm -rf "$data"
}
echo "| run | clients | answers/s | p50 ms | p99 ms | full collections in the run | RSS MiB at its end |"
echo "|---|---:|---:|---:|---:|---:|---:|"
run default; run set --initial-old-space-size=128; run set --initial-old-space-size=128; run default
rm -rf "$out"

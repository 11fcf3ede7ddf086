#!/usr/bin/env bash
# The service's V8 setting (the flag bin/catcomfort-service gives node) side by side with
# Node's default, in one run: the service on the echo device with decoding simulated (every Run and
# decode free: docs/gpu.md "A simulated device"), started in the order DEFAULT SET SET DEFAULT, each
# loaded with the fixture photos at each concurrency (bench/load.js: 2 s warm-up, OS_DURATION_S
# measured). Per run and level: answers a second, p50 and p99 from load.js, the main thread's CPU per
# answer (/proc, warm-up and window over answers/s x their seconds) and the collector's share of it
# (catcomfort_gc_seconds_total); for the whole run the full collections (--trace-gc's Mark-Compact
# lines) and the resident memory at its end.
# Usage: bash bench/old-space.sh   (OS_CONCURRENCY=1,32,256, OS_DURATION_S=8)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/bench/service-probe.sh"
key=old-space-key-0123456789
port=${OS_PORT:-18710}
out=$(mktemp -d)
OS_CONCURRENCY=${OS_CONCURRENCY:-1,32,256}
flag=$(sed -n 's/^exec .* \(--initial-old-space-size=[0-9]*\) .*/\1/p' "$root/bin/catcomfort-service")
pid=""
trap '[ -z "$pid" ] || kill "$pid" 2>/dev/null; rm -rf "$out"' EXIT
run() { # label flags...
  local label=$1 data; shift
  data=$(mktemp -d)
  (cd "$root" && CATCOMFORT_BENCH_SIMULATE=echo CATCOMFORT_BENCH_SIMULATE_DECODE=true CATCOMFORT_API_KEYS=$key CATCOMFORT_PORT=$port CATCOMFORT_HOST=127.0.0.1 CATCOMFORT_DRAIN_DELAY_MS=0 CATCOMFORT_DATA_DIR=$data CATCOMFORT_LOG_LEVEL=warn exec node --trace-gc "$@" dist/src/main.js) >"$out/$label.log" 2>&1 &
  pid=$!
  await_ready "$out/$label.log"
  local c line c0 c1 g0 g1 rows=""
  for c in ${OS_CONCURRENCY//,/ }; do
    c0=$(main_thread_ticks); g0=$(metric catcomfort_gc_seconds_total)
    line=$(cd "$root" && BENCH_CONCURRENCY=$c BENCH_DURATION_S=${OS_DURATION_S:-8} BENCH_WARMUP_S=2 node dist/bench/load.js "http://127.0.0.1:$port/v2/predict" $key 2>&1 | grep -E '^ +c=[0-9]+: [0-9.]+ req/s' | sed -E 's/^ +c=([0-9]+): ([0-9.]+) req\/s, p50 ([0-9.]+) ms, p90 [0-9.]+ ms, p99 ([0-9.]+) ms.*/\2 \3 \4/')
    c1=$(main_thread_ticks); g1=$(metric catcomfort_gc_seconds_total)
    rows+="$c $line $((c1 - c0)) $g0 $g1"$'\n'
  done
  local rss; rss=$(awk '/VmRSS/ {print int($2 / 1024)}' "/proc/$pid/status")
  kill $pid; wait $pid 2>/dev/null || true
  pid=""
  local mc; mc=$(grep -c Mark-Compact "$out/$label.log" || true)
  # Main-thread CPU (warm-up included) per answer of the measured window, and the collector's share of it.
  while read -r c rps p50 p99 ticks g0 g1; do
    [ -n "$c" ] || continue
    awk -v l="$label" -v c="$c" -v r="$rps" -v p50="$p50" -v p99="$p99" -v t="$ticks" -v g0="$g0" -v g1="$g1" -v mc="$mc" -v rss="$rss" -v d="${OS_DURATION_S:-8}" \
      'BEGIN { cpu = t / 100; printf "| %s | %s | %s | %s | %s | %d | %d %% | %s | %s |\n", l, c, r, p50, p99, cpu * 1e6 / (r * (d + 2)), 100 * (g1 - g0) / cpu, mc, rss }'
  done <<<"$rows"
  rm -rf "$data"
}
echo "| run | clients | answers/s | p50 ms | p99 ms | main thread us/answer | GC / main-thread CPU | full collections in the run | RSS MiB at its end |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
run default; run set "$flag"; run set "$flag"; run default

#!/usr/bin/env bash
# Two builds of the service side by side on this machine, in one run: OLD (a built worktree, e.g.
# `git worktree add ../old e2d549b`, then `npm run build:native && npm run build:ts` there) and this
# checkout, started one at a time with their defaults, as each deploys it (bin/catcomfort-service;
# `node dist/src/main.js` in trees older than the launcher), and loaded over HTTP (POST /v2/predict,
# bench/load.ts: the fixture photos, autocannon) in the order OLD NEW NEW OLD, so drift on the machine
# falls on both. Prints req/s and p99 per level and run, then the ratios NEW / OLD of the means.
# Usage: bash bench/side-by-side.sh OLD_TREE   (BENCH_CONCURRENCY, BENCH_DURATION_S, BENCH_WARMUP_S as for npm run bench)
set -euo pipefail
old=$(cd "${1:?usage: bench/side-by-side.sh OLD_TREE}" && pwd)
new=$(cd "$(dirname "$0")/.." && pwd)
export BENCH_CONCURRENCY="${BENCH_CONCURRENCY:-1,8,32}" BENCH_DURATION_S="${BENCH_DURATION_S:-20}" BENCH_WARMUP_S="${BENCH_WARMUP_S:-3}"
key=side-by-side-key-0123456789
port=${SIDE_BY_SIDE_PORT:-18610}
out=$(mktemp -d)
run() { # tree label
  local data; data=$(mktemp -d)
  local start=(node dist/src/main.js)
  [ -x "$1/bin/catcomfort-service" ] && start=(bin/catcomfort-service)
  (cd "$1" && CATCOMFORT_API_KEYS=$key CATCOMFORT_PORT=$port CATCOMFORT_HOST=127.0.0.1 CATCOMFORT_DRAIN_DELAY_MS=0 CATCOMFORT_DATA_DIR=$data CATCOMFORT_LOG_LEVEL=warn exec "${start[@]}") >"$out/$2.log" 2>&1 &
  local pid=$!
  until curl -sf -o /dev/null "http://127.0.0.1:$port/readyz"; do
    kill -0 $pid 2>/dev/null || { cat "$out/$2.log"; exit 1; }
    sleep 0.5
  done
  (cd "$new" && node dist/bench/load.js "http://127.0.0.1:$port/v2/predict" $key 2>/dev/null) >"$out/$2.json"
  kill $pid; wait $pid 2>/dev/null || true
  rm -rf "$data"
}
run "$old" old1; run "$new" new1; run "$new" new2; run "$old" old2
node -e '
const dir = process.argv[1], read = (n) => require(`${dir}/${n}.json`);
const runs = Object.fromEntries(["old1", "new1", "new2", "old2"].map((n) => [n, read(n)]));
for (const [n, levels] of Object.entries(runs)) console.log(n, levels.map((l) => `c=${l.concurrency} ${l.rps.toFixed(2)} req/s p99 ${l.p99Ms.toFixed(0)} ms`).join(" | "));
const mean = (names, c, f) => names.reduce((s, n) => s + runs[n].find((l) => l.concurrency === c)[f], 0) / names.length;
for (const l of runs.old1) {
  const c = l.concurrency;
  console.log(`c=${c}: throughput new/old ${(mean(["new1", "new2"], c, "rps") / mean(["old1", "old2"], c, "rps")).toFixed(3)}x, p99 old/new ${(mean(["old1", "old2"], c, "p99Ms") / mean(["new1", "new2"], c, "p99Ms")).toFixed(3)}x`);
}' "$out"

#!/usr/bin/env bash
# The main thread's cost per request, side by side in one run: an older build (OLD_TREE, a built
# worktree) and this checkout with the HTTP front on the main thread (CATCOMFORT_HTTP_THREADS=1) and
# on 2 threads, started one at a time in the order OLD T1 T2 T2 T1 OLD. Each is loaded with
# POST /v2/predict of one fixture photo (autocannon, keep-alive, no Retry-After honoured) at each
# concurrency; per level it prints answers per second (all, and 200s), p99, and the main thread's CPU
# microseconds per answer (/proc/<pid>/task/<pid>/stat around the level), the whole service's (every
# thread) and the whole machine's (the load generator's included: /proc/stat), and for this checkout the
# collector's pauses (catcomfort_gc_seconds_total) as a share of that CPU time, as /v2/stats gives it,
# and of the loop's busy time (catcomfort_event_loop_busy_seconds_total): when other threads take
# the CPU, a pause lasts longer than the CPU it uses, and the busy time counts that alike.
# With OLD_TREE `free`, this checkout alone with the model made free (CATCOMFORT_BENCH_FREE_MODEL):
# T1 T2 T2 T1, so the loop and the front are the wall, and req/s shows what the threads add.
# MT_FREE=true with an OLD_TREE makes the model free in all six runs (the old build must know
# CATCOMFORT_BENCH_FREE_MODEL), to set two builds' fronts and loops side by side.
# MT_PROTOCOL=oip loads the Open Inference Protocol's REST infer with the photo as binary tensor data
# (bench/protocols.ts) instead of /v2/predict; MT_PROTOCOL=grpc its gRPC ModelInfer (the service with
# CATCOMFORT_GRPC_PORT; bench/grpc-load.ts: one channel, as many calls in flight as the clients).
# MT_OLD_THREADS runs the older build with that many front threads (default 1), to set its T2 beside this one's.
# MT_LOG_LEVEL sets CATCOMFORT_LOG_LEVEL for every run (default warn: no access line; info writes one per request).
# MT_RATE holds each level at that many requests a second in all (autocannon's overallRate), for the
# cost per answer at a given rate rather than at the most the clients get.
# MT_SIMULATE=PROFILE (with `free`): instead of the free model, the real path on a simulated device
# (CATCOMFORT_BENCH_SIMULATE, decoding simulated too: docs/gpu.md "A simulated device"), so the N-API
# calls, the pool and the result conversion are in the figures; `echo` makes every Run free.
# Usage: bash bench/main-thread.sh OLD_TREE|free   (MT_PHOTO, MT_PROTOCOL=predict|oip|grpc, MT_OLD_THREADS=1, MT_CONCURRENCY=1,8,32,128, MT_DURATION_S=15, MT_LOG_LEVEL=warn, MT_FREE=false, MT_RATE unset, MT_SIMULATE unset)
set -euo pipefail
free=${MT_FREE:-false}
if [ "${1:-}" = free ]; then free=true; old=""; else old=$(cd "${1:?usage: bench/main-thread.sh OLD_TREE|free}" && pwd); fi
simulate=${MT_SIMULATE:-}
old_threads=${MT_OLD_THREADS:-1}
if [ -n "$simulate" ]; then
  [ -z "$old" ] || { echo "MT_SIMULATE goes with free (this checkout alone)" >&2; exit 2; }
  free=false
fi
if [ -n "$old" ] && [ "$free" = true ] && ! grep -rqs CATCOMFORT_BENCH_FREE_MODEL "$old/dist/src"; then
  echo "MT_FREE: $old has no CATCOMFORT_BENCH_FREE_MODEL (its runs would load the real packs)" >&2
  exit 2
fi
new=$(cd "$(dirname "$0")/.." && pwd)
. "$new/bench/service-probe.sh"
photo=${MT_PHOTO:-$new/../shared/fixtures/photos/007_oxford_Siamese_151.jpg}
levels=${MT_CONCURRENCY:-1,8,32,128}
duration=${MT_DURATION_S:-15}
key=main-thread-key-0123456789
port=${MT_PORT:-18620}
grpc_port=$((port + 1))
out=$(mktemp -d)
header_length=""
if [ "${MT_PROTOCOL:-predict}" = grpc ]; then
  cp "$photo" "$out/body"
elif [ "${MT_PROTOCOL:-predict}" = oip ]; then
  header_length=$(cd "$new" && node -e 'const { oipBinaryRequest } = require("./dist/bench/protocols"); const r = oipBinaryRequest(require("fs").readFileSync(process.argv[1])); require("fs").writeFileSync(process.argv[2], r.body); console.log(r.headers["inference-header-content-length"])' "$photo" "$out/body")
  type=application/octet-stream path=/v2/models/bc-v1/infer
else
  { printf '{"image":"'; base64 -w0 "$photo"; printf '"}'; } >"$out/body"
  type=application/json path=/v2/predict
fi
load() { # concurrency seconds [rate]: autocannon's JSON result (its API: the body sent as bytes, which its command line would read as text)
  if [ "${MT_PROTOCOL:-predict}" = grpc ]; then
    (cd "$new" && node dist/bench/grpc-load.js "grpc://127.0.0.1:$grpc_port/bc-v1" "$key" "$out/body" "$1" "$2" "${3:-}")
    return
  fi
  (cd "$new" && node -e '
const [url, key, file, type, headerLength, connections, duration, rate] = process.argv.slice(1);
const headers = { "api-key": key, "content-type": type, ...(headerLength ? { "inference-header-content-length": headerLength } : {}) };
const held = rate ? { overallRate: +rate } : {};
require("autocannon")({ url, connections: +connections, duration: +duration, method: "POST", headers, body: require("fs").readFileSync(file), ...held }, (error, result) => {
  if (error) throw error;
  console.log(JSON.stringify(result));
});' "http://127.0.0.1:$port$path" "$key" "$out/body" "$type" "$header_length" "$1" "$2" "${3:-}")
}
run() { # tree threads label
  local data pid; data=$(mktemp -d)
  (cd "$1" && if [ "${MT_PROTOCOL:-predict}" = grpc ]; then export CATCOMFORT_GRPC_PORT=$grpc_port; fi && CATCOMFORT_BENCH_SIMULATE=$simulate CATCOMFORT_BENCH_SIMULATE_DECODE=true CATCOMFORT_BENCH_FREE_MODEL=$free CATCOMFORT_HTTP_THREADS=$2 CATCOMFORT_API_KEYS=$key CATCOMFORT_PORT=$port CATCOMFORT_HOST=127.0.0.1 CATCOMFORT_DRAIN_DELAY_MS=0 CATCOMFORT_DATA_DIR=$data CATCOMFORT_LOG_LEVEL=${MT_LOG_LEVEL:-warn} exec node dist/src/main.js) >"$out/$3.log" 2>&1 &
  pid=$!
  await_ready "$out/$3.log"
  load 8 3 >/dev/null
  for c in ${levels//,/ }; do
    local c0 p0 m0 g0 b0 c1 p1 m1 g1 b1
    c0=$(main_thread_ticks); p0=$(process_ticks); m0=$(machine_busy_ticks); g0=$(metric catcomfort_gc_seconds_total); b0=$(metric catcomfort_event_loop_busy_seconds_total)
    load "$c" "$duration" "${MT_RATE:-}" >"$out/$3-$c.json"
    c1=$(main_thread_ticks); p1=$(process_ticks); m1=$(machine_busy_ticks); g1=$(metric catcomfort_gc_seconds_total); b1=$(metric catcomfort_event_loop_busy_seconds_total)
    echo "{\"run\":\"$3\",\"c\":$c,\"cpuTicks\":$((c1 - c0)),\"processTicks\":$((p1 - p0)),\"machineTicks\":$((m1 - m0)),\"gcS\":${g1:-null},\"gcS0\":${g0:-null},\"busyS\":${b1:-null},\"busyS0\":${b0:-null}}" >>"$out/rows.jsonl"
  done
  kill $pid; wait $pid 2>/dev/null || true
  rm -rf "$data"
}
if [ -z "$old" ]; then
  run "$new" 1 t1a; run "$new" 2 t2a; run "$new" 2 t2b; run "$new" 1 t1b
else
  run "$old" "$old_threads" old1; run "$new" 1 t1a; run "$new" 2 t2a; run "$new" 2 t2b; run "$new" 1 t1b; run "$old" "$old_threads" old2
fi
node -e '
const fs = require("fs"), dir = process.argv[1];
const rows = fs.readFileSync(`${dir}/rows.jsonl`, "utf8").trim().split("\n").map((l) => JSON.parse(l)).map((r) => {
  const a = JSON.parse(fs.readFileSync(`${dir}/${r.run}-${r.c}.json`, "utf8"));
  const cpuS = r.cpuTicks / 100, n = a.requests.total;
  return { ...r, rps: n / a.duration, ok: (n - a.non2xx) / a.duration, p99: a.latency.p99, non2xx: a.non2xx, us: Math.round((cpuS * 1e6) / n), processUs: Math.round((r.processTicks * 1e4) / n), machineUs: Math.round((r.machineTicks * 1e4) / n), gc: r.gcS === null ? null : (r.gcS - r.gcS0) / cpuS, gcBusy: r.gcS === null || r.busyS === null ? null : (r.gcS - r.gcS0) / (r.busyS - r.busyS0) };
});
const pct = (x) => (x === null ? "–" : (100 * x).toFixed(0) + " %");
console.log("| run | clients | answers/s | 200/s | p99 ms | main thread us/answer | service us/answer | machine us/answer | GC / CPU | GC / busy |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const r of rows) console.log(`| ${r.run} | ${r.c} | ${r.rps.toFixed(1)} | ${r.ok.toFixed(1)} | ${r.p99} | ${r.us} | ${r.processUs} | ${r.machineUs} | ${pct(r.gc)} | ${pct(r.gcBusy)} |`);
const mean = (runs, c, f) => { const xs = rows.filter((r) => runs.includes(r.run) && r.c === c).map((r) => r[f]); return xs.reduce((s, x) => s + x, 0) / xs.length; };
const free = !rows.some((r) => r.run === "old1");
console.log(free ? "\n| clients | 200/s T1 | 200/s T2 | T2/T1 | p99 T1 | p99 T2 | main us T1 | T2 |\n|---:|---:|---:|---:|---:|---:|---:|---:|" : "\n| clients | 200/s T1/old | 200/s T2/old | p99 old/T1 | p99 old/T2 | main us old | T1 | T2 | T2/old |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const c of [...new Set(rows.map((r) => r.c))]) {
  const o = ["old1", "old2"], t1 = ["t1a", "t1b"], t2 = ["t2a", "t2b"];
  if (free) {
    console.log(`| ${c} | ${mean(t1, c, "ok").toFixed(0)} | ${mean(t2, c, "ok").toFixed(0)} | ${(mean(t2, c, "ok") / mean(t1, c, "ok")).toFixed(2)} | ${mean(t1, c, "p99").toFixed(0)} | ${mean(t2, c, "p99").toFixed(0)} | ${mean(t1, c, "us").toFixed(0)} | ${mean(t2, c, "us").toFixed(0)} |`);
    continue;
  }
  console.log(`| ${c} | ${(mean(t1, c, "ok") / mean(o, c, "ok")).toFixed(3)} | ${(mean(t2, c, "ok") / mean(o, c, "ok")).toFixed(3)} | ${(mean(o, c, "p99") / mean(t1, c, "p99")).toFixed(2)} | ${(mean(o, c, "p99") / mean(t2, c, "p99")).toFixed(2)} | ${mean(o, c, "us").toFixed(0)} | ${mean(t1, c, "us").toFixed(0)} | ${mean(t2, c, "us").toFixed(0)} | ${(mean(t2, c, "us") / mean(o, c, "us")).toFixed(2)} |`);
}' "$out"

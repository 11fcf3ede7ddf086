#!/usr/bin/env bash
# Runs the whole test suite N times in a row (default 10) to catch flaky tests: builds once, stops
# at the first failing run and names its failing tests. Usage: bash test/soak.sh [N]
set -uo pipefail
cd "$(dirname "$0")/.."
runs="${1:-10}"
if ! [[ "$runs" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: bash test/soak.sh [N]  (N >= 1, default 10)" >&2
  exit 2
fi
npm run build:ts || exit 1
log="$(mktemp -t catcomfort-soak.XXXXXX)"
for ((run = 1; run <= runs; run++)); do
  started=$SECONDS
  if node --test --test-concurrency=1 --test-reporter=tap dist/test/ >"$log" 2>&1; then
    echo "soak: run $run passed ($((SECONDS - started)) s)"
  else
    echo "soak: run $run of $runs FAILED ($((SECONDS - started)) s); failing tests:"
    awk '/^ *not ok /{print; want=1; next} want && /^ *location:/{print; want=0}' "$log"
    echo "soak: full output of run $run in $log"
    echo "soak: $((run - 1)) of $runs runs passed"
    exit 1
  fi
done
rm -f "$log"
echo "soak: $runs of $runs runs passed"

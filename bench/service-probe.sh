# Sourced by bench/main-thread.sh and bench/old-space.sh: reading a service they started in the
# background, with $pid (its process), $port and $key set.

# Waits for /readyz to answer 200; if the service exits first, prints its log ($1) and exits.
await_ready() {
  until curl -sf -o /dev/null "http://127.0.0.1:$port/readyz"; do
    kill -0 "$pid" 2>/dev/null || { cat "$1"; exit 1; }
    sleep 0.5
  done
}

# The main thread's CPU so far, in clock ticks (/proc/PID/task/PID/stat: utime + stime).
main_thread_ticks() { awk '{print $14 + $15}' "/proc/$pid/task/$pid/stat"; }

# The whole service process's CPU so far (every thread), in clock ticks (/proc/PID/stat).
process_ticks() { awk '{print $14 + $15}' "/proc/$pid/stat"; }

# Every CPU's busy time so far (the load generator's included), in clock ticks (/proc/stat: all but idle and iowait).
machine_busy_ticks() { awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8 + $9}' /proc/stat; }

# One metric's value from /metrics (a counter without labels).
metric() { curl -s -H "api-key: $key" "http://127.0.0.1:$port/metrics?name=$1" | awk -v n="$1" '$1 == n {print $2}'; }

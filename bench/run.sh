#!/usr/bin/env bash
# make bench — push and KV throughput and latency against a started broker, with a real load
# generator (wrk) and durable commits (the embedded PostgreSQL with its default fsync and
# synchronous_commit). Usage:
#   bench/run.sh [--url http://host:port] [--duration SECONDS] [--only NAME]
# (--only streams-tumbling-16p runs the streams workload alone)
# Without --url it starts build/release/queen on a fresh data directory and reports its RSS.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/versions.sh
queen_path_node # bench/partitions.mjs and bench/sink.mjs run on the Node the tests use
require_node || exit 1

url=""
duration=10
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --url) url=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

pid=""
data=""
cleanup() {
  if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  if [ -n "$data" ]; then rm -rf "$data"; fi
}
trap cleanup EXIT

if [ -z "$url" ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  data=$(mktemp -d /tmp/queen-bench-XXXXXX); chmod 755 "$data"
  # a fresh key per run, so the encrypted workloads below can configure their queues
  key=$(openssl rand -hex 32)
  PORT=$port HOST=127.0.0.1 QUEEN_DATA_DIR=$data QUEEN_LOG_LEVEL=warn QUEEN_ENCRYPTION_KEY=$key \
    build/release/queen > "$data.log" 2>&1 &
  pid=$!
  url="http://127.0.0.1:$port"
  for _ in $(seq 1 300); do
    curl -sf "$url/health" >/dev/null 2>&1 && break
    sleep 0.1
  done
  curl -sf "$url/health" >/dev/null || { cat "$data.log"; echo "broker did not start" >&2; exit 1; }
  echo "broker: build/release/queen (pid $pid), embedded PostgreSQL, durable commits"
else
  echo "broker: $url"
fi
echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo); load generator: wrk, 1 thread"
echo

rss_kb() { [ -n "$pid" ] && awk '/^VmRSS/ {print $2}' /proc/$pid/status || echo 0; }
# the broker process's own CPU (user + system, clock ticks; not PostgreSQL's): 0 without a pid
cpu_ticks() { if [ -n "$pid" ]; then awk '{print $14 + $15}' /proc/$pid/stat; else echo 0; fi; }
# the CPU of the broker and of the embedded PostgreSQL it started (postmaster and backends; only
# those alive at the end are counted), clock ticks
tree_ticks() {
  [ -n "$pid" ] || { echo 0; return; }
  local all=$pid p kids
  # the embedded postmaster daemonizes: found by its data directory, with its backends below
  kids="$(pgrep -P "$pid" 2>/dev/null || true) $(pgrep -f -- "postgres -D $data/" 2>/dev/null || true)"
  kids=$(echo $kids)
  while [ -n "$kids" ]; do
    all="$all $kids"
    p=$kids; kids=""
    for k in $p; do kids="$kids $(pgrep -P "$k" 2>/dev/null || true)"; done
    kids=$(echo $kids)
  done
  for k in $all; do awk '{print $14 + $15}' /proc/$k/stat 2>/dev/null; done | awk '{s += $1} END {print s + 0}'
}
# "; broker X µs/msg, with PostgreSQL Y µs/msg" from tick counts around a run of msgs messages
cpu_note() {
  local b=$1 t=$2 msgs=$3
  [ -n "$pid" ] && [ "$msgs" -gt 0 ] || return 0
  awk -v b="$b" -v t="$t" -v hz="$(getconf CLK_TCK)" -v m="$msgs" \
    'BEGIN {printf "  broker CPU %.2f µs/msg, with PostgreSQL %.2f µs/msg", b / hz * 1e6 / m, t / hz * 1e6 / m}'
}
hwm_kb() { [ -n "$pid" ] && awk '/^VmHWM/ {print $2}' /proc/$pid/status || echo 0; }

printf '%-36s %5s %5s %10s %11s %8s %8s %8s %8s %6s\n' workload conns batch "req/s" "msg/s" "p50 ms" "p90 ms" "p99 ms" "p99.9" errors
# One row of the table from a wrk run's output (its RESULT line): `num/den` units (messages,
# ops) per request, shown with the suffix `unit`.
row() {
  local name=$1 conns=$2 batch=$3 num=$4 den=$5 unit=$6 out=$7 line secs reqs units
  line=$(grep '^RESULT' <<<"$out") || { echo "$out"; return 1; }
  eval "$(sed 's/^RESULT //' <<<"$line")"
  secs=$(awk -v d="$duration_us" 'BEGIN {print d/1e6}')
  reqs=$(awk -v r="$requests" -v s="$secs" 'BEGIN {printf "%.0f", r/s}')
  units=$(awk -v r="$requests" -v s="$secs" -v n="$num" -v m="$den" 'BEGIN {printf "%.0f", r*n/m/s}')
  printf '%-36s %5d %5s %10s %11s %8s %8s %8s %8s %6d\n' "$name" "$conns" "$batch" "$reqs" "$units$unit" "$p50" "$p90" "$p99" "$p999" $((errors + non2xx))
}
# a push row, then the CPU it took per message (broker; broker and PostgreSQL)
push_row() {
  local name=$1 conns=$2 batch=$3 out=$4 c0=$5 t0=$6 c1 t1 line
  c1=$(cpu_ticks); t1=$(tree_ticks)
  line=$(row "$name" "$conns" "$batch" "$batch" 1 "" "$out") || { echo "$line"; return 1; }
  eval "$(grep '^RESULT' <<<"$out" | sed 's/^RESULT //')"
  echo "$line$(cpu_note $((c1 - c0)) $((t1 - t0)) $((requests * batch)))"
}
run() {
  local name=$1 conns=$2 batch=$3 queue=$4 random=${5:-0}
  if [ -n "$only" ] && [ "$only" != "$name" ]; then return; fi
  # warm up (creates the queue and partitions), then measure
  RANDOM_PAYLOAD=$random BATCH=$batch QUEUE=$queue PARTS=10 wrk -t1 -c"$conns" -d2s -s bench/push.lua "$url" >/dev/null 2>&1 || true
  local out c0 t0
  c0=$(cpu_ticks); t0=$(tree_ticks)
  out=$(RANDOM_PAYLOAD=$random BATCH=$batch QUEUE=$queue PARTS=10 wrk -t1 -c"$conns" -d"${duration}s" --latency -s bench/push.lua "$url" 2>&1)
  push_row "$name" "$conns" "$batch" "$out" "$c0" "$t0"
}

run push-batch1-1conn 1 1 bench_b1c1
run push-batch1-32conn 32 1 bench_b1c32
run push-batch100-16conn 16 100 bench_b100c16

# The same batches as the 2.x binary body (QPB1): flag 4 (transaction ids, all empty: the broker
# mints them, as for push.lua's items) and flag 8 (each partition's messages framed and zstd-compressed
# once by the producer, as the 2.x client's push_compression does). One body, sent again and again.
run_bin() {
  local name=$1 conns=$2 batch=$3 queue=$4 frames=$5
  if [ -n "$only" ] && [ "$only" != "$name" ]; then return; fi
  local body out
  body=$(mktemp /tmp/queen-bench-qpb-XXXXXX)
  QUEUE=$queue BATCH=$batch PARTS=10 FRAMES=$frames build/venv/bin/python bench/qpb_body.py "$body"
  BODY_FILE=$body wrk -t1 -c"$conns" -d2s -s bench/push-binary.lua "$url" >/dev/null 2>&1 || true
  local c0 t0
  c0=$(cpu_ticks); t0=$(tree_ticks)
  out=$(BODY_FILE=$body wrk -t1 -c"$conns" -d"${duration}s" --latency -s bench/push-binary.lua "$url" 2>&1)
  rm -f "$body"
  push_row "$name" "$conns" "$batch" "$out" "$c0" "$t0"
}
run_bin push-qpb1-batch100-16conn 16 100 bench_qpb_b100c16 0
run_bin push-qpb1-frames-batch100-16conn 16 100 bench_qpbz_b100c16 1

# The same pushes to queues with encryptionEnabled: every payload sealed (AES-256-GCM) on the
# way in, so the difference to the rows above is the cost of encryption at rest. Two parts: the
# sealing itself (CPU on the loop), and what PostgreSQL no longer compresses (sealed bytes do
# not shrink; the "xxx" payloads above shrink a lot). The -random pair (payloads of random
# letters, which lz4 cannot shrink either) shows the first part alone. A broker without
# QUEEN_ENCRYPTION_KEY refuses to configure them (400): the rows are skipped.
run push-batch100-16conn-random 16 100 bench_rnd_b100c16 1
encrypted() {
  local queue=$1
  curl -sf -X POST "$url/api/v1/configure" -H 'content-type: application/json' \
    -d "{\"queue\":\"$queue\",\"options\":{\"encryptionEnabled\":true}}" >/dev/null
}
for w in "push-batch1-32conn-sealed 32 1 bench_enc_b1c32" "push-batch100-16conn-sealed 16 100 bench_enc_b100c16" \
         "push-batch100-16conn-random-sealed 16 100 bench_enc_rnd_b100c16 1"; do
  set -- $w
  if [ -n "$only" ] && [ "$only" != "$1" ]; then continue; fi
  if encrypted "$4"; then run "$@"; else printf '%-36s skipped: the broker has no QUEEN_ENCRYPTION_KEY\n' "$1"; fi
done

# consumers: fill a queue first (pushes, batch 100), then drain it
fill() {
  local queue=$1 secs=$2
  BATCH=100 QUEUE=$queue PARTS=10 wrk -t1 -c16 -d"${secs}s" -s bench/push.lua "$url" >/dev/null 2>&1
}
consume() {
  local name=$1 conns=$2 mode=$3 queue=$4 note=$5
  if [ -n "$only" ] && [ "$only" != "$name" ]; then return; fi
  local out line cpu0 cpu1
  cpu0=$(cpu_ticks)
  out=$(FRAMES=${FRAMES:-0} MODE=$mode QUEUE=$queue BATCH=100 GROUPS=10 wrk -t1 -c"$conns" -d"${duration}s" --latency -s bench/pop.lua "$url" 2>&1)
  cpu1=$(cpu_ticks)
  line=$(grep '^RESULT' <<<"$out") || { echo "$out"; return 1; }
  eval "$(sed 's/^RESULT //' <<<"$line")"
  local secs reqs msgs
  secs=$(awk -v d="$duration_us" 'BEGIN {print d/1e6}')
  reqs=$(awk -v r="$requests" -v s="$secs" 'BEGIN {printf "%.0f", r/s}')
  msgs=$(awk -v m="$messages" -v s="$secs" 'BEGIN {printf "%.0f", m/s}')
  local extra=""
  [ "$unreadable" -gt 0 ] && extra+="; answers not read as JSON: $unreadable"
  [ "$ackfail" -gt 0 ] && extra+="; acks refused: $ackfail"
  if [ -n "$pid" ] && [ "$messages" -gt 0 ]; then
    extra+="; broker CPU $(awk -v t=$((cpu1 - cpu0)) -v hz="$(getconf CLK_TCK)" -v m="$messages" 'BEGIN {printf "%.2f", t / hz * 1e6 / m}') µs/msg"
  fi
  printf '%-36s %5d %5d %10s %11s %8s %8s %8s %8s %6d  %s\n' "$name" "$conns" 100 "$reqs" "$msgs" "$p50" "$p90" "$p99" "$p999" $((errors + non2xx)) "${note}empty pops: $empty$extra"
}
want() { [ -z "$only" ] || [ "$only" = "$1" ]; }

if want pop-autoack-batch100-16conn; then fill bench_pop $((duration + 4)); consume pop-autoack-batch100-16conn 16 autoack bench_pop ""; fi
# the same pops answered QPF1 (frames=true, the 2.x client's framed_pop)
if want pop-autoack-batch100-16conn-framed; then
  fill bench_popf $((duration + 4)); FRAMES=1 consume pop-autoack-batch100-16conn-framed 16 autoack bench_popf "QPF1; "
fi
# pops that open every payload
if want pop-autoack-batch100-16conn-sealed; then
  if encrypted bench_enc_pop; then
    fill bench_enc_pop $((duration + 4)); consume pop-autoack-batch100-16conn-sealed 16 autoack bench_enc_pop "sealed; "
  else
    printf '%-36s skipped: the broker has no QUEEN_ENCRYPTION_KEY\n' pop-autoack-batch100-16conn-sealed
  fi
fi
if want pop-autoack-batch100-16conn-sealed-framed; then
  if encrypted bench_enc_popf; then
    fill bench_enc_popf $((duration + 4)); FRAMES=1 consume pop-autoack-batch100-16conn-sealed-framed 16 autoack bench_enc_popf "sealed, QPF1; "
  else
    printf '%-36s skipped: the broker has no QUEEN_ENCRYPTION_KEY\n' pop-autoack-batch100-16conn-sealed-framed
  fi
fi
if want pop-ack-batch100-16conn; then fill bench_popack $((duration + 2)); consume pop-ack-batch100-16conn 16 ack bench_popack "req/s counts pops and acks; "; fi
if want pop-ack-batch100-16conn-framed; then
  fill bench_popackf $((duration + 2))
  FRAMES=1 consume pop-ack-batch100-16conn-framed 16 ack bench_popackf "QPF1, acked by its u64 partitionId; req/s counts pops and acks; "
fi
if want fanout-10groups-16conn; then fill bench_fanout 3; consume fanout-10groups-16conn 16 fanout bench_fanout "10 groups read the same records; "; fi
# The KV store: a third each of putIfAbsent (fresh keys), get (seeded keys) and 3-op atomic
# batches (put, incr of one of 100 shared counters, get); every write is a durable commit.
# ops/s counts the ops inside batches (5 ops per 3 requests).
run_kv() {
  local name=$1 conns=$2
  if [ -n "$only" ] && [ "$only" != "$name" ]; then return; fi
  local seeds=1000 ops i
  # the KV store is queen's own (0.15 has none): a broker without it gets a line, not a row of errors
  local probe
  probe=$(curl -s -o /dev/null -w '%{http_code}' "$url/api/v1/kv/bench" || true)
  if [ "$probe" != 200 ]; then
    printf '%-36s skipped: GET /api/v1/kv/bench (list a namespace) answered %s: no KV store\n' "$name" "$probe"
    return 0
  fi
  ops=""
  for ((i = 0; i < seeds; i++)); do ops+="${ops:+,}{\"op\":\"put\",\"key\":\"seed-$i\",\"value\":{\"seed\":$i}}"; done
  curl -sf -X POST "$url/api/v1/kv/batch" -H 'content-type: application/json' \
    -d "{\"namespace\":\"bench\",\"ops\":[$ops]}" >/dev/null || { echo "seeding the KV keys failed" >&2; return 1; }
  RUN="w$$" SEEDS=$seeds wrk -t1 -c"$conns" -d2s -s bench/kv.lua "$url" >/dev/null 2>&1 || true
  local out
  out=$(RUN="m$$" SEEDS=$seeds wrk -t1 -c"$conns" -d"${duration}s" --latency -s bench/kv.lua "$url" 2>&1)
  row "$name" "$conns" - 5 3 " ops" "$out"
}

run_kv kv-putifabsent-get-batch 16

# The KV store on the 2.x wire (POST /api/v1/kv): a third each of putIfAbsent (fresh keys,
# ttlSeconds), get (seeded keys) and 3-op batches (a required putIfAbsent gate, incr of one of
# 100 shared counters, get). ops/s counts the ops inside batches (5 ops per 3 requests).
run_kv2() {
  local name=$1 conns=$2
  if [ -n "$only" ] && [ "$only" != "$name" ]; then return; fi
  local seeds=1000 ops i probe
  probe=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$url/api/v1/kv" -H 'content-type: application/json' \
    -d '{"operations":[]}' || true)
  if [ "$probe" != 200 ]; then
    printf '%-36s skipped: POST /api/v1/kv answered %s: no 2.x KV\n' "$name" "$probe"
    return 0
  fi
  ops=""
  for ((i = 0; i < seeds; i++)); do ops+="${ops:+,}{\"op\":\"put\",\"ns\":\"bench2\",\"key\":\"seed-$i\",\"value\":{\"seed\":$i},\"forever\":true}"; done
  curl -sf -X POST "$url/api/v1/kv" -H 'content-type: application/json' \
    -d "{\"operations\":[$ops]}" >/dev/null || { echo "seeding the 2.x KV keys failed" >&2; return 1; }
  RUN="w$$" SEEDS=$seeds wrk -t1 -c"$conns" -d2s -s bench/kv2.lua "$url" >/dev/null 2>&1 || true
  local out
  out=$(RUN="m$$" SEEDS=$seeds wrk -t1 -c"$conns" -d"${duration}s" --latency -s bench/kv2.lua "$url" 2>&1)
  row "$name" "$conns" - 5 3 " ops" "$out"
}
run_kv2 kv2-putifabsent-get-batch-required 16

# Locks (POST /api/v1/locks): 16 holders, each cycling acquire → renew → release on its own
# lock, one op per request (each a commit).
run_locks() {
  local name=$1 conns=$2
  if [ -n "$only" ] && [ "$only" != "$name" ]; then return; fi
  local probe
  probe=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$url/api/v1/locks" -H 'content-type: application/json' \
    -d '{"operations":[]}' || true)
  if [ "$probe" != 200 ]; then
    printf '%-36s skipped: POST /api/v1/locks answered %s: no locks\n' "$name" "$probe"
    return 0
  fi
  local out
  out=$(RUN="l$$" wrk -t"$conns" -c"$conns" -d"${duration}s" --latency -s bench/locks.lua "$url" 2>&1)
  row "$name" "$conns" - 1 1 " ops" "$out"
}
run_locks locks-acquire-renew-release 16

# 10,001 partitions with concurrent push and pop (explicit ack): first at a rate the broker
# sustains (how long records wait because of scheduling), then unthrottled (with a backlog)
if want partitions-10001; then
  echo
  echo "partitions-10001: 8 producers (batch 100, random partitions), 16 consumers (batch 100, 10 partitions per pop, ack)"
  node bench/partitions.mjs --url "$url" --seconds "$duration" --rate 3000 --queue bench_parts_r | sed 's/^/  rate 3000\/s:  /'
  node bench/partitions.mjs --url "$url" --seconds "$duration" --queue bench_parts_u | sed 's/^/  unthrottled: /'
fi

# Streams: a tumbling count+sum over 16 partitions, 50-record batches, driven by the real 2.x
# runtime (queen-mq's Runner, bench/streams.py) in 1 and 2 runner processes; source records/s,
# cycles/s and where the CPU went (runners, broker, PostgreSQL).
if want streams-tumbling-16p; then
  echo
  echo "streams-tumbling-16p: a source of 16 partitions x 2000 records drained by the 2.x runner (count+sum, 1 s windows, batch 50)"
  if [ -x build/venv/bin/python ]; then
    for n in 1 2; do
      build/venv/bin/python bench/streams.py --url "$url" --runners $n --broker-pid "${pid:-0}" 2>/dev/null | grep -E '^(runners|cpu)' | sed 's/^/  /'
    done
  else
    echo "  skipped: build/venv (the 2.x client) is missing: scripts/install-deps.sh test"
  fi
fi

# Streams in JavaScript: the spec's JS example chain run by clients/js (bench/streams-js.mjs) over
# 16 partitions, batchSize 50 and 500; source records/s
if want streams-js-16p; then
  echo
  echo "streams-js-16p: the spec's JS example (clients/js) over a backlog of 16 partitions, batchSize 50 and 500"
  node bench/streams-js.mjs --url "$url" --records "${STREAMS_JS_RECORDS:-32000}" | sed 's/^/  /'
fi

echo
if [ -n "$pid" ]; then
  echo "broker RSS: $(( $(rss_kb) / 1024 )) MiB now, $(( $(hwm_kb) / 1024 )) MiB peak"
  curl -s "$url/metrics/prometheus" | awk '/^queen_push_commit_batch_records_(sum|count)/ {v[$1]=$2} END {if (v["queen_push_commit_batch_records_count"]>0) printf "group commit: %d commits, %.1f records per commit on average\n", v["queen_push_commit_batch_records_count"], v["queen_push_commit_batch_records_sum"]/v["queen_push_commit_batch_records_count"]}'
else
  echo "broker RSS: n/a (external broker)"
fi

# The S3 sink (its own broker with QUEEN_S3_EMBEDDED=true and a local s3rver): only for the
# broker this script starts, since another broker's sink cannot be configured from here.
if want sink && [ -n "$pid" ]; then
  echo
  echo "S3 sink (bench/sink.mjs: its own broker and data directory, s3rver on loopback, durable commits)"
  node bench/sink.mjs --bin build/release/queen --records "${SINK_RECORDS:-1000000}" --seconds "$duration" | sed 's/^/  /'
fi

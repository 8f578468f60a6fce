#!/usr/bin/env bash
# Writes the database a release's binary leaves behind on its first boot, as a pg_dump script:
# the fixture tests/integration/upgrade.test.mjs restores to check that upgrading it with the
# current binary gives the same schema as a fresh database.
#   scripts/dump-release-schema.sh BINARY OUT.sql
# BINARY is the queen binary of the release (build it from a `git worktree` of that commit:
# `make build/release/queen`). A throwaway PostgreSQL cluster is started on a free port and
# stopped again; nothing else is touched.
set -euo pipefail
bin=$(readlink -f "$1")
out=$2
pgbin=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)
dir=$(mktemp -d /tmp/queen-dump-XXXXXX)
chmod 755 "$dir"
as_pg() { if [ "$(id -u)" = 0 ]; then (cd / && runuser -u postgres -- "$@"); else "$@"; fi; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  as_pg "$pgbin/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap cleanup EXIT
mkdir -p "$dir/sock" "$dir/node"
[ "$(id -u)" = 0 ] && chown -R postgres:postgres "$dir/sock" "$dir"
as_pg "$pgbin/initdb" -D "$dir/data" -U postgres -A trust -E UTF8 --locale=C --no-sync >/dev/null
pgport=$(free_port)
as_pg "$pgbin/pg_ctl" -D "$dir/data" -l "$dir/log" -w -o "-p $pgport -k $dir/sock -c listen_addresses=127.0.0.1 -F" \
  start >/dev/null
port=$(free_port)
PORT=$port HOST=127.0.0.1 QUEEN_DATA_DIR=$dir/node QUEEN_PG_URL=postgresql://postgres@127.0.0.1:$pgport/postgres \
  "$bin" >"$dir/node.log" 2>&1 &
pid=$!
for _ in $(seq 1 300); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { cat "$dir/node.log" >&2; exit 1; }
  sleep 0.1
done
kill "$pid"
wait "$pid" || true
pid=
{
  echo "-- The database $(basename "$bin") left on its first boot (scripts/dump-release-schema.sh)."
  as_pg pg_dump -h "$dir/sock" -p "$pgport" -U postgres --no-owner --no-privileges -d postgres \
    | grep -v '^-- Dumped \(from\|by\)\|^\\\(un\)\?restrict '
} >"$out"

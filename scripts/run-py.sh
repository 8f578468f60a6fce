#!/usr/bin/env bash
# Runs the Python test harness (tests/py: the real 2.x client, queen-mq) against the sanitizer
# build, under a timeout so it cannot hang, and stops whatever a killed run left behind.
#   scripts/run-py.sh                       every tests/py/test_*.py
#   PY_FILES="tests/py/test_reads.py" scripts/run-py.sh
#   PY_TIMEOUT=900 (seconds for the whole run), PY_ARGS="-k fetch -x" (passed to pytest)
set -uo pipefail
cd "$(dirname "$0")/.."
venv=build/venv
if [ ! -x "$venv/bin/python" ]; then
  echo "run-py: $venv is missing: run scripts/install-deps.sh test (or make test-deps)" >&2
  exit 2
fi
export QUEEN_BIN=${QUEEN_BIN:-$PWD/build/asan/queen}
state=$(mktemp -d /tmp/queen-pystate-XXXXXX)
export QUEEN_PY_STATE=$state

cleanup() {
  # a run killed by the timeout skips its teardown: stop what it noted, oldest first
  if [ -f "$state/pids" ]; then
    while read -r pid; do
      # only a pid that is still a queen of this run (pids are reused)
      [ "$(readlink "/proc/$pid/exe" 2>/dev/null)" = "$(readlink -f "$QUEEN_BIN")" ] && kill -KILL "$pid" 2>/dev/null
    done < "$state/pids"
  fi
  if [ -f "$state/pgdata" ]; then
    while read -r d; do
      [ -f "$d/postmaster.pid" ] || continue
      pgctl=$(ls -d /usr/lib/postgresql/*/bin/pg_ctl 2>/dev/null | sort -V | tail -1)
      if [ "$(id -u)" -eq 0 ]; then
        (cd / && runuser -u postgres -- "$pgctl" -D "$d" -m immediate -w stop >/dev/null 2>&1) || true
      else
        "$pgctl" -D "$d" -m immediate -w stop >/dev/null 2>&1 || true
      fi
      rm -rf "$(dirname "$d")"
    done < "$state/pgdata"
  fi
  if [ -f "$state/dirs" ]; then
    while read -r d; do case "$d" in /tmp/queen-pydata-*) rm -rf "$d" ;; esac; done < "$state/dirs"
  fi
  rm -rf "$state"
}
trap cleanup EXIT

files=${PY_FILES:-tests/py}
# timeout signals its whole process group: pytest and the brokers it started get SIGTERM
# (a broker drains and exits), then SIGKILL 20 s later
timeout -k 20 "${PY_TIMEOUT:-1200}" "$venv/bin/python" -m pytest -c tests/py/pytest.ini --rootdir tests/py \
  ${PY_ARGS:-} $files
rc=$?
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
  echo "run-py: the run passed its ${PY_TIMEOUT:-1200} s timeout" >&2
fi
exit $rc

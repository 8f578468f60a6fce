#!/usr/bin/env bash
# Installs what queen needs on Debian 12, only what is missing. Idempotent.
#   scripts/install-deps.sh        build and run (make run)
#   scripts/install-deps.sh test   also the test tools (make test, make bench)
# Debian packages come from apt; the test tools from npm (package-lock.json, `npm ci`) and PyPI
# (tests/py/requirements.txt, into the virtual environment build/venv).
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-run}
run_pkgs=(build-essential pkg-config libuv1-dev libh2o-dev libpq-dev libssl-dev libcurl4-openssl-dev
          libzstd-dev zlib1g-dev libsnappy-dev libjwt-dev postgresql)
test_pkgs=(libcmocka-dev clang libclang-rt-14-dev nghttp2-client wrk zstd python3-boto3 python3 python3-venv)

want=("${run_pkgs[@]}")
if [ "$mode" = test ]; then want+=("${test_pkgs[@]}"); fi
command -v node >/dev/null 2>&1 || { [ "$mode" = test ] && want+=(nodejs npm); }

missing=()
for p in "${want[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian packages: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "need root or sudo to install: ${missing[*]}" >&2; exit 1; }
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq || true
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

if [ "$mode" = test ]; then
  # npm ci only when the lockfile changed since the last install
  stamp=node_modules/.queen-lock-stamp
  if [ ! -f "$stamp" ] || ! cmp -s package-lock.json "$stamp"; then
    npm ci --no-audit --no-fund --loglevel=error
    mkdir -p node_modules && cp package-lock.json "$stamp"
  fi
fi

if [ "$mode" = test ]; then
  # the Python harness (tests/py): a venv made only when missing or when the pins changed
  venv=build/venv
  req=tests/py/requirements.txt
  vstamp=$venv/.queen-req-stamp
  if [ ! -x "$venv/bin/python" ] || [ ! -f "$vstamp" ] || ! cmp -s "$req" "$vstamp"; then
    python3 -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)' || {
      echo "tests/py needs Python >= 3.9 (queen-mq 2.6.0); python3 is $(python3 --version 2>&1)" >&2; exit 1; }
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install --disable-pip-version-check --no-input -q -r "$req"
    cp "$req" "$vstamp"
  fi
fi

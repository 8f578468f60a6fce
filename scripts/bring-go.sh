#!/usr/bin/env bash
# bring-go.sh — when the go on PATH is missing or older than QUEEN_GO_MIN (scripts/versions.sh;
# Debian 12's golang-go is 1.19), brings the pinned Go QUEEN_GO_PIN into QUEEN_GO_DIR
# (.tools/go): the golang.org/toolchain module zip from the Go module proxy, its sha256 checked
# against the pin, unpacked with its file modes. The Makefile and clients/go's runner put
# .tools/go/bin first on PATH. Idempotent; called by scripts/install-deps.sh test.
#   GOPROXY_URL overrides https://proxy.golang.org (a mirror serving the same zips).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/versions.sh

die() { echo "bring-go: $*" >&2; exit 1; }

pinned=$QUEEN_GO_DIR/bin/go
if [ -x "$pinned" ] && [ "$(go_version "$pinned")" = "$QUEEN_GO_PIN" ]; then
  echo "go: $QUEEN_GO_PIN at $pinned (brought earlier)"
  exit 0
fi
sys=$(command -v go 2>/dev/null || true)
if [ -n "$sys" ] && go_ok "$sys"; then
  echo "go: $(go_version "$sys") at $sys (the Go SDK needs >= $QUEEN_GO_MIN)"
  exit 0
fi
found=none
if [ -n "$sys" ]; then v=$(go_version "$sys"); found="${v:-a go that does not run} at $sys"; fi

case "$(uname -m)" in
  x86_64 | amd64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) die "the Go SDK needs go >= $QUEEN_GO_MIN, found $found, and no toolchain is pinned for $(uname -m): install Go $QUEEN_GO_MIN or newer on PATH" ;;
esac
sumvar=QUEEN_GO_SHA256_$arch
want=${!sumvar}
name=v0.0.1-go$QUEEN_GO_PIN.linux-$arch
url=${GOPROXY_URL:-https://proxy.golang.org}/golang.org/toolchain/@v/$name.zip
echo "go on PATH: $found; the Go SDK needs >= $QUEEN_GO_MIN: bringing Go $QUEEN_GO_PIN from $url into $QUEEN_GO_DIR"

tmp=$QUEEN_GO_DIR.tmp
rm -rf "$tmp"
mkdir -p "$tmp"
if command -v curl >/dev/null 2>&1; then
  curl -fsSL --retry 3 -o "$tmp/go.zip" "$url" || die "downloading $url failed (above)"
else
  python3 -c 'import sys, urllib.request; urllib.request.urlretrieve(sys.argv[1], sys.argv[2])' "$url" "$tmp/go.zip" ||
    die "downloading $url failed (above)"
fi
got=$(sha256sum "$tmp/go.zip" | awk '{print $1}')
if [ "$got" != "$want" ]; then
  rm -rf "$tmp"
  die "$url has sha256 $got, the pin (scripts/versions.sh $sumvar) says $want: not installed"
fi
# the module zip holds golang.org/toolchain@<version>/...: strip that prefix, keep the modes
python3 - "$tmp/go.zip" "$tmp/go" <<'PY' || die "unpacking the Go toolchain zip failed (above)"
import os, sys, zipfile
src, dst = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(src) as z:
    for info in z.infolist():
        parts = info.filename.split("/", 2)
        if len(parts) < 3 or not parts[2] or ".." in parts[2].split("/"):
            continue
        out = os.path.join(dst, parts[2])
        if info.is_dir():
            os.makedirs(out, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with z.open(info) as r, open(out, "wb") as w:
            while True:
                b = r.read(1 << 20)
                if not b:
                    break
                w.write(b)
        mode = (info.external_attr >> 16) & 0o777
        os.chmod(out, mode if mode else 0o644)
PY
rm -f "$tmp/go.zip"
[ "$(go_version "$tmp/go/bin/go")" = "$QUEEN_GO_PIN" ] ||
  die "the Go toolchain unpacked into $tmp/go does not run ($("$tmp/go/bin/go" version 2>&1 | head -1))"
rm -rf "$QUEEN_GO_DIR"
mkdir -p "$(dirname "$QUEEN_GO_DIR")"
mv "$tmp/go" "$QUEEN_GO_DIR"
rm -rf "$tmp"
echo "go: $QUEEN_GO_PIN at $QUEEN_GO_DIR/bin/go"

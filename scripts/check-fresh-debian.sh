#!/usr/bin/env bash
# The README's front door on a bare Debian 12 (debootstrap --variant=minbase bookworm, which
# like the debian:12 image has neither make nor git): this checkout's committed files are copied
# in, `apt-get install make` is the one step by hand, then
#   1. `make run` must reach "ready" and exit 0 on SIGTERM with nothing left running;
#   2. `scripts/install-deps.sh test` must install the test tools, a Node.js the tests can use
#      (Debian's is 18; the pinned one comes into .tools/node), a Go for the Go SDK (Debian's is
#      1.19; the pinned one comes into .tools/go) and a cargo the Rust SDK's suite can use (none in
#      a bare root; the pinned Rust comes into .tools/rust);
#   3. with --test, `make test` runs in full (long: nice it, the machine is shared); with
#      --sdk-rust, only `make sdk-rust` (the sanitizer build, then the crate's build and tests
#      with the cargo step 2 found or brought: 10 minutes or more on 2 cores).
# Needs root, debootstrap and the Debian mirror.
#   scripts/check-fresh-debian.sh ROOT [--test|--sdk-rust]   ROOT: bootstrapped when it has no /bin
set -euo pipefail
cd "$(dirname "$0")/.."
root=${1:?usage: scripts/check-fresh-debian.sh ROOT [--test|--sdk-rust]}
full=${2:-}
mkdir -p "$root"
root=$(cd "$root" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "check-fresh-debian: needs root (chroot, mounts)" >&2; exit 1; }

if [ ! -e "$root/bin" ]; then
  echo "== debootstrap bookworm into $root"
  debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian > "$root.debootstrap.log" 2>&1 ||
    { tail -20 "$root.debootstrap.log"; exit 1; }
fi

mounted=()
pid=""
in_chroot_pids() {
  local p
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$(readlink "/proc/$p/root" 2>/dev/null)" = "$root" ] && echo "$p"
  done
  return 0
}
cleanup() {
  for p in $(in_chroot_pids); do kill -KILL "$p" 2>/dev/null || true; done
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
mnt() { mkdir -p "$root$2"; mount "${@:3}" "$1" "$root$2"; mounted+=("$root$2"); }
mnt proc /proc -t proc
mnt /dev /dev --bind
mnt devpts /dev/pts -t devpts
mnt tmpfs /dev/shm -t tmpfs
mnt sysfs /sys -t sysfs
cp /etc/resolv.conf "$root/etc/resolv.conf"
# this machine's own certificate authorities (an egress proxy that re-signs TLS, where there is
# one): the ca-certificates package adds them to the chroot's store when it installs
mkdir -p "$root/usr/local/share/ca-certificates"
cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
if [ -x "$root/usr/sbin/update-ca-certificates" ]; then chroot "$root" update-ca-certificates >/dev/null 2>&1 || true; fi

src=/root/queen
rm -rf "${root:?}$src"
mkdir -p "$root$src"
git ls-files -z | xargs -0 tar -cf - -- | tar -xf - -C "$root$src"
in_root() { chroot "$root" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root TERM=dumb "$@"; }

echo "== apt-get install make (a bare Debian 12 lacks it)"
t0=$(date +%s)
in_root sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends make' > "$root.make-install.log" 2>&1 ||
  { tail -20 "$root.make-install.log"; exit 1; }

echo "== make run (until ready)"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
log=$root.make-run.log
in_root sh -c "cd $src && PORT=$port HOST=127.0.0.1 exec make run" > "$log" 2>&1 &
pid=$!
ready=""
for _ in $(seq 1 3000); do # 10 minutes: the first make run installs and builds
  if curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1; then ready=1; break; fi
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.2
done
[ -n "$ready" ] || { tail -30 "$log"; echo "check-fresh-debian: make run did not get ready" >&2; exit 1; }
echo "ready $(($(date +%s) - t0)) s after the first command"
grep -q 'ready' "$log" || { tail -5 "$log"; echo "check-fresh-debian: no \"ready\" line in make run's output" >&2; exit 1; }
[ ! -d "$root/etc/postgresql/15/main" ] || { echo "check-fresh-debian: a system cluster was created (/etc/postgresql/15/main)" >&2; exit 1; }
echo "no system PostgreSQL cluster was created"
curl -sf -X POST "http://127.0.0.1:$port/api/v1/push" -H 'content-type: application/json' -d '{"items":[
  {"queue":"orders","partition":"cust-1","payload":{"order":1,"status":"new","total":42.00}}]}' >/dev/null
curl -sf -X POST "http://127.0.0.1:$port/api/v1/fetch" -d '{"entries":[{"queue":"orders","partition":"cust-1","offset":0}]}' |
  grep -q '"payload":{"order":1,"status":"new","total":42.00}' ||
  { echo "check-fresh-debian: the README's push did not come back byte for byte" >&2; exit 1; }
qpid=""
for p in $(in_chroot_pids); do
  if [ "$(readlink "/proc/$p/exe")" = "$root$src/build/release/queen" ]; then qpid=$p; fi
done
[ -n "$qpid" ] || { echo "check-fresh-debian: no queen process found" >&2; exit 1; }
kill -TERM "$qpid"
code=0
wait "$pid" || code=$?
pid=""
[ "$code" -eq 0 ] || { tail -20 "$log"; echo "check-fresh-debian: make run exited $code after SIGTERM to queen" >&2; exit 1; }
sleep 0.5
left=$(in_chroot_pids)
[ -z "$left" ] || { echo "check-fresh-debian: still running after SIGTERM: $left" >&2; exit 1; }
echo "SIGTERM: exit 0, nothing left running"

echo "== scripts/install-deps.sh test"
t1=$(date +%s)
in_root sh -c "cd $src && scripts/install-deps.sh test" > "$root.install-test.log" 2>&1 ||
  { tail -20 "$root.install-test.log"; exit 1; }
grep -E '^(node|node on PATH|go|go on PATH|npm warn EBADENGINE|cargo|check-cargo)' "$root.install-test.log" || true
in_root sh -c "cd $src && PATH=$src/.tools/node/bin:\$PATH && node --version && npm --version" | tr '\n' ' '
in_root sh -c "cd $src && scripts/check-cargo.sh && PATH=$src/.tools/rust/bin:\$PATH && cargo --version && rustc --version" | tr '\n' ' ' ||
  { echo "check-fresh-debian: no cargo the Rust SDK can use after install-deps.sh test" >&2; exit 1; }
in_root sh -c "cd $src && PATH=$src/.tools/go/bin:\$PATH && go version" | tr '\n' ' '
echo "(install-deps.sh test took $(($(date +%s) - t1)) s)"

case "$full" in --test | --sdk-rust)
  target=${full#--}
  echo "== make $target"
  t2=$(date +%s)
  code=0
  in_root sh -c "cd $src && make $target" > "$root.make-$target.log" 2>&1 || code=$?
  tail -3 "$root.make-$target.log"
  echo "make $target: exit $code in $(($(date +%s) - t2)) s"
  [ "$code" -eq 0 ] || exit 1
esac
echo "check-fresh-debian: ok"

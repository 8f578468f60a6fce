#!/usr/bin/env bash
# Checks the Dockerfile on a machine with no container runtime: its steps run in a Debian 12
# chroot (debootstrap --variant=minbase bookworm, close to the debian:12 image), in order —
# ENV, WORKDIR, COPY from this checkout, RUN as the USER of the moment — and then its ENTRYPOINT
# runs as the image's user with the image's environment, which must boot (the embedded
# PostgreSQL in the VOLUME), answer the README's push byte for byte, and exit 0 on SIGTERM with
# nothing left running. Needs root, debootstrap and the Debian mirror.
#   scripts/check-dockerfile.sh ROOT     ROOT: a directory; bootstrapped when it has no /bin
# The chroot shares this machine's network: the broker listens on a free loopback port.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
root=${1:?usage: scripts/check-dockerfile.sh ROOT}
mkdir -p "$root"
root=$(cd "$root" && pwd)
[ "$(id -u)" -eq 0 ] || { echo "check-dockerfile: needs root (chroot, mounts)" >&2; exit 1; }

if [ ! -e "$root/bin" ]; then
  command -v debootstrap >/dev/null || { echo "check-dockerfile: needs debootstrap (apt-get install debootstrap)" >&2; exit 1; }
  echo "== debootstrap bookworm into $root"
  debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian > "$root.debootstrap.log" 2>&1 ||
    { tail -20 "$root.debootstrap.log"; exit 1; }
fi

mounted=()
pid=""
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  # a postgres left by a failed run would keep the mounts busy
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    if [ "$(readlink "/proc/$p/root" 2>/dev/null)" = "$root" ]; then kill -KILL "$p" 2>/dev/null || true; fi
  done
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

# ---------------------------------------------------------------- the Dockerfile's steps
env_args=()     # KEY=VALUE for env(1)
workdir=/
user=root
entrypoint=""
volume=""
in_root() {  # in_root USER DIR CMD: runs CMD with /bin/sh in the chroot as USER in DIR with the ENV so far
  local u=$1 dir=$2 cmd=$3 ids=() home=/root
  if [ "$u" != root ]; then
    local name=${u%%:*} uid gid
    uid=$(chroot "$root" id -u "$name")
    gid=$(chroot "$root" id -g "$name")
    home=$(chroot "$root" getent passwd "$name" | cut -d: -f6)
    ids=(setpriv --reuid="$uid" --regid="$gid" --clear-groups)
  fi
  chroot "$root" "${ids[@]}" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME="$home" \
    "${env_args[@]}" /bin/sh -c "cd '$dir' && $cmd"
}

# instructions with their continuation lines joined, comments dropped
mapfile -t steps < <(sed -e '/^[[:space:]]*#/d' Dockerfile | sed -e ':a' -e '/\\$/{N; s/\\\n//; ba' -e '}' | grep -v '^[[:space:]]*$')
for step in "${steps[@]}"; do
  op=${step%% *}
  arg=${step#* }
  arg=$(sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]\+/ /g' <<<"$arg")
  case "$op" in
    FROM) echo "== FROM $arg (a debootstrapped bookworm stands in for it)" ;;
    ENV)
      # KEY=VALUE pairs (values without spaces) or the old `ENV KEY VALUE`
      if [[ "$arg" == *=* ]]; then
        read -r -a kvs <<<"$arg"
        env_args+=("${kvs[@]}")
      else
        env_args+=("${arg%% *}=${arg#* }")
      fi ;;
    WORKDIR) workdir=$arg; mkdir -p "$root$workdir" ;;
    COPY)
      read -r -a parts <<<"$arg"
      dest=${parts[-1]}
      [[ "$dest" = /* ]] || dest="$workdir/$dest"
      for src in "${parts[@]:0:${#parts[@]}-1}"; do
        echo "== COPY $src $dest"
        mkdir -p "$root$dest"
        if [ -d "$src" ]; then
          # the committed files only (what a build context from a clean checkout holds)
          git ls-files -z -- "$src" | (cd "$repo" && xargs -0 tar -cf - --) | tar -xf - -C "$root$dest" --strip-components="$(tr -cd / <<<"${src%/}/" | wc -c)"
        else
          cp "$src" "$root$dest/"
        fi
      done ;;
    RUN) echo "== RUN (as $user in $workdir) $arg"; in_root "$user" "$workdir" "$arg" ;;
    USER) user=$arg ;;
    VOLUME) volume=$(tr -d '[]"' <<<"$arg") ;;
    ENTRYPOINT) entrypoint=$(tr -d '[]"' <<<"$arg" | tr ',' ' ') ;;
    EXPOSE | STOPSIGNAL | LABEL | HEALTHCHECK | CMD | ARG) ;;
    *) echo "check-dockerfile: no stand-in for the instruction $op" >&2; exit 1 ;;
  esac
done
[ -n "$entrypoint" ] || { echo "check-dockerfile: the Dockerfile has no ENTRYPOINT" >&2; exit 1; }
if [ "$user" = root ] || [ "${user%%:*}" = 0 ]; then echo "check-dockerfile: the image runs as root" >&2; exit 1; fi

# ---------------------------------------------------------------- the image's entrypoint
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
env_args+=("PORT=$port" "HOST=127.0.0.1")
log=$root.entrypoint.log
echo "== ENTRYPOINT $entrypoint as $user (volume $volume, port $port)"
t0=$(date +%s)
in_root "$user" "$workdir" "exec $entrypoint" > "$log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  kill -0 "$pid" 2>/dev/null || { cat "$log"; echo "check-dockerfile: the broker exited during boot" >&2; exit 1; }
  sleep 0.2
done
curl -sf "http://127.0.0.1:$port/health" >/dev/null || { cat "$log"; echo "check-dockerfile: no /health in 120 s" >&2; exit 1; }
echo "ready in $(($(date +%s) - t0)) s"
[ -f "$root$volume/pg/PG_VERSION" ] || { echo "check-dockerfile: the embedded PostgreSQL is not in the volume $volume" >&2; exit 1; }
owner=$(stat -c %u "$root$volume/pg")
want=$(chroot "$root" id -u "${user%%:*}")
[ "$owner" = "$want" ] || { echo "check-dockerfile: $volume/pg belongs to uid $owner, not ${user%%:*} ($want)" >&2; exit 1; }

curl -sf -X POST "http://127.0.0.1:$port/api/v1/push" -H 'content-type: application/json' -d '{"items":[
  {"queue":"orders","partition":"cust-1","payload":{"order":1,"status":"new","total":42.00}}]}' >/dev/null
got=$(curl -sf -X POST "http://127.0.0.1:$port/api/v1/fetch" -d '{"entries":[{"queue":"orders","partition":"cust-1","offset":0}]}')
grep -q '"payload":{"order":1,"status":"new","total":42.00}' <<<"$got" ||
  { echo "$got"; echo "check-dockerfile: the pushed payload did not come back byte for byte" >&2; exit 1; }
echo "push and fetch: the payload came back byte for byte"

# $pid is the subshell around chroot: the signal goes to the broker itself, as docker stop sends it
qpid=""
for d in /proc/[0-9]*; do
  if [ "$(readlink "$d/root" 2>/dev/null)" = "$root" ] && [ "$(readlink "$d/exe" 2>/dev/null)" = "$root${entrypoint%% *}" ]; then qpid=${d#/proc/}; fi
done
[ -n "$qpid" ] || { echo "check-dockerfile: no process of $entrypoint found" >&2; exit 1; }
kill -TERM "$qpid"
code=0
wait "$pid" || code=$?
pid=""
[ "$code" -eq 0 ] || { tail -20 "$log"; echo "check-dockerfile: the broker exited $code on SIGTERM" >&2; exit 1; }
left=""
for d in /proc/[0-9]*; do
  p=${d#/proc/}
  if [ "$(readlink "/proc/$p/root" 2>/dev/null)" = "$root" ]; then left+=" $p($(tr '\0' ' ' < "/proc/$p/cmdline" | cut -c1-60))"; fi
done
[ -z "$left" ] || { echo "check-dockerfile: still running in the chroot after SIGTERM:$left" >&2; exit 1; }
echo "SIGTERM: exit 0, nothing left running"
echo "check-dockerfile: ok"

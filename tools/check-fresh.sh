#!/usr/bin/env bash
# Proves the README's two quick-start commands on a new Debian 12 machine: a clean root made with debootstrap
# (minbase), the repository cloned into it, then
#   1. the test command, `tools/quickstart.sh test` (by default its ci stage, every test; --full adds the asan and
#      fuzz stages; the asan and fuzz presets are configured in any case, so a package they need is not missed);
#   2. the first command, `tools/quickstart.sh`, in its no-display mode (builds build/dev, runs the CLI on LeNet-5).
# It ends with a short verdict. Run it before any change to set-up, dependencies or the package list: a package
# that happens to be installed on a developer's machine (or on CI's) hides a missing install step.
#
#   sudo tools/check-fresh.sh [--cuda] [--full] [--keep]
#     --cuda   bind-mount this machine's CUDA toolkit (/usr/local/cuda, cuDNN included if it lives there) into the
#              root, as on a machine with the toolkit installed; without it the root has no CUDA at all
#     --full   the whole test command (ci, asan and fuzz stages); CI's run of .ci/run is the same
#     --keep   keep the work root afterwards (for a look inside)
#
# Environment: FRESH_DIR (default /var/tmp/convscope-fresh) holds the pristine root (made once, reused: each run
# starts from a copy of it, so nothing installed by one run leaks into the next) and the work root. MIRROR
# overrides the Debian mirror (default: the first one in this machine's apt sources). REF is the commit to clone
# (default HEAD: what is committed, not the working tree). Needs root, debootstrap and the network.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

cuda=0 full=0 keep=0
for a in "$@"; do
    case "$a" in
    --cuda) cuda=1 ;;
    --full) full=1 ;;
    --keep) keep=1 ;;
    *) echo "usage: tools/check-fresh.sh [--cuda] [--full] [--keep]" >&2; exit 2 ;;
    esac
done
[ "$(id -u)" -eq 0 ] || { echo "check-fresh: needs root (debootstrap, chroot, mounts)" >&2; exit 2; }
command -v debootstrap >/dev/null || { echo "check-fresh: apt-get install debootstrap" >&2; exit 2; }

dir=${FRESH_DIR:-/var/tmp/convscope-fresh}
pristine=$dir/pristine
root=$dir/work
ref=${REF:-HEAD}
log=$dir/check-fresh.log
mkdir -p "$dir"

# The mirror this machine's apt already uses (deb822 sources or the one-line format).
if [ -z "${MIRROR:-}" ]; then
    MIRROR=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\/debian\)$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null |
        head -1)
    [ -n "$MIRROR" ] || MIRROR=$(awk '$1 == "deb" && $2 ~ /\/debian\/?$/ {print $2; exit}' \
        /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true)
    [ -n "$MIRROR" ] || { echo "check-fresh: no Debian mirror in this machine's apt sources; set MIRROR" >&2; exit 2; }
fi
security=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*debian-security\)$/\1/p' /etc/apt/sources.list.d/*.sources \
    2>/dev/null | head -1)
security=${security:-${MIRROR%/debian}/debian-security}

t0=$SECONDS
say() { echo "check-fresh: $*"; }

if [ ! -x "$pristine/usr/bin/apt-get" ]; then
    say "making the pristine Debian 12 root (debootstrap --variant=minbase bookworm) in $pristine"
    rm -rf "$pristine"
    debootstrap --variant=minbase bookworm "$pristine" "$MIRROR" >"$dir/debootstrap.log" 2>&1 ||
        { tail -20 "$dir/debootstrap.log"; say "debootstrap failed"; exit 1; }
    printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s bookworm-security main\n' \
        "$MIRROR" "$MIRROR" "$security" >"$pristine/etc/apt/sources.list"
    # The same apt settings as this machine (for example a snapshot mirror whose Release files have expired).
    cp /etc/apt/apt.conf.d/99* "$pristine/etc/apt/apt.conf.d/" 2>/dev/null || true
    rm -rf "$pristine/var/cache/apt/archives/"*.deb "$pristine/var/lib/apt/lists/"*
fi

mounts=()
cleanup() {
    local m
    for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -l "${mounts[i]}" 2>/dev/null || true; done
    [ "$keep" = 1 ] || rm -rf "$root"
}
trap cleanup EXIT
bind() { # bind SRC DEST [ro]
    mkdir -p "$2"
    mount --bind "$1" "$2"
    mounts+=("$2")
    [ "${3:-}" != ro ] || mount -o remount,bind,ro "$2"
}

say "fresh work root from the pristine copy"
rm -rf "$root"
cp -a "$pristine" "$root"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc" && mounts+=("$root/proc")
bind /dev "$root/dev"
mount -t devpts devpts "$root/dev/pts" 2>/dev/null && mounts+=("$root/dev/pts") || true
bind /sys "$root/sys"
if [ "$cuda" = 1 ]; then
    cuda_dir=$(readlink -f /usr/local/cuda)
    [ -x "$cuda_dir/bin/nvcc" ] || { say "--cuda: no toolkit at /usr/local/cuda"; exit 2; }
    bind "$cuda_dir" "$root/usr/local/cuda" ro
fi

# A clean clone of what is committed; git is not in minbase, so clone here and copy in.
say "cloning $ref of $repo"
rm -rf "$dir/src"
git clone -q --no-hardlinks "$repo" "$dir/src"
git -C "$dir/src" checkout -q "$(git -C "$repo" rev-parse "$ref")"
mkdir -p "$root/src"
cp -a "$dir/src/." "$root/src/convscope"
[ -d "$repo/../shared" ] && cp -a "$repo/../shared" "$root/src/shared" || true

in_root() { chroot "$root" env -i HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    LANG=C.UTF-8 TERM=dumb CI=true "$@"; }

test_env=()
[ "$full" = 1 ] || test_env=(CONVSCOPE_SKIP_ASAN=1 CONVSCOPE_SKIP_FUZZ=1)
say "the test command: tools/quickstart.sh test ${test_env[*]:+(${test_env[*]})}"
t1=$SECONDS
set +e
in_root "${test_env[@]}" bash -c 'cd /src/convscope && tools/quickstart.sh test' >"$log" 2>&1
test_rc=$?
set -e
test_s=$((SECONDS - t1))
test_summary=$(grep -E "tests passed|tests failed" "$log" | tail -3 | tr '\n' ' ' || true)
skipped=$(grep -cE "\*\*\*Skipped|Not Run" "$log" || true)

configure_rc=0
if [ "$test_rc" = 0 ] && [ "$full" = 0 ]; then
    # Configure alone proves the packages of the stages that were skipped.
    say "configuring the asan and fuzz presets (packages of the stages not run)"
    in_root bash -c 'cd /src/convscope && cmake --preset asan >/dev/null && cmake --preset fuzz >/dev/null' \
        >>"$log" 2>&1 || configure_rc=$?
fi

say "the first command, no display: tools/quickstart.sh"
t2=$SECONDS
set +e
in_root bash -c 'cd /src/convscope && unset DISPLAY WAYLAND_DISPLAY && tools/quickstart.sh' >"$dir/open.log" 2>&1
open_rc=$?
set -e
open_s=$((SECONDS - t2))
# Success means the no-display branch ran the CLI to its end, not just that the build passed.
if [ "$open_rc" = 0 ] && ! grep -q "no display" "$dir/open.log"; then open_rc=1; fi

pass() { [ "$1" = 0 ] && echo PASS || echo "FAIL (exit $1)"; }
echo
echo "== check-fresh verdict: Debian $(cat "$root/etc/debian_version") minbase root, CUDA toolkit: $([ "$cuda" = 1 ] &&
    echo "bind-mounted ($(in_root /usr/local/cuda/bin/nvcc --version | tail -1))" || echo none)"
echo "   commit       $(git -C "$dir/src" log -1 --format='%h %s' | cut -c1-90)"
echo "   test command $(pass "$test_rc") in ${test_s} s: ${test_summary:-no ctest summary} (${skipped} skipped)"
[ "$full" = 1 ] || echo "   asan + fuzz presets configure: $(pass "$configure_rc")"
echo "   first command (no display) $(pass "$open_rc") in ${open_s} s; its last line: $(tail -1 "$dir/open.log" |
    cut -c1-80)"
echo "   logs: $log, $dir/open.log; total $((SECONDS - t0)) s"
if [ "$test_rc" = 0 ] && [ "$configure_rc" = 0 ] && [ "$open_rc" = 0 ]; then
    echo "== PASS: both README commands work on a new Debian 12 machine"
    exit 0
fi
echo "== FAIL: see the logs (last lines of the failing one below)"
[ "$test_rc" = 0 ] || tail -25 "$log"
[ "$open_rc" = 0 ] || tail -25 "$dir/open.log"
exit 1

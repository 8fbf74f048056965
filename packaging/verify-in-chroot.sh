#!/usr/bin/env bash
# Install the package with apt on a clean Debian 12 root and run both programs from the menu entry's command.
#   sudo packaging/verify-in-chroot.sh build/release/package/convscope_0.1.0-1_amd64.deb [ROOT]
# Makes ROOT (default /tmp/convscope-bookworm) with debootstrap --variant=minbase unless it exists, installs the
# .deb there with apt-get (which fetches its Depends from Debian's mirror), then, as an ordinary user:
# convscope-cli info (the GPU rows must say why they are unavailable: the root has no driver, no CUDA, no cuDNN),
# convscope-cli run on an example, and the window in its screenshot mode (QT_QPA_PLATFORM=offscreen) started
# from the desktop entry's Exec line. Needs root, debootstrap and the network; a developer tool, not a test.
set -euo pipefail
deb="$(realpath "$1")"
root="${2:-/tmp/convscope-bookworm}"
mirror="${MIRROR:-http://deb.debian.org/debian}"
app_id=io.github.convscope.ConvScope

if [ ! -x "$root/usr/bin/apt-get" ]; then
    debootstrap --variant=minbase bookworm "$root" "$mirror"
    cat > "$root/etc/apt/sources.list" <<SOURCES
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
SOURCES
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
mountpoint -q "$root/proc" || mount -t proc proc "$root/proc"
trap 'umount "$root/proc" 2>/dev/null || true' EXIT

cp "$deb" "$root/tmp/"
chroot "$root" apt-get update -q
chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y --reinstall "/tmp/$(basename "$deb")"
chroot "$root" sh -c 'id teacher >/dev/null 2>&1 || useradd -m -s /bin/bash teacher'

cat > "$root/tmp/convscope-verify.sh" <<'CHECK'
#!/bin/bash
set -eu
cd "$HOME"
net=/usr/share/convscope/networks/lenet5.json
exec_line=$(sed -n 's/^Exec=//p' /usr/share/applications/APP_ID.desktop)
echo "== convscope-cli info"
convscope-cli info
echo "== convscope-cli run"
convscope-cli run "$net" --backends cpu.direct,cpu.im2col_gemm --repeat 3
echo "== from the menu entry: ${exec_line//%f/$net} --screenshot $HOME/window.png"
eval "QT_QPA_PLATFORM=offscreen ${exec_line//%f/$net} --screenshot $HOME/window.png"
ls -l "$HOME/window.png"
CHECK
sed -i "s/APP_ID/$app_id/" "$root/tmp/convscope-verify.sh"
chmod +x "$root/tmp/convscope-verify.sh"
chroot --userspec=teacher:teacher "$root" env -i HOME=/home/teacher PATH=/usr/bin:/bin LANG=C.UTF-8 \
    /tmp/convscope-verify.sh
if command -v lintian >/dev/null; then
    echo "== lintian"
    lintian --pedantic "$deb" && echo "lintian: no errors, no warnings"
fi

#!/usr/bin/env bash
# The packaging checks (CTest label "packaging"), one subcommand per test:
#   desktop  DESKTOP_FILE         desktop-file-validate
#   appstream METAINFO            appstreamcli validate --no-net
#   mime MIME_XML EXAMPLES WORK   the MIME type tells network files from other JSON (shared-mime-info, gio)
#   package  BUILD_DIR            cpack -G DEB into BUILD_DIR/package (the fixture the next two need)
#   contents BUILD_DIR            what the package holds, its Depends, no build-machine paths inside
#   run      BUILD_DIR WORK_DIR   dpkg-deb -x into WORK_DIR/root, appstreamcli validate-tree on it, then
#                                 convscope-cli info / run and the window's screenshot mode started from the
#                                 desktop entry's Exec line, all from there
# CONVSCOPE_EXPECT_MODULES lists the GPU modules this build makes (set by CMake).
# A missing tool prints "SKIPPED: ..." (CTest reports the test skipped); tools/quickstart.sh installs them.
set -euo pipefail
what="$1"; shift
app_id=io.github.convscope.ConvScope

need() { command -v "$1" >/dev/null || { echo "SKIPPED: $1 is not installed (apt-get install $2)"; exit 0; }; }
fail() { echo "FAIL: $*" >&2; exit 1; }
the_deb() {
    local debs=("$1"/package/convscope_*.deb)
    [ -f "${debs[0]}" ] || fail "no package in $1/package (the 'packaging: package' test makes it)"
    [ "${#debs[@]}" -eq 1 ] || fail "more than one package in $1/package: ${debs[*]}"
    echo "${debs[0]}"
}

case "$what" in
desktop)
    need desktop-file-validate desktop-file-utils
    out="$(desktop-file-validate "$1" 2>&1)" || { echo "$out"; fail "desktop-file-validate $1"; }
    # Hints are advice; errors and warnings are not allowed.
    if grep -E "error:|warning:" <<<"$out"; then fail "desktop-file-validate $1"; fi
    echo "$out"; echo "OK: $1"
    ;;
appstream)
    need appstreamcli appstream
    appstreamcli validate --no-net --pedantic "$1" || fail "appstreamcli validate --no-net $1"
    ;;
mime)
    # MIME_XML EXAMPLES_DIR WORK_DIR: a network file is application/x-convscope-network, other JSON is not.
    need update-mime-database shared-mime-info
    need gio libglib2.0-bin
    work="$3"
    rm -rf "$work"; mkdir -p "$work/share/mime/packages"
    cp "$1" "$work/share/mime/packages/$app_id.xml"
    update-mime-database "$work/share/mime"
    echo '{"format": "something-else"}' > "$work/other.json"
    type_of() { XDG_DATA_DIRS="$work/share:/usr/share" gio info -a standard::content-type "$1" | sed -n 's/.*content-type: //p'; }
    [ "$(type_of "$2/lenet5.json")" = application/x-convscope-network ] || fail "lenet5.json is $(type_of "$2/lenet5.json")"
    [ "$(type_of "$work/other.json")" = application/json ] || fail "other JSON is $(type_of "$work/other.json")"
    echo "OK: network files are application/x-convscope-network"
    ;;
package)
    need dpkg-shlibdeps dpkg-dev
    need file file
    rm -rf "$1/package"
    cpack -G DEB --config "$1/CPackConfig.cmake" -B "$1/package"
    deb="$(the_deb "$1")"
    ls -l "$deb"
    ;;
contents)
    deb="$(the_deb "$1")"
    dpkg-deb --info "$deb"
    list="$(dpkg-deb --contents "$deb" | awk '{print $6}' | sed 's|^\./|/|')"
    expect=(/usr/bin/convscope /usr/bin/convscope-cli
            "/usr/lib/.*convscope/libconvscope_compute\.so"
            /usr/share/applications/$app_id.desktop /usr/share/metainfo/$app_id.metainfo.xml
            /usr/share/mime/packages/$app_id.xml /usr/share/icons/hicolor/scalable/apps/$app_id.svg
            /usr/share/convscope/networks/lenet5.json /usr/share/doc/convscope/copyright
            /usr/share/doc/convscope/changelog.Debian.gz /usr/share/man/man1/convscope.1.gz
            /usr/share/man/man1/convscope-cli.1.gz /usr/share/lintian/overrides/convscope)
    for m in ${CONVSCOPE_EXPECT_MODULES:-}; do expect+=("/usr/lib/.*convscope/libconvscope_$m\.so"); done
    for s in 16 24 32 48 64 128 256 512; do expect+=("/usr/share/icons/hicolor/${s}x${s}/apps/$app_id.png"); done
    for e in "${expect[@]}"; do
        grep -qx -- "$e" <<<"$list" || fail "the package lacks $e"
    done
    # Nothing outside /usr, and no leftovers of a build or CMake's install manifest.
    ! grep -vE '^/usr(/|$)|^/$' <<<"$list" || fail "files outside /usr"
    ! grep -E 'CMake|\.a$|\.h$|install_manifest' <<<"$list" || fail "build leftovers in the package"
    depends="$(dpkg-deb --field "$deb" Depends)"
    echo "Depends: $depends"
    for d in libc6 libqt6widgets6 qt6-qpa-plugins libgomp1; do
        grep -q "\b$d\b" <<<"$depends" || fail "Depends lacks $d"
    done
    ! grep -qiE 'cudnn|cublas|cudart|libcuda|nvidia' <<<"$depends" || fail "CUDA or cuDNN is a hard dependency: $depends"
    # Relocatable: no path of this build tree is baked into what the package installs.
    tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
    dpkg-deb -x "$deb" "$tmp"
    if grep -rlF "$(cd "$1" && pwd -P)" "$tmp"; then fail "the build folder's path is inside the package (above)"; fi
    # The icons are the sizes their folders say.
    for s in 16 48 256; do
        file "$tmp/usr/share/icons/hicolor/${s}x${s}/apps/$app_id.png" | grep -q "$s x $s" || fail "icon ${s}x${s} is not ${s}x${s}"
    done
    echo "OK: $(wc -l <<<"$list") entries"
    ;;
run)
    deb="$(the_deb "$1")"; work="$2"
    rm -rf "$work"; mkdir -p "$work"
    root="$work/root"
    dpkg-deb -x "$deb" "$root"
    unset LD_LIBRARY_PATH CONVSCOPE_MODULE_PATH CONVSCOPE_DATA_DIR
    # The installed metainfo, desktop entry and icon agree with each other (the launchable, the icon name).
    if command -v appstreamcli >/dev/null; then
        appstreamcli validate-tree --no-net "$root" || fail "appstreamcli validate-tree on the extracted package"
    fi
    cli="$root/usr/bin/convscope-cli"
    "$cli" info | tee "$work/info.txt"
    grep -q "data folder: $root/usr/share/convscope" "$work/info.txt" || fail "the examples are not found in the extracted tree"
    grep -q "module folders: $root/usr/lib" "$work/info.txt" || fail "modules are not looked for in the extracted tree first"
    grep -A1 "^  cpu " "$work/info.txt" | grep -q "    available" || fail "cpu is not available"
    for b in cuda cudnn; do
        row="$(grep -A1 "^  $b " "$work/info.txt" | tail -1)"
        # Either the module works (a GPU machine) or it says why not; never "not found" in its own package.
        grep -qE "^    (available|unavailable: .+)" <<<"$row" || fail "no availability line for $b"
        ! grep -q "not found: libconvscope_$b" <<<"$row" || fail "the $b module is not found in the extracted tree"
        if grep -qw "$b" <<<"${CONVSCOPE_EXPECT_MODULES:-}"; then
            ! grep -q "not built" <<<"$row" || fail "the $b module was not built"
        fi
    done
    "$cli" run "$root/usr/share/convscope/networks/lenet5.json" --backends cpu.direct,cpu.im2col_gemm --repeat 1
    # The window, started the way the menu starts it: the desktop entry's Exec line with %f the example.
    exec_line="$(sed -n 's/^Exec=//p' "$root/usr/share/applications/$app_id.desktop")"
    [ -n "$exec_line" ] || fail "no Exec line"
    read -r -a cmd <<<"${exec_line//%f/$root/usr/share/convscope/networks/lenet5.json}"
    echo "from the desktop entry: ${cmd[*]} --screenshot $work/window.png"
    PATH="$root/usr/bin:$PATH" QT_QPA_PLATFORM=offscreen "${cmd[@]}" --screenshot "$work/window.png"
    file "$work/window.png" | tee /dev/stderr | grep -q "PNG image data, 1600 x 1000" || fail "no 1600x1000 screenshot"
    echo "OK: both programs run from the extracted package"
    ;;
*)
    fail "unknown check $what"
    ;;
esac

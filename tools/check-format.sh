#!/usr/bin/env bash
# The source checks CI runs first (tools/quickstart.sh test): cheap, no build.
#   1. every tracked C++/CUDA source (.cpp .h .cu .cuh) is as .clang-format writes it (clang-format-14);
#   2. no such file is over 600 lines (the split guideline, docs/ARCHITECTURE.md "Checks");
# Prints each file that fails and exits 1 if any does. `tools/check-format.sh --fix` rewrites the files instead of
# listing format differences (the line check is never fixed by it).
set -euo pipefail
cd "$(dirname "$0")/.."
max_lines=600
fix=0
[ "${1:-}" = --fix ] && fix=1

clang_format="${CLANG_FORMAT:-}"
if [ -z "$clang_format" ]; then
    for c in clang-format-14 clang-format; do
        if command -v "$c" >/dev/null; then
            clang_format="$c"
            break
        fi
    done
fi
if [ -z "$clang_format" ]; then
    echo "check-format: clang-format-14 is not installed (apt-get install clang-format-14)" >&2
    exit 2
fi

# The tracked sources; without git (a release tarball, the clean Debian root of tools/check-fresh.sh, which copies a
# clone without installing git) every such file under the source folders, build folders left out.
if command -v git >/dev/null && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files -- '*.cpp' '*.h' '*.cu' '*.cuh')
else
    mapfile -t files < <(find backends cli compute gui kernels packaging tests tools -type f \
        \( -name '*.cpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)
fi
if ((${#files[@]} == 0)); then
    echo "check-format: no sources found" >&2
    exit 2
fi
status=0

unformatted=()
if ((fix)); then
    printf '%s\0' "${files[@]}" | xargs -0 -n 16 -P "$(nproc)" "$clang_format" -i
else
    # One clang-format per file (in parallel): a file is listed when its dry run reports a difference.
    mapfile -t unformatted < <(printf '%s\0' "${files[@]}" |
        xargs -0 -n 1 -P "$(nproc)" sh -c '"$0" --dry-run -Werror "$1" >/dev/null 2>&1 || echo "$1"' "$clang_format" |
        sort)
fi
if ((${#unformatted[@]})); then
    echo "check-format: ${#unformatted[@]} file(s) differ from .clang-format (fix: $clang_format -i FILE, or $0 --fix):"
    printf '  %s\n' "${unformatted[@]}"
    status=1
fi

long=()
for f in "${files[@]}"; do
    n=$(wc -l <"$f")
    ((n > max_lines)) && long+=("$f ($n lines)")
done
if ((${#long[@]})); then
    echo "check-format: ${#long[@]} file(s) over $max_lines lines (split them along a seam, one job per file):"
    printf '  %s\n' "${long[@]}"
    status=1
fi

((status == 0)) && echo "check-format: ${#files[@]} files formatted, none over $max_lines lines"
exit $status

#!/bin/bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Same-run A/B timing of `vibra track` programs (start to exit) on one video: the builds (or flag
# sets) take turns, RUNS times each, so that the machine's minute-to-minute swing (±20% on the
# virtual machines measured, docs/performance.md) falls on all of them alike; the order is reversed
# every other round (A B, B A, …) so that no entry always runs right after the same other one. Prints
# each one's median and quartiles in ms and, for every entry after the first, the median and
# quartiles of its time / the first entry's time in the same round (paired: the machine's drift
# between rounds cancels).
#
# Usage: bench/ab_track.sh [-n RUNS] [-v VIDEO] LABEL=VIBRA[:EXTRA FLAGS] ...
#   VIDEO defaults to bench_tracking's moderate clip, /tmp/vibra_bench_tracking/moderate_raw.avi
#   (made by `build/bench/bench_tracking 60`); every run tracks it with
#   `--radius-small 6 --radius-large 8 --max-step 3` plus the entry's extra flags.
# Example (this build against one built in a worktree at another commit, and without the static
# background):
#   bench/ab_track.sh -n 41 old=../old/build/apps/vibra new=build/apps/vibra \
#       "nobg=build/apps/vibra:--no-static-background"
set -euo pipefail
runs=21
video=/tmp/vibra_bench_tracking/moderate_raw.avi
while getopts "n:v:" opt; do
    case $opt in
        n) runs=$OPTARG ;;
        v) video=$OPTARG ;;
        *) sed -n '3,16p' "$0" >&2; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
if [ $# -lt 1 ]; then sed -n '3,16p' "$0" >&2; exit 2; fi
[ -f "$video" ] || { echo "ab_track.sh: $video: no such file (make it with build/bench/bench_tracking 60)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
specs=("$@")
for ((i = 0; i < runs; ++i)); do
    order=("${specs[@]}")
    if ((i % 2 == 1)); then
        order=()
        for ((k = ${#specs[@]} - 1; k >= 0; --k)); do order+=("${specs[k]}"); done
    fi
    for spec in "${order[@]}"; do
        label=${spec%%=*} rest=${spec#*=}
        bin=${rest%%:*} extra=""
        [[ $rest == *:* ]] && extra=${rest#*:}
        rm -f "$work/out.h5"
        t0=$(date +%s%N)
        # shellcheck disable=SC2086  # the extra flags are split on purpose
        "$bin" track "$video" -o "$work/out.h5" --radius-small 6 --radius-large 8 --max-step 3 $extra \
            > "$work/log" 2>&1 || { echo "ab_track.sh: $label failed:" >&2; cat "$work/log" >&2; exit 1; }
        t1=$(date +%s%N)
        echo "$label $(((t1 - t0) / 1000000)) $i" >> "$work/times"
    done
done
printf '%-12s %8s %8s %8s  (%d runs each, alternating, order reversed every other round)\n' "" median q1 q3 "$runs"
for spec in "$@"; do
    label=${spec%%=*}
    mapfile -t v < <(awk -v l="$label" '$1 == l {print $2}' "$work/times" | sort -n)
    n=${#v[@]}
    printf '%-12s %6s ms %5s ms %5s ms\n' "$label" "${v[$((n / 2))]}" "${v[$((n / 4))]}" "${v[$((3 * n / 4))]}"
done
first=${1%%=*}
for spec in "${@:2}"; do
    label=${spec%%=*}
    mapfile -t r < <(awk -v a="$first" -v b="$label" '$1 == a {t[$3] = $2} $1 == b {u[$3] = $2}
        END {for (k in u) if (k in t && t[k] > 0) printf "%.3f\n", u[k] / t[k]}' "$work/times" | sort -n)
    n=${#r[@]}
    printf '%-12s %s / %s in the same round: median %s (q1 %s, q3 %s)\n' "" "$label" "$first" \
        "${r[$((n / 2))]}" "${r[$((n / 4))]}" "${r[$((3 * n / 4))]}"
done

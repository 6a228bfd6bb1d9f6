#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Builds the libFuzzer targets of tests/fuzz (every reader of vibra: camera parsers, LAMMPS dump,
# CSV + metadata sidecar, trajectory and results HDF5, raw AVI, image sequences, batch manifest,
# --config TOML) into build-fuzz/ with clang++, and runs each one (1) over its seed corpus
# (committed seeds, generated seeds, and the regression inputs of every bug fuzzing found) and
# (2) for a fixed-seed, fixed-count run (-seed=1 -runs=N, N per target below), so the result is
# deterministic and the whole script stays near 5 minutes on 2 cores from scratch. Installs
# nothing: without clang++ or the libFuzzer runtime (Debian: libclang-rt-14-dev) it prints why
# and exits 0.
#
#   tests/fuzz/run_fuzz.sh [SCALE]     SCALE multiplies every target's run count (default 1)
#   tests/fuzz/run_fuzz.sh --list      the targets and their run counts
#   tests/fuzz/run_fuzz.sh --long [RUNS [SECONDS]]
#                                      the long run instead of the CI one: each target in turn under
#                                      nice -n 19, RUNS executions (default 1000000) or SECONDS
#                                      (default 1800), whichever comes first, on a corpus kept in
#                                      build-fuzz/long/<target> (it grows from run to run); the targets
#                                      whose inputs reach HDF5's or OpenCV's parsers run in fork mode
#                                      so that those libraries' crashes do not end the run, and every
#                                      input kept as a crash, hang or memory blow-up is replayed and
#                                      classified as below. One line per target: executions, exec/s,
#                                      corpus size, result.
# Environment: FUZZ_CXX (default clang++), FUZZ_CC (default clang), VIBRA_SHARED (default
# <repo>/../shared) for the real camera-header seeds, FUZZ_TARGETS (a subset, space-separated),
# FUZZ_TIMEOUT (s per input before an input counts as a hang, default 10; a long run at idle
# priority beside other work needs more, since a starved process is not a hung one), FUZZ_FORK_TIMEOUT
# (the limit while a fork-mode long run goes on, default 2 s: kept inputs are replayed with FUZZ_TIMEOUT),
# FUZZ_FORK_JOBS (fork-mode jobs at once, default 1: one core).
# Long runs: docs/reliability.md ("Fuzzing").
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
scale=${1:-${VIBRA_FUZZ_SCALE:-1}}
long_runs=0
if [ "$scale" = "--long" ]; then long_runs=${2:-1000000}; long_time=${3:-1800}; scale=1; fi
cxx=${FUZZ_CXX:-clang++}
cc=${FUZZ_CC:-clang}
# target:runs — from the measured exec/s (docs/reliability.md) so that each run takes about 5 s here.
runs_table="fuzz_cine_header:10000 fuzz_cih_text:15000 fuzz_cihx_xml:15000 fuzz_mraw_layout:100000
fuzz_lammps_dump:500 fuzz_csv_import:1000 fuzz_csv_metadata:30000 fuzz_trajectory_h5:500
fuzz_results_h5:300 fuzz_raw_avi:50000 fuzz_image_sequence:4000 fuzz_batch_manifest:15000
fuzz_config_toml:2000"
if [ "$scale" = "--list" ]; then echo "$runs_table" | tr ' ' '\n'; exit 0; fi
targets=${FUZZ_TARGETS:-$(echo "$runs_table" | tr ' ' '\n' | cut -d: -f1 | tr '\n' ' ')}

if ! command -v "$cxx" >/dev/null 2>&1; then
    echo "run_fuzz.sh: $cxx not found: fuzz targets skipped (needs packages clang libclang-rt-14-dev)"
    exit 0
fi
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }\n' > "$probe/p.cpp"
if ! "$cxx" -fsanitize=fuzzer,address "$probe/p.cpp" -o "$probe/p" >/dev/null 2>&1; then
    echo "run_fuzz.sh: $cxx cannot link -fsanitize=fuzzer (libFuzzer runtime missing): fuzz targets skipped (needs libclang-rt-14-dev)"
    exit 0
fi

build=$root/build-fuzz
cmake -S "$root/tests/fuzz" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_C_COMPILER="$cc" >/dev/null
if ! cmake --build "$build" -j2 > "$build/build.log" 2>&1; then
    grep -E "error" "$build/build.log" | head -30; echo "run_fuzz.sh: build failed (log: $build/build.log)"; exit 1
fi

# Seed corpus: committed seeds (seeds/<target>/, regressions included), generated ones.
corpus=$build/corpus
rm -rf "$corpus"
for t in $targets; do mkdir -p "$corpus/$t"; done
for d in "$root"/tests/fuzz/seeds/fuzz_*/; do
    t=$(basename "$d")
    [ -d "$corpus/$t" ] && cp "$d"* "$corpus/$t/"
done
cp "$root"/tests/fuzz/seeds/cih/* "$corpus/fuzz_cih_text/" 2>/dev/null || true
cp "$root"/tests/fuzz/seeds/cihx/* "$corpus/fuzz_cihx_xml/" 2>/dev/null || true
gen=$build/generated
rm -rf "$gen" && mkdir -p "$gen"
ASAN_OPTIONS=detect_leaks=0 "$build/make_h5_seeds" "$gen"
"$build/make_video_seeds" "$gen"
for t in fuzz_trajectory_h5 fuzz_results_h5 fuzz_raw_avi fuzz_image_sequence; do
    [ -d "$corpus/$t" ] && cp "$gen/$t"/* "$corpus/$t/"
done
# Replayed, not fuzzed: inputs too slow to mutate (make_h5_seeds: files in the writer's own layout).
replay_only() { if [ -d "$gen/$1.replay" ]; then ls -d "$gen/$1.replay"/*; fi; }
if command -v perl >/dev/null 2>&1 && [ -d "$corpus/fuzz_cine_header" ]; then
    # A tiny synthetic .cine: 2 images of 2 x 2 px, 16-bit, time and exposure blocks.
    perl -e '
        my $t0 = 1550000000 << 32;
        my $h = pack("a2 v v v l< V l< V V V V Q<", "CI", 44, 0, 1, -2, 2, -2, 2, 44, 84, 1724, $t0);
        my $bi = pack("V l< l< v v V V l< l< V V", 40, 2, 2, 1, 16, 0, 8, 0, 0, 0, 0);
        my $s = "\0" x 1600;
        substr($s, 140, 2) = "ST"; substr($s, 142, 2) = pack("v", 1600);
        substr($s, 768, 4) = pack("V", 1000); substr($s, 896, 4) = pack("V", 12);
        my $tags = pack("V v v Q< Q<", 24, 1002, 1, $t0, $t0 | 4294967) . pack("V v v V V", 16, 1003, 0, 85899, 85899);
        print $h, $bi, $s, $tags, pack("Q< Q<", 1740, 1756),
              pack("V V v4", 8, 8, 1, 2, 3, 4), pack("V V v4", 8, 8, 5, 6, 7, 4095);
    ' > "$corpus/fuzz_cine_header/tiny.cine"
fi
if command -v perl >/dev/null 2>&1 && [ -d "$corpus/fuzz_mraw_layout" ]; then
    # mraw_layout input: width, height, frames, bits | effective << 8, file size (int64 each) + pixels.
    perl -e 'print pack("q<5", 384, 384, 15, 12 | 12 << 8, 3317760)' > "$corpus/fuzz_mraw_layout/ball_12bit"
    perl -e 'print pack("q<5", 4, 2, 3, 12 | 12 << 8, 36), "\xAB\xC1\x23" x 4' > "$corpus/fuzz_mraw_layout/packed12"
    perl -e 'print pack("q<5", 3, 2, 2, 16 | 12 << 8, 24), "\x01\x02" x 6' > "$corpus/fuzz_mraw_layout/u16"
    perl -e 'print pack("q<5", 3, 3, 1, 8, 9), "abcdefghi"' > "$corpus/fuzz_mraw_layout/u8"
fi
real=${VIBRA_SHARED:-$root/../shared}/data/real/highspeed_camera_formats
if [ -d "$real" ]; then
    [ -d "$corpus/fuzz_cih_text" ] && cp "$real"/*.cih "$corpus/fuzz_cih_text/" 2>/dev/null || true
    [ -d "$corpus/fuzz_cihx_xml" ] && cp "$real"/*.cihx "$corpus/fuzz_cihx_xml/" 2>/dev/null || true
    for f in "$real"/*.cine; do
        [ -f "$f" ] && [ -d "$corpus/fuzz_cine_header" ] || continue
        # Header-only prefix: up to the end of the image offset table (off_image_offsets + 8 x count).
        count=$(od -An -tu4 -j20 -N4 "$f" | tr -d ' ')
        off=$(od -An -tu4 -j32 -N4 "$f" | tr -d ' ')
        head -c $((off + 8 * count)) "$f" > "$corpus/fuzz_cine_header/$(basename "$f").head"
    done
else
    echo "run_fuzz.sh: $real absent: synthetic camera seeds only"
fi

# A hang (-timeout, s per input) or a memory blow-up (-rss_limit_mb, also the largest single
# allocation) is a finding like a crash.
limits="-timeout=${FUZZ_TIMEOUT:-10} -rss_limit_mb=2048"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$root/tests/fuzz/lsan.supp}
# A crash or hang whose first frame outside the sanitizer/libFuzzer runtime is in a third-party
# shared library (HDF5 1.10's parser on a damaged file: H5HG_read, H5A__close; OpenCV's codecs and the
# DICOM library GDCM behind them, whose failed assert()s abort through libc's raise/abort) is
# that library's bug, not vibra's: reported, its input kept, not a failure. Anything whose first
# frame is vibra's code (linked statically) or the C++ runtime fails the run.
in_system_library() {
    grep -E '^ +#[0-9]+ 0x' "$1" | grep -vE 'fuzzer::|__interceptor_|__asan|__sanitizer|__ubsan|libclang_rt|/libc\.so|__mem(set|cpy|move)_| in (malloc|calloc|realloc|free|strdup|strndup|strlen|strnlen|strcpy|strncpy|strcmp|strncmp|memcmp) | in operator (new|delete)| in (__pthread_kill_implementation|raise|abort|__assert_fail_base|__assert_fail) ' | head -1 |
        grep -qE '/lib[^ ]*/lib(hdf5|sz|z|opencv|tiff|png|jpeg|webp|openjp2|gdal|deflate|gdcm)[^ /]*\.so'
}
# The long run of target $1 (--long): its own corpus under build-fuzz/long/, fork mode where a
# third-party parser is reached, then every kept crash / hang / blow-up replayed and classified.
long_run() {
    local t=$1 dir=$build/long/$1 art=$build/long/artifacts-$1 fork="" start secs execs verdict=clean a
    mkdir -p "$dir" "$art"
    cp -n "$corpus/$t"/* "$dir/"
    case $t in
        fuzz_trajectory_h5|fuzz_results_h5|fuzz_image_sequence)
            fork="-fork=${FUZZ_FORK_JOBS:-1} -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1" ;;
    esac
    # In fork mode an input over the time limit is kept and the run goes on, so the limit is short
    # (HDF5 1.10's endless loops on damaged heaps would each cost it); kept inputs are replayed below
    # with the full limit, so only an input slower than that there counts as a hang.
    local run_limits=$limits
    [ -n "$fork" ] && run_limits="-timeout=${FUZZ_FORK_TIMEOUT:-2} -rss_limit_mb=2048"
    start=$(date +%s)
    # Inputs the HDF5 targets skip (fuzz_hdf5.hpp: a global heap HDF5 1.10 cannot decode safely).
    export FUZZ_SKIP_STATS=$build/$t.skipped
    rm -f "$FUZZ_SKIP_STATS"
    # Idle priority that works: with the kernel's autogroups (one per session), `nice` only ranks a
    # process within its own session; a session of its own with its autogroup at nice 19 yields to
    # everything else on the machine.
    (cd "$art" && setsid -w sh -c 'echo 19 > /proc/self/autogroup 2>/dev/null; exec nice -n 19 "$@"' fuzz \
         "$build/$t" -seed=1 -runs="$long_runs" -max_total_time="$long_time" -max_len=65536 \
         $run_limits -print_final_stats=1 $fork -artifact_prefix="$art/" "$dir" > "$build/$t.long.log" 2>&1) || true
    secs=$(( $(date +%s) - start ))
    unset FUZZ_SKIP_STATS
    local skipped=""
    [ -s "$build/$t.skipped" ] && skipped=$(awk '{n += $1; s += $2} END {printf ", %d of %d inputs skipped (unsound HDF5 global heap)", s, n}' "$build/$t.skipped")
    execs=$(grep -E '^stat::number_of_executed_units' "$build/$t.long.log" | tail -1 | awk '{print $2}' || true)
    [ -n "$execs" ] || execs=$(grep -oE '^#[0-9]+' "$build/$t.long.log" | tail -1 | tr -d '#' || true)
    for a in "$art"/crash-* "$art"/oom-* "$art"/timeout-* "$art"/leak-*; do
        [ -f "$a" ] || continue
        case $a in *.log) continue ;; esac  # a replay's log from an earlier run, not an input
        if (cd "$art" && "$build/$t" $limits "$a" > "$a.log" 2>&1); then
            verdict="$verdict; $(basename "$a") no longer fails"
        elif in_system_library "$a.log"; then
            verdict="$verdict; $(basename "$a") inside a system library"
        else
            echo "FAILED: $t: $a fails in vibra's code (log: $a.log)"; tail -30 "$a.log"; verdict="$verdict; $(basename "$a") in vibra"
            status=1
        fi
    done
    echo "$t: ${execs:-0} executions in $secs s ($(( ${execs:-0} / (secs > 0 ? secs : 1) ))/s), corpus $(ls "$dir" | wc -l) inputs${skipped}: ${verdict#clean; }"
}
status=0
for t in $targets; do
    runs=$(echo "$runs_table" | tr ' ' '\n' | grep "^$t:" | cut -d: -f2)
    runs=$((runs * scale))
    seeds=("$corpus/$t"/* $(replay_only "$t"))
    if [ "$long_runs" -gt 0 ]; then echo "== $t: replay ${#seeds[@]} seeds, then the long run"
    else echo "== $t: replay ${#seeds[@]} seeds, then -seed=1 -runs=$runs"; fi
    if ! "$build/$t" $limits "${seeds[@]}" > "$build/$t.replay.log" 2>&1; then
        echo "FAILED replay of $t (log: $build/$t.replay.log)"; tail -30 "$build/$t.replay.log"; status=1; continue
    fi
    if [ "$long_runs" -gt 0 ]; then long_run "$t" || status=1; continue; fi
    work=$build/work/$t
    rm -rf "$work" && mkdir -p "$work" && cp "$corpus/$t"/* "$work/"
    if ! (cd "$build" && "$build/$t" -seed=1 -runs="$runs" -max_len=65536 $limits \
              -artifact_prefix="$build/$t-" "$work" > "$build/$t.run.log" 2>&1); then
        if in_system_library "$build/$t.run.log"; then
            echo "$t: stopped by a crash inside a system library, not vibra's code (log: $build/$t.run.log):"
            grep -E "^SUMMARY" "$build/$t.run.log" | head -1
            continue
        fi
        echo "FAILED fuzzing $t (log: $build/$t.run.log; crashing input: $build/$t-*)"; tail -40 "$build/$t.run.log"; status=1; continue
    fi
    grep -E "^#[0-9]+.*DONE|Done [0-9]+ runs" "$build/$t.run.log" | tail -1
done
[ $status -eq 0 ] && echo "run_fuzz.sh: all fuzz targets passed"
exit $status

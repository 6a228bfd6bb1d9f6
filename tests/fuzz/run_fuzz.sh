#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# Builds the camera-parser libFuzzer targets (tests/fuzz) into build-fuzz/ with clang++ and runs
# each one (1) over its seed corpus and (2) for a fixed-seed, fixed-count run (-seed=1 -runs=N),
# so the result is deterministic and short. Installs nothing: without clang++ or the libFuzzer
# runtime (Debian: libclang-rt-14-dev) it prints why and exits 0.
#
#   tests/fuzz/run_fuzz.sh [RUNS]        RUNS mutations per target (default 50000)
# Environment: FUZZ_CXX (default clang++), VIBRA_SHARED (default <repo>/../shared) for real seeds.
# Fuzz for hours instead: see docs/formats.md ("Fuzzing").
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
runs=${1:-${VIBRA_FUZZ_RUNS:-50000}}
cxx=${FUZZ_CXX:-clang++}
targets="fuzz_cine_header fuzz_cih_text fuzz_cihx_xml fuzz_mraw_layout"

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
cmake -S "$root/tests/fuzz" -B "$build" -DCMAKE_CXX_COMPILER="$cxx" >/dev/null
cmake --build "$build" -j2 >/dev/null

# Seed corpus: our synthetic seeds, plus header-only seeds cut from the real camera files.
corpus=$build/corpus
rm -rf "$corpus"
mkdir -p "$corpus"/{fuzz_cine_header,fuzz_cih_text,fuzz_cihx_xml,fuzz_mraw_layout}
cp "$root"/tests/fuzz/seeds/cih/* "$corpus/fuzz_cih_text/"
cp "$root"/tests/fuzz/seeds/cihx/* "$corpus/fuzz_cihx_xml/"
if command -v perl >/dev/null 2>&1; then
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
    # mraw_layout input: width, height, frames, bits | effective << 8, file size (int64 each) + pixels.
    perl -e 'print pack("q<5", 384, 384, 15, 12 | 12 << 8, 3317760)' > "$corpus/fuzz_mraw_layout/ball_12bit"
    perl -e 'print pack("q<5", 4, 2, 3, 12 | 12 << 8, 36), "\xAB\xC1\x23" x 4' > "$corpus/fuzz_mraw_layout/packed12"
    perl -e 'print pack("q<5", 3, 2, 2, 16 | 12 << 8, 24), "\x01\x02" x 6' > "$corpus/fuzz_mraw_layout/u16"
    perl -e 'print pack("q<5", 3, 3, 1, 8, 9), "abcdefghi"' > "$corpus/fuzz_mraw_layout/u8"
fi
real=${VIBRA_SHARED:-$root/../shared}/data/real/highspeed_camera_formats
if [ -d "$real" ]; then
    cp "$real"/*.cih "$corpus/fuzz_cih_text/" 2>/dev/null || true
    cp "$real"/*.cihx "$corpus/fuzz_cihx_xml/" 2>/dev/null || true
    for f in "$real"/*.cine; do
        [ -f "$f" ] || continue
        # Header-only prefix: up to the end of the image offset table (off_image_offsets + 8 x count).
        count=$(od -An -tu4 -j20 -N4 "$f" | tr -d ' ')
        off=$(od -An -tu4 -j32 -N4 "$f" | tr -d ' ')
        head -c $((off + 8 * count)) "$f" > "$corpus/fuzz_cine_header/$(basename "$f").head"
    done
else
    echo "run_fuzz.sh: $real absent: synthetic seeds only"
fi

status=0
for t in $targets; do
    seeds=("$corpus/$t"/*)
    echo "== $t: replay ${#seeds[@]} seeds, then -seed=1 -runs=$runs"
    if ! "$build/$t" -rss_limit_mb=2048 "${seeds[@]}" > "$build/$t.replay.log" 2>&1; then
        echo "FAILED replay of $t (log: $build/$t.replay.log)"; tail -30 "$build/$t.replay.log"; status=1; continue
    fi
    work=$build/work/$t
    rm -rf "$work" && mkdir -p "$work" && cp "$corpus/$t"/* "$work/"
    if ! (cd "$build" && "$build/$t" -seed=1 -runs="$runs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
              -artifact_prefix="$build/$t-" "$work" > "$build/$t.run.log" 2>&1); then
        echo "FAILED fuzzing $t (log: $build/$t.run.log; crashing input: $build/$t-*)"; tail -40 "$build/$t.run.log"; status=1; continue
    fi
    grep -E "^#[0-9]+.*DONE|Done [0-9]+ runs" "$build/$t.run.log" | tail -1
done
[ $status -eq 0 ] && echo "run_fuzz.sh: all fuzz targets passed"
exit $status

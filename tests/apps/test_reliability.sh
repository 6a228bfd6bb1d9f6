#!/usr/bin/env bash
# How vibra's writers behave when the machine or the user misbehaves (docs/reliability.md):
#   kills CMD      20 kill points (fixed seed; up to 20 more when fewer than 3 caught it at work)
#                  in a real run of one command: SIGINT / SIGTERM → exit 130 / 143, one line
#                  "interrupted … kept: …", no temporaries, the output absent or complete;
#                  kill -9 → the output absent or complete, and the same command run again cleans
#                  the dead run's temporaries and succeeds.
#   diskfull       every writer on a full tmpfs (mounted here; root needed, else exit 77 = skip):
#                  exit 1, "no space left on <folder>", nothing left behind, a results file being
#                  merged into left intact.
#   concurrent     two analyze runs merging into one file (serialised: both groups kept), two track
#                  runs of one output ("in use by PID"), readers while the file is replaced.
#   limits         ulimit -v runs end with an error message (exit 1), never a crash; a file declaring
#                  a huge dataset fails early naming it.
# Usage: test_reliability.sh MODE [CMD] VIBRA SCRATCH
set -uo pipefail
MODE=$1
shift
CMD=""
if [ "$MODE" = kills ]; then CMD=$1; shift; fi
VIBRA=$1
SCRATCH=$2
PY=/usr/bin/python3
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH" && cd "$SCRATCH" || exit 1
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
debris() { find "$1" \( -name '*.partial*' -o -name '*.spool' -o -name '*.lock' \) 2>/dev/null; }

# ---- inputs, outside the output folders ---------------------------------------------------
in=$SCRATCH/in
mkdir -p "$in"
make_inputs() {
  "$VIBRA" synth -o "$in/clip.avi" --truth "$in/truth.h5" --width 256 --height 256 --frames 150 --margin 0 \
      --look dark-ring --seed 3 --packing-fraction 0.5 -q || return 1
  "$VIBRA" simulate -o "$in/sim.h5" --frames 300 --n-small 200 --n-large 200 -q || return 1
  "$VIBRA" export "$in/sim.h5" -o "$in/sim.csv" -q || return 1
  # A LAMMPS dump of 200 frames x 2000 atoms (random positions: an import test, not physics).
  awk 'BEGIN { srand(7); for (t = 0; t < 200; ++t) { print "ITEM: TIMESTEP"; print t * 100;
        print "ITEM: NUMBER OF ATOMS"; print 2000; print "ITEM: BOX BOUNDS pp pp pp";
        print "0 60"; print "0 60"; print "-0.5 0.5"; print "ITEM: ATOMS id type x y";
        for (i = 1; i <= 2000; ++i) printf "%d %d %.6f %.6f\n", i, 1 + i % 2, 60 * rand(), 60 * rand() } }' \
      > "$in/dump.lammps"
}
make_inputs || { echo "FAIL: could not make the inputs"; exit 1; }
TRACK=(--radius-small 6 --radius-large 7.7 --threads 2)

# The command of a writer, its output and how to check that output is complete.
command_of() {  # $1 = name, $2 = output folder → sets ARGS and OUT
  local d=$2
  case $1 in
    simulate) OUT=$d/out.h5; ARGS=(simulate -o "$OUT" --frames 1500 --n-small 200 --n-large 200) ;;
    synth)    OUT=$d/out.avi; ARGS=(synth -o "$OUT" --truth "$d/out.truth.h5" --width 320 --height 320 --frames 60 --seed 9) ;;
    track)    OUT=$d/out.h5; ARGS=(track "$in/clip.avi" -o "$OUT" "${TRACK[@]}") ;;
    analyze)  OUT=$d/out.h5; ARGS=(analyze "$in/sim.h5" -o "$OUT" --threads 2 --only gr,psi6,msd,vacf,velocity_distribution,fs) ;;
    import)   OUT=$d/out.h5; ARGS=(import "$in/dump.lammps" -o "$OUT" --species-map 1:small,2:large) ;;
    export)   OUT=$d/out.csv; ARGS=(export "$in/sim.h5" -o "$OUT") ;;
    convert)  OUT=$d/frames; ARGS=(convert "$in/clip.avi" -o "$OUT") ;;
    render)   OUT=$d/out.avi; ARGS=(render "$in/truth.h5" --video "$in/clip.avi" -o "$OUT" --upscale 2) ;;
    *) echo "unknown command $1"; exit 2 ;;
  esac
}
complete() {  # is $OUT of command $1 whole?
  case $1 in
    simulate|track|import) "$VIBRA" info "$OUT" >/dev/null 2>&1 ;;
    synth) "$VIBRA" info "$OUT" 2>/dev/null | grep -qE "^frames: +60$" && "$VIBRA" info "$(dirname "$OUT")/out.truth.h5" >/dev/null 2>&1 ;;
    analyze) "$PY" -c "import h5py,sys; f=h5py.File(sys.argv[1]); sys.exit(0 if 'msd' in f['analysis'] else 1)" "$OUT" 2>/dev/null ;;
    export) [ "$(wc -l < "$OUT")" -eq $((300 * 400 + 1)) ] ;;
    convert) [ "$(ls "$OUT" | grep -c '\.png$')" -eq 150 ] && [ -f "$OUT/frames.csv" ] ;;
    render) "$VIBRA" info "$OUT" 2>/dev/null | grep -qE "^frames: +150$" ;;
  esac
}

ms() { echo $(( $(date +%s%N) / 1000000 )); }

# ---- kills --------------------------------------------------------------------------------
if [ "$MODE" = kills ]; then
  d=$SCRATCH/run
  mkdir -p "$d"
  command_of "$CMD" "$d"
  t0=$(ms)
  "$VIBRA" "${ARGS[@]}" -q > /dev/null 2>&1 || { echo "FAIL: $CMD does not run: ${ARGS[*]}"; exit 1; }
  dur=$(( $(ms) - t0 ))
  complete "$CMD" || fail "$CMD: a clean run's output is not complete"
  echo "$CMD: a full run takes $dur ms"
  RANDOM=2026
  sigs=(INT TERM KILL)
  caught=0
  counted=0   # messages with "after N [of M] frames" and the largest N among them
  max_n=0
  case $CMD in simulate) total=1500 ;; synth) total=60 ;; render|convert) total=150 ;; *) total= ;; esac
  # 20 kill points; when fewer than 3 of them caught the command at work (the first run was
  # timed on a busy machine and later runs were faster), up to 20 more SIGINT/SIGTERM ones. A run
  # that finishes before its kill point bounds T: the points follow the fastest run seen.
  k=0
  while [ $k -lt 20 ] || { [ $caught -lt 3 ] && [ $k -lt 40 ]; }; do
    k=$((k + 1))
    rm -rf "$d" && mkdir -p "$d"
    span=$(( dur * 7 / 10 - 50 ))  # kill points in [50 ms, 0.7 T]: most land while the command works
    delay=$(( 50 + RANDOM % (span > 10 ? span : 10) ))
    if [ $k -le 20 ]; then sig=${sigs[$((k % 3))]}; else sig=${sigs[$((k % 2))]}; fi
    t0=$(ms)
    "$VIBRA" "${ARGS[@]}" -q > "$d.out" 2> "$d.err" &
    pid=$!
    sleep "$(awk -v m=$delay 'BEGIN { printf "%.3f", m / 1000 }')"
    kill -s "$sig" $pid 2>/dev/null
    wait $pid 2>/dev/null
    rc=$?
    what="$CMD kill point $k ($sig after $delay ms, exit $rc)"
    if [ $rc -eq 0 ]; then
      complete "$CMD" || fail "$what: finished but the output is not complete"
      took=$(( $(ms) - t0 ))
      [ $took -ge $dur ] || { dur=$took; echo "$CMD: a run finished in $dur ms: later kill points follow it"; }
      continue
    fi
    case $sig in
      INT)  [ $rc -eq 130 ] || fail "$what: exit $rc, expected 130" ;;
      TERM) [ $rc -eq 143 ] || fail "$what: exit $rc, expected 143" ;;
      KILL) [ $rc -eq 137 ] || fail "$what: exit $rc, expected 137" ;;
    esac
    if [ "$sig" != KILL ]; then
      if grep -q "interrupted" "$d.err" && grep -q "SIG$sig" "$d.err"; then
        caught=$((caught + 1))
        [ "$(wc -l < "$d.err")" -eq 1 ] || fail "$what: more than one line on stderr: $(cat "$d.err")"
        grep -q "kept: " "$d.err" || fail "$what: the message does not say what was kept: $(cat "$d.err")"
        # The frame count of the message: N of M with M the command's frames, 0 <= N <= M.
        if [ -n "$total" ]; then
          n=$(grep -oE "after [0-9]+ (of [0-9]+ )?frames" "$d.err" | grep -oE "[0-9]+" | head -1)
          m=$(grep -oE "after [0-9]+ of [0-9]+ frames" "$d.err" | grep -oE "[0-9]+" | sed -n 2p)
          [ -n "$n" ] || fail "$what: the message gives no frame count: $(cat "$d.err")"
          [ -z "$m" ] || [ "$m" -eq "$total" ] || fail "$what: 'of $m frames', the command asked for $total: $(cat "$d.err")"
          [ "${n:-0}" -le "$total" ] || fail "$what: 'after $n frames' of $total: $(cat "$d.err")"
          counted=$((counted + 1))
          [ "${n:-0}" -le "$max_n" ] || max_n=$n
        fi
      fi
      [ -z "$(debris "$d")" ] || fail "$what: temporaries left: $(debris "$d")"
      [ ! -e "$OUT" ] || fail "$what: $OUT exists after an interruption"
    else
      [ ! -e "$OUT" ] || complete "$CMD" || fail "$what: $OUT holds a partial output"
      "$VIBRA" "${ARGS[@]}" -q > /dev/null 2> "$d.err" || fail "$what: the rerun failed: $(cat "$d.err")"
      complete "$CMD" || fail "$what: the rerun's output is not complete"
      [ -z "$(debris "$d")" ] || fail "$what: the rerun left temporaries: $(debris "$d")"
    fi
  done
  echo "$CMD: $caught of the $(( 14 + (k > 20 ? k - 20 : 0) )) SIGINT/SIGTERM kill points interrupted work in progress"
  if [ -n "$total" ] && [ $caught -gt 0 ]; then
    echo "$CMD: the messages counted up to $max_n of $total frames"
    [ "$max_n" -gt 0 ] || fail "$CMD: every interrupted run said 'after 0 frames', though it was stopped at work"
  fi
  [ $caught -ge 3 ] || fail "$CMD: only $caught kill points hit the command at work (timing too short?)"
fi

# ---- disk full ----------------------------------------------------------------------------
if [ "$MODE" = diskfull ]; then
  full=$SCRATCH/full
  mkdir -p "$full"
  if [ "$(id -u)" -ne 0 ] || ! mount -t tmpfs -o size=2m tmpfs "$full" 2>/dev/null; then
    echo "SKIP: cannot mount a tmpfs here (needs root)"; exit 77
  fi
  trap 'umount "$full" 2>/dev/null' EXIT
  # A results file to merge into, then a filler that leaves 48 kB free.
  "$VIBRA" analyze "$in/sim.h5" -o "$full/results.h5" --only temperature -q || fail "cannot write the first results file"
  before=$(sha256sum "$full/results.h5")
  avail=$(df --output=avail -B1 "$full" | tail -1)
  fallocate -l $((avail - 48 * 1024)) "$full/filler" 2>/dev/null || dd if=/dev/zero of="$full/filler" bs=4096 count=$(( (avail - 48 * 1024) / 4096 )) 2>/dev/null
  listing() { ls -A "$full" | sort | tr '\n' ' '; }
  base=$(listing)
  check_full() {  # $1 = label; runs "${ARGS[@]}" with outputs in $full
    "$VIBRA" "${ARGS[@]}" -q > /dev/null 2> "$SCRATCH/err"
    local rc=$?
    [ $rc -eq 1 ] || fail "$1: exit $rc on a full disk, expected 1 ($(cat "$SCRATCH/err"))"
    grep -q "no space left on $full" "$SCRATCH/err" || fail "$1: no 'no space left on $full' in: $(cat "$SCRATCH/err")"
    [ "$(listing)" = "$base" ] || fail "$1: left behind: $(listing) (before: $base)"
    echo "$1: $(head -c 300 "$SCRATCH/err")"
  }
  for c in simulate synth track analyze import export convert render; do
    command_of $c "$full"
    check_full "$c"
  done
  ARGS=(synth -o "$full/frames/" --truth "$SCRATCH/t.h5" --format png --width 384 --height 384 --frames 40)
  check_full "synth to a PNG folder"
  ARGS=(analyze "$in/sim.h5" -o "$full/results.h5" --only msd,vacf,gr)
  check_full "analyze merging into an existing results file"
  # batch: its stages fail on the full disk, it says so, goes on, and leaves no temporaries.
  mkdir -p "$in/videos" && cp "$in/clip.avi" "$in/videos/"
  "$VIBRA" batch "$in/videos" -o "$full/campaign" "${TRACK[@]}" --no-figures --only gr -q > /dev/null 2> "$SCRATCH/err"
  rc=$?
  [ $rc -eq 1 ] || fail "batch: exit $rc on a full disk, expected 1"
  grep -q "no space left on $full" "$SCRATCH/err" "$full"/campaign/*/log.txt 2>/dev/null ||
    fail "batch: no 'no space left on $full' in its messages: $(head -c 600 "$SCRATCH/err")"
  # (OUTDIR/.campaign.lock and OUTDIR/<video>/.lock are batch's documented, permanent lock files)
  left=$(debris "$full" | grep -v -e '/\.campaign\.lock$' -e '/\.lock$')
  [ -z "$left" ] || fail "batch: temporaries left: $left"
  echo "batch: $(head -c 300 "$SCRATCH/err")"
  [ "$(sha256sum "$full/results.h5")" = "$before" ] || fail "the results file merged into was changed"
fi

# ---- concurrent use -----------------------------------------------------------------------
if [ "$MODE" = concurrent ]; then
  for k in 1 2 3; do
    rm -f merged.h5
    "$VIBRA" analyze "$in/sim.h5" -o merged.h5 --only msd -q 2> e1 &
    p1=$!
    "$VIBRA" analyze "$in/sim.h5" -o merged.h5 --only gr -q 2> e2 &
    p2=$!
    wait $p1 || fail "merge $k: the first analyze failed: $(cat e1)"
    wait $p2 || fail "merge $k: the second analyze failed: $(cat e2)"
    "$PY" -c "import h5py,sys; a=h5py.File('merged.h5')['analysis']; sys.exit(0 if 'msd' in a and 'gr' in a else 1)" \
      || fail "merge $k: the merged file lacks a group of one run"
    [ -z "$(debris .)" ] || fail "merge $k: temporaries left: $(debris .)"
  done
  "$VIBRA" track "$in/clip.avi" -o same.h5 "${TRACK[@]}" -q 2> e1 &
  p1=$!
  for i in $(seq 1 100); do [ -e same.h5.lock ] && break; sleep 0.02; done
  "$VIBRA" track "$in/clip.avi" -o same.h5 "${TRACK[@]}" -q 2> e2
  rc=$?
  wait $p1 || fail "the first track failed: $(cat e1)"
  [ $rc -eq 1 ] || fail "a second track of the same output: exit $rc, expected 1"
  grep -q "same.h5: in use by PID $p1" e2 || fail "a second track of the same output: no 'in use by PID $p1': $(cat e2)"
  "$VIBRA" info same.h5 > /dev/null || fail "same.h5 is not a whole trajectory file"
  # Readers see the old or the new file while it is replaced, never a mix.
  "$VIBRA" simulate -o replaced.h5 --frames 50 -q --seed 1
  ( for s in $(seq 2 12); do "$VIBRA" simulate -o replaced.h5 --frames 300 --seed $s -q; done ) &
  writer=$!
  reads=0
  while kill -0 $writer 2>/dev/null; do
    "$VIBRA" info replaced.h5 > /dev/null 2> e3 || fail "a reader saw a broken replaced.h5: $(cat e3)"
    reads=$((reads + 1))
  done
  wait $writer || fail "the replacing writer failed"
  echo "concurrent: $reads reads of a file replaced 11 times, all whole"
  [ $reads -ge 5 ] || fail "too few reads ($reads) to show anything"
fi

# ---- resource limits ----------------------------------------------------------------------
if [ "$MODE" = limits ]; then
  for lim in 250000 100000 60000 45000; do
    for c in analyze import track; do
      command_of $c "$SCRATCH/lim"
      rm -rf "$SCRATCH/lim" && mkdir -p "$SCRATCH/lim"
      ( ulimit -v $lim; exec "$VIBRA" "${ARGS[@]}" -q ) > /dev/null 2> err
      rc=$?
      echo "ulimit -v $lim $c: exit $rc $(head -c 200 err)"
      if [ $rc -ne 0 ]; then
        [ $rc -eq 1 ] || fail "ulimit -v $lim $c: exit $rc (a crash), expected 0 or 1: $(cat err)"
        grep -qE "out of memory|can allocate|cannot allocate|Cannot allocate|Insufficient memory|Failed to allocate|Resource temporarily unavailable" err ||
          fail "ulimit -v $lim $c: the message does not say memory ran out: $(cat err)"
        [ -z "$(debris "$SCRATCH/lim")" ] || fail "ulimit -v $lim $c: temporaries left"
      fi
    done
  done
  # A trajectory file that declares 10^11 frames: refused when opened, naming the dataset.
  cp "$in/sim.h5" huge.h5
  "$PY" - <<'PY'
import h5py
with h5py.File("huge.h5", "r+") as f:
    del f["index/frame_offsets"]
    d = f.create_dataset("index/frame_offsets", shape=(10**11,), dtype="i8", chunks=(4096,))
    d.attrs["units"] = "rows"
PY
  "$VIBRA" analyze huge.h5 -o huge_results.h5 -q 2> err
  rc=$?
  [ $rc -eq 1 ] || fail "a file declaring 10^11 frames: exit $rc, expected 1"
  grep -q "frame_offsets" err && grep -q "declares 100000000000 elements" err ||
    fail "a file declaring 10^11 frames: $(cat err)"
  echo "huge: $(cat err)"
fi

if [ $failures -gt 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "all checks passed"

#!/usr/bin/env bash
# The figure script turns a small results file into PNG figures (headless, Debian's python3).
# Usage: test_figures.sh VIBRA_CLI SOURCE_DIR SCRATCH
set -euo pipefail
vibra=$1 src=$2 scratch=$3
rm -rf "$scratch" && mkdir -p "$scratch"
"$vibra" simulate -o "$scratch/sim.h5" --n-small 80 --n-large 80 --packing-fraction 0.5 --frames 120 --equilibrate 20 -q
"$vibra" analyze "$scratch/sim.h5" -o "$scratch/res.h5" -q
/usr/bin/python3 "$src/notebooks/vibra_figures.py" "$scratch/res.h5" "$scratch/fig" > "$scratch/list.txt"
n=$(grep -c '\.png$' "$scratch/list.txt" || true)
echo "figures written: $n"
cat "$scratch/list.txt"
[ "$n" -ge 3 ] || { echo "FAIL: expected at least 3 figures"; exit 1; }
while read -r f; do
  [ -s "$f" ] || { echo "FAIL: empty or missing $f"; exit 1; }
  head -c 8 "$f" | od -An -tx1 | grep -q "89 50 4e 47" || { echo "FAIL: $f is not a PNG"; exit 1; }
done < "$scratch/list.txt"

#!/usr/bin/env bash
# vibra batch on real engines: GNU parallel (two shards + --collect) and a single-node Slurm
# (munge + slurmctld + slurmd started here with a private configuration; the job array of two
# shards, then the collect job that depends on it with afterok). Each collected table must equal
# that of a single-process run (all columns but the run's own times). Skips (exit 77) with a
# message when the packages are missing and cannot be installed (not root, no archive).
# Usage: test_batch_cluster.sh VIBRA SCRATCH
set -euo pipefail
VIBRA=$1
SCRATCH=$2
rm -rf "$SCRATCH" && mkdir -p "$SCRATCH"
cd "$SCRATCH"

need=()
for c in parallel sbatch slurmctld slurmd munged; do command -v "$c" >/dev/null || need+=("$c"); done
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
    echo "installing slurm-wlm munge parallel (missing: ${need[*]})"
    DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
      slurm-wlm munge parallel >/dev/null 2>&1 || true
  fi
  for c in parallel sbatch slurmctld slurmd munged; do
    command -v "$c" >/dev/null || { echo "SKIP: $c is not installed and cannot be installed here"; exit 77; }
  done
fi

# ---- data: four small clips ---------------------------------------------------------------
mkdir -p videos
for phi in 0.30 0.45 0.60 0.75; do
  "$VIBRA" synth -o videos/phi$phi.avi --truth truth$phi.h5 --width 192 --height 192 --frames 40 --margin 0 \
      --look dark-ring --noise 0.03 --seed 5 --packing-fraction $phi -q
done
FLAGS=(--radius-small 6 --radius-large 8 --no-figures --only gr,msd,velocity_distribution --threads 1 -q)
"$VIBRA" batch videos -o single "${FLAGS[@]}"

same_table() {  # the campaign tables of two OUTDIRs, without the columns of time and memory
  /usr/bin/python3 - "$1" "$2" <<'PY'
import csv, sys
def load(d):
    rows = list(csv.reader(open(d + "/campaign.csv")))
    keep = [j for j, n in enumerate(rows[0]) if not (n.endswith(("_s", "_mb")) or n.startswith("time_"))]
    return [[r[j] for j in keep] for r in rows]
a, b = load(sys.argv[1]), load(sys.argv[2])
if a != b:
    print("tables differ:", sys.argv[1], sys.argv[2]); [print(x, "\n", y) for x, y in zip(a, b) if x != y]; sys.exit(1)
print("same table:", sys.argv[1], sys.argv[2], len(a) - 1, "rows")
PY
}

# ---- GNU parallel ----------------------------------------------------------------------------
parallel --joblog par.log --resume-failed "$VIBRA" batch videos -o par "${FLAGS[@]}" --shard {}/2 ::: 0 1
"$VIBRA" batch videos -o par "${FLAGS[@]}" --collect
same_table single par
# a second run with the joblog does nothing (every shard succeeded) and the table stays
parallel --joblog par.log --resume-failed "$VIBRA" batch videos -o par "${FLAGS[@]}" --shard {}/2 ::: 0 1
same_table single par

# ---- Slurm, one node, started here -------------------------------------------------------
if [ "$(id -u)" -ne 0 ]; then echo "SKIP: Slurm part needs root (to start munged and slurmd)"; exit 77; fi
S=$SCRATCH/slurm-node
mkdir -p "$S/state" "$S/spool" "$S/log"
HOST=$(hostname -s)
export SLURM_CONF=$S/slurm.conf
cat > "$SLURM_CONF" <<CONF
ClusterName=vibratest
SlurmctldHost=$HOST(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
ReturnToService=2
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=2000 State=UNKNOWN
PartitionName=vibra Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
started_munge=0
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  install -d -o munge -g munge -m 0755 /run/munge
  runuser -u munge -- munged
  started_munge=1
fi
cleanup() {
  for p in "$S/slurmd.pid" "$S/slurmctld.pid"; do [ -f "$p" ] && kill "$(cat "$p")" 2>/dev/null || true; done
  [ "$started_munge" = 1 ] && [ -f /run/munge/munged.pid ] && kill "$(cat /run/munge/munged.pid)" 2>/dev/null || true
}
trap cleanup EXIT
slurmctld
slurmd
for _ in $(seq 1 60); do
  sinfo -h -o %t 2>/dev/null | grep -qE "^idle" && break
  sleep 0.5
done
sinfo
"$VIBRA" batch videos -o slurm "${FLAGS[@]}" --slurm --shards 2 --slurm-time 0:10:00 --slurm-mem 500M --submit
cat slurm/slurm/submit.log
for _ in $(seq 1 300); do
  [ -z "$(squeue -h 2>/dev/null)" ] && break
  sleep 1
done
[ -z "$(squeue -h)" ] || { echo "jobs still queued after 300 s:"; squeue; exit 1; }
ls slurm/slurm/
cat slurm/slurm/collect_*.log
grep -q "campaign table" slurm/slurm/collect_*.log || { echo "the collect job did not run"; exit 1; }
same_table single slurm
echo "cluster: GNU parallel and Slurm tables equal the single-process run"

#!/usr/bin/env bash
# submit.sh [ARGS...] JOBSCRIPT: run the jobscript as a background process, print its job id.
set -euo pipefail
jobscript="${*: -1}"
state="${MINTDIM_LOCAL_CLUSTER_DIR:-.snakemake/local-cluster}"
mkdir -p "$state"
id="$(date +%s%N)-$$-$RANDOM"
# own session (cancel.sh stops the whole group); no stdio shared with Snakemake
setsid bash -c '/bin/sh "$1" > "$2.out" 2>&1; echo $? > "$2.rc.tmp"; mv "$2.rc.tmp" "$2.rc"' \
    _ "$jobscript" "$state/$id" < /dev/null > /dev/null 2>&1 &
echo $! > "$state/$id.pid"
echo "$id"

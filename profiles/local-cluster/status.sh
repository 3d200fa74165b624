#!/usr/bin/env bash
# status.sh JOBID: print running, success or failed.
state="${MINTDIM_LOCAL_CLUSTER_DIR:-.snakemake/local-cluster}"
job="$state/$1"
verdict() { if [ "$(cat "$job.rc")" = 0 ]; then echo success; else echo failed; fi; }
if [ -f "$job.rc" ]; then
    verdict
elif [ -f "$job.pid" ] && kill -0 "$(cat "$job.pid")" 2> /dev/null; then
    echo running
elif [ -f "$job.rc" ]; then  # ended between the two checks
    verdict
else
    echo failed  # gone without an exit code (killed)
fi

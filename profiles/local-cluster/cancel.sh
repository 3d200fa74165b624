#!/usr/bin/env bash
# cancel.sh JOBID...: stop jobs (their whole process group).
state="${MINTDIM_LOCAL_CLUSTER_DIR:-.snakemake/local-cluster}"
for id in "$@"; do
    if [ -f "$state/$id.pid" ]; then
        kill -TERM -- "-$(cat "$state/$id.pid")" 2> /dev/null || true
    fi
done

"""What a build with the slurm executor asks the cluster before any job is submitted.

snakemake-executor-plugin-slurm (2.8.0) learns whether a job has ended from a status command: `sacct`
wherever that binary exists, else `squeue`. Where accounting is disabled, `sacct` exists but answers
"Slurm accounting storage is disabled": the plugin takes that for "no news yet" and waits forever. With
`squeue`, a finished job is seen only while slurmctld still keeps it, MinJobAge seconds; the plugin waits
up to LONGEST_WAIT_S between two status checks (and takes `sacct` again when MinJobAge is below three
times slurm-init-seconds-before-status-checks).

So, before Snakemake starts (`mintdim build`), and when a direct `snakemake --profile` run starts
(the Snakefile's onstart): `sinfo` answers, the profile's partitions exist, and the status command works:
`sacct` answers, or (accounting disabled, no command set in the profile) `squeue` does, with a MinJobAge
above both waits. One console line says which and why; a cluster that cannot be asked is a ClusterError
naming the command, its answer and the profile key to set.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass

from .. import errors as E

LONGEST_WAIT_S = 180  # the plugin's longest wait between two status checks (max_sleep_time)
INIT_DEFAULT_S = 40  # its default slurm-init-seconds-before-status-checks
STATUS_KEY = "slurm-status-command"
ASK_TIMEOUT_S = 30
SACCT = [
    "sacct",
    "-X",
    "--parsable2",
    "--noheader",
    "--format=JobIdRaw,State",
    "--starttime",
    "now-1hours",
    "--endtime",
    "now",
]
SQUEUE = ["squeue", "--noheader", "--states=all", "--format=%i|%T"]


@dataclass
class Answer:
    command: str
    ok: bool
    text: str  # what it printed (its error, when not ok)


def ask(argv: list[str]) -> Answer:
    """Run one Slurm command; its answer, or why it gave none."""
    command = " ".join(argv)
    try:
        proc = subprocess.run(
            argv, capture_output=True, text=True, timeout=ASK_TIMEOUT_S, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        return Answer(command, False, f"{argv[0]}: command not found")
    except subprocess.TimeoutExpired:
        return Answer(command, False, f"no answer within {ASK_TIMEOUT_S} s")
    text = (proc.stdout if proc.returncode == 0 else (proc.stderr.strip() or proc.stdout)).strip()
    return Answer(command, proc.returncode == 0, text)


def min_job_age(config_text: str) -> int | None:
    """MinJobAge (seconds) from `scontrol show config`."""
    found = re.search(r"^MinJobAge\s*=\s*(\d+)\s*([a-z]*)", config_text, re.M | re.I)
    if not found:
        return None
    return int(found.group(1)) * (3600 if found.group(2).lower().startswith("h") else 1)


def profile_partitions(profile: dict) -> list[str]:
    """Every slurm_partition the profile names (default-resources, set-resources per rule)."""
    found = [_resource(profile.get("default-resources"), "slurm_partition")]
    for res in (profile.get("set-resources") or {}).values():
        found.append(_resource(res, "slurm_partition"))
    return sorted({str(p).strip("'\"") for p in found if p})


def _resource(resources, name: str):
    """A resource of a profile's mapping ({name: value}) or list ("name=value") form."""
    if isinstance(resources, dict):
        return resources.get(name)
    for item in resources or []:
        key, _, value = str(item).partition("=")
        if key.strip() == name:
            return value.strip()
    return None


def check(profile: dict, lang: str = "en", echo=None) -> str:
    """Ask the cluster what the build will ask it; return the status command to use. `profile`: the
    profile's settings (its config.yaml). Raises ClusterError for a cluster that cannot be asked."""
    known = ask(["sinfo", "--noheader", "--format=%R"])
    if not known.ok:
        raise E.ClusterError.unreachable(known.command, known.text, lang=lang)
    partitions = set(known.text.split())
    for name in profile_partitions(profile):
        if name not in partitions:
            raise E.ClusterError.no_partition(name, sorted(partitions), lang=lang)
    command, why = status_command(profile.get(STATUS_KEY), _init_seconds(profile), lang)
    if echo is not None:
        echo(f"[unit-build] Slurm job status: {command} ({why})")
    return command


def _init_seconds(profile: dict) -> int:
    try:
        return int(profile.get("slurm-init-seconds-before-status-checks") or INIT_DEFAULT_S)
    except (TypeError, ValueError):
        return INIT_DEFAULT_S


def status_command(chosen: str | None, init_seconds: int, lang: str = "en") -> tuple[str, str]:
    """The status command that works here and why: the profile's (`chosen`), or the plugin's own choice
    (sacct, where it exists), or squeue where sacct cannot answer."""
    if chosen not in (None, "sacct", "squeue"):
        return str(chosen), "the profile's choice"  # the plugin refuses it with its own message
    sacct = ask(SACCT) if chosen != "squeue" else None
    if sacct is not None and sacct.ok:
        return "sacct", "the accounting database answers for this cluster's jobs"
    if chosen == "sacct":
        raise E.ClusterError.no_status(sacct.command, sacct.text, "squeue", lang=lang)
    squeue = ask(SQUEUE)
    if not squeue.ok:
        other = None if sacct is None else "sacct"
        raise E.ClusterError.no_status(squeue.command, squeue.text, other, lang=lang)
    config = ask(["scontrol", "show", "config"])
    age = min_job_age(config.text) if config.ok else None
    needed = max(LONGEST_WAIT_S, 3 * init_seconds) + 1
    if age is None or age < needed:
        raise E.ClusterError.short_min_job_age(age, needed, sacct.text if sacct else None, lang=lang)
    because = f"sacct: {_first_line(sacct.text)}; " if sacct is not None else ""
    return "squeue", (
        f"{because}finished jobs stay in squeue for MinJobAge = {age} s, longer than the "
        f"longest wait between two status checks, {needed - 1} s"
    )


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or ["no answer"])[0]


def read_profile(profile: str | None) -> dict | None:
    """A profile directory's settings (config.yaml, or profile.yaml), or None."""
    import yaml

    if not profile:
        return None
    for name in ("config.yaml", "profile.yaml"):
        try:
            with open(os.path.join(profile, name), encoding="utf-8") as f:
                data = yaml.safe_load(f) or {}
        except (OSError, yaml.YAMLError):
            continue
        return data if isinstance(data, dict) else None
    return None


def settle(settings, lang: str = "en") -> None:
    """A direct `snakemake --profile` run with the slurm executor (the Snakefile's onstart, before any job
    is submitted; `mintdim build` has asked before Snakemake started). `settings`: the plugin's executor
    settings, whose status_command the plugin reads at every status check. The same questions as
    check(); where its `sacct` (its default wherever the binary exists) cannot answer and squeue can,
    the settings take squeue. A cluster that cannot be asked: the error, and the run ends."""
    import sys

    try:
        known = ask(["sinfo", "--noheader", "--format=%R"])
        if not known.ok:
            raise E.ClusterError.unreachable(known.command, known.text, lang=lang)
        chosen = getattr(settings, "status_command", None)
        init = getattr(settings, "init_seconds_before_status_checks", None) or INIT_DEFAULT_S
        command, why = status_command(None if chosen == "sacct" else chosen, int(init), lang)
    except E.MintDimError as err:
        print(f"\n{err.render(lang)}", file=sys.stderr, flush=True)
        sys.exit(1)
    settings.status_command = command
    print(f"[unit-build] Slurm job status: {command} ({why})", file=sys.stderr, flush=True)

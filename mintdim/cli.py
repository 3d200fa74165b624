"""The `mintdim` command. Subcommands live in mintdim/commands/, one module each.

Exit codes: 0 success, 1 build or validation error (one clear message), 2 usage error.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from . import __version__
from . import errors as E
from .commands import COMMANDS

EPILOG = """examples:
  mintdim build my.yaml --cores 4                       build (config keys: config/README.md)
  mintdim build my.yaml --dry-run                       show the planned jobs, run nothing
  mintdim build my.yaml --profile profiles/slurm        run the jobs on a cluster
  mintdim inspect artifacts/my_units                    samples, tokens, padding, length histogram
  mintdim export artifacts/my_units --format hf --to my_hf   a datasets directory (or --format megatron)

exit codes:
  0    success
  1    build or validation error (one clear message on stderr, never a traceback)
  2    usage error (unknown command or option, missing argument)
  130  interrupted (Ctrl-C)
  143  stopped by SIGTERM (129: SIGHUP); Snakemake and its jobs stop with it"""


SUB_EXIT_CODES = "Exit codes: 0 ok, 1 error (one clear message on stderr), 2 usage error."


class _Parser(argparse.ArgumentParser):
    """argparse's parser, but a help, version or usage text that cannot be written is an error, not
    silently lost (`mintdim --help >/dev/full` exited 0). Subcommands' parsers are of this class too."""

    def _print_message(self, message, file=None):
        if message:
            try:
                (file or sys.stderr).write(message)
            except AttributeError:  # no such stream (sys.stderr None)
                pass


def make_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="mintdim",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="MintDim: low-padding fixed-width token shards from JSONL, Parquet and datasets "
        "directories.\n\nBuilds run the packaged Snakemake workflow; `mintdim COMMAND --help` describes "
        "each command.",
        epilog=EPILOG,
    )
    parser.add_argument("--version", action="version", version=f"mintdim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f".commands.{name}", __package__).register(sub)
    for command in sub.choices.values():  # every subcommand's help states the exit codes
        if "Exit codes" not in (command.epilog or ""):
            command.epilog = ((command.epilog or "") + "\n\n" if command.epilog else "") + SUB_EXIT_CODES
    return parser


def main(argv=None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    lang = getattr(args, "lang", None)  # --lang of the command (commands.lang_option)
    try:
        return args.func(args)
    except E.UsageError as err:
        print(f"mintdim {args.command}: {err.with_lang(lang) if lang else err}", file=sys.stderr)
        return 2
    except E.MintDimError as err:
        print(str(err.with_lang(lang) if lang else err), file=sys.stderr)
        return getattr(err, "exit_code", 1)  # 128 + N: the build was stopped by signal N
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def console() -> None:
    """The `mintdim` command (its console script, and `python -m mintdim`)."""
    # MintDim calls no BLAS routine, and numpy's OpenBLAS starts a thread per core when numpy is
    # imported, which spins about 0.1 s of CPU: one thread for this process and the jobs it starts
    # (scripts/_door.py does the same for jobs Snakemake starts on its own). An export of the 107 MB
    # ShareGPT build: 0.34 -> 0.23 s of user CPU (6 alternating runs).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        code = main()
    except SystemExit as exc:  # argparse: --help, --version, a usage error
        code = exc.code
    except BrokenPipeError:  # a reader gone before argparse's text was written (`| head -0`)
        _to_devnull(sys.stdout)
        code = 0
    except OSError as exc:  # e.g. its output on a full disk: `mintdim inspect OUT >/dev/full`
        code = _cannot_write(exc)
    sys.exit(_finish(code))


def _finish(code) -> int:
    """The exit code once the console streams are flushed: a reader gone (`| head`) ends quietly with
    the command's code; output that cannot be written (a full disk: `mintdim --help >/dev/full`) is one
    line on stderr and exit 1."""
    if isinstance(code, str):  # SystemExit("message"), as Python reports it
        print(code, file=sys.stderr)
        code = 1
    code = 0 if code is None else int(code)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _to_devnull(sys.stdout)
    except OSError as exc:
        code = _cannot_write(exc)
    except (ValueError, AttributeError):  # a closed or absent stream
        pass
    try:
        sys.stderr.flush()
    except OSError:
        _to_devnull(sys.stderr)
        code = code or 1
    except (ValueError, AttributeError):
        pass
    return code


def _cannot_write(exc: OSError) -> int:
    """An OSError no command turned into a MintDim error (the console's output that cannot be written,
    most likely): one line on stderr; the output's unwritten rest goes nowhere (else the interpreter's
    last flush fails again, with a traceback)."""
    _to_devnull(sys.stdout)
    try:
        print(f"mintdim: {exc}", file=sys.stderr, flush=True)
    except (OSError, ValueError, AttributeError):
        _to_devnull(sys.stderr)
    return 1


def _to_devnull(stream) -> None:
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, stream.fileno())
        os.close(fd)
    except (OSError, ValueError, AttributeError):
        pass


if __name__ == "__main__":
    console()

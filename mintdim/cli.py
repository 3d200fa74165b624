"""The `mintdim` command. Subcommands live in mintdim/commands/, one module each.

Exit codes: 0 success, 1 build or validation error (one clear message), 2 usage error.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from . import __version__
from . import errors as E
from .commands import COMMANDS


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mintdim", description="MintDim: low-padding fixed-width token shards from JSONL datasets.",
        epilog="Exit codes: 0 ok, 1 build or validation error, 2 usage error.")
    parser.add_argument("--version", action="version", version=f"mintdim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f".commands.{name}", __package__).register(sub)
    return parser


def main(argv=None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return args.func(args)
    except E.MintDimError as err:
        print(str(err), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

"""`mintdim` subcommands, one module each. Each module has `register(subparsers)`.

To add a command: write mintdim/commands/<name>.py with a `register` that adds
its parser and sets `func`, and list the module in COMMANDS. A command that can fail with a
MintDim error gives its parser `lang_option` (the CLI renders the error in that language).
"""

COMMANDS = ["build", "suggest_units", "inspect", "verify", "export", "tokenizer", "workflow_path"]


def lang_option(parser, help_text: str = "language of error messages: en, vi or both (default en)") -> None:
    """`--lang`: the language the CLI renders this command's error in (mintdim/cli.py)."""
    from ..errors import LANGS

    parser.add_argument("--lang", choices=LANGS, default=None, help=help_text)

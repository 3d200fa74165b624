"""`mintdim` subcommands, one module each. Each module has `register(subparsers)`.

To add a command: write mintdim/commands/<name>.py with a `register` that adds
its parser and sets `func`, and list the module in COMMANDS.
"""

COMMANDS = ["build", "suggest_units", "inspect", "verify", "tokenizer", "workflow_path"]

"""The error catalogue's texts: for each error class (by its spec name), its messages as entries (key ->
Msg: fields, English, Vietnamese, base). mintdim/errors.py renders them; a new message is one entry.

One module per area: config (the config check), data (inputs and records), tokenizer, mapping (lists
per file, templates), output (units, the output, what the plan counts), run (the run, the tools). Each
defines MESSAGES = {class name: {key: Msg}}.
"""

from mintdim.catalogue import (
    config,
    data,
    mapping,
    output,
    run,
    tokenizer,
)
from mintdim.catalogue.entry import Both, Msg

__all__ = ["MESSAGES", "Both", "Msg"]

MESSAGES: dict = {}
for _module in (
    config,
    mapping,
    output,
    run,
    data,
    tokenizer,
):
    for _cls, _entries in _module.MESSAGES.items():
        MESSAGES.setdefault(_cls, {}).update(_entries)

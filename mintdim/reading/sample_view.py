"""`mintdim inspect OUT --sample ID`: one sample's text, with its trained tokens shown.

Runs of consecutive tokens are decoded together by the build's own tokenizer,
so the text reads naturally; trained runs are coloured on a terminal and put
in ⟦ ⟧ brackets otherwise, so a person can check a loss mask by eye.
"""

from __future__ import annotations

import os

import numpy as np

from .. import errors as E
from ..tokenizers.kinds import load
from .reader import open as open_dataset

GREEN, DIM, RESET = "\033[1;32m", "\033[2m", "\033[0m"


def _decoder(kind: str, path: str, options: dict | None = None):
    tok = load(kind, path, **(options or {}))
    if kind in ("hf_json", "hf_dir"):
        return lambda ids: tok.tok.decode(list(map(int, ids)), skip_special_tokens=False)
    if kind == "sentencepiece":
        return lambda ids: tok.sp.decode(list(map(int, ids)))
    return lambda ids: tok.decode(list(map(int, ids)))


def runs(mask: np.ndarray) -> list[tuple[int, int, bool]]:
    """[start, end, trained] runs of equal mask values."""
    if not len(mask):
        return []
    edges = np.flatnonzero(np.diff(mask.astype(np.int8))) + 1
    starts = np.concatenate(([0], edges))
    ends = np.concatenate((edges, [len(mask)]))
    return [(int(a), int(b), bool(mask[a])) for a, b in zip(starts, ends)]


def render_sample(
    out_dir: str, sample_id: int, tokenizer: str | None = None, color: bool | None = None
) -> str:
    ds = open_dataset(out_dir)
    tok_meta = ds.manifest["tokenizer"]
    path = tokenizer or tok_meta["path"]
    if not os.path.exists(path):
        raise E.MintDimFileNotFoundError.make("tokenizer", f"{path} (give --tokenizer PATH)")
    decode = _decoder(tok_meta["type"], path, ds.manifest.get("tokenizer_options"))
    try:
        ids = np.asarray(ds.tokens(sample_id))
    except ValueError as exc:  # dropped for its length (units.overflow: drop): no token is stored
        return f"sample {sample_id}: {exc}; no token of it is stored"
    mask = ds.loss_mask(sample_id) if ds.has_loss_mask else np.zeros(len(ids), dtype=bool)
    size, shard, row = ds.locate(sample_id)
    color = color if color is not None else False
    head = (
        f"sample {sample_id}: {len(ids)} tokens in unit {size} ({os.path.relpath(shard, out_dir)} row {row})"
        + (f", {int(mask.sum())} trained" if ds.has_loss_mask else ", no loss mask in this build")
    )
    parts = []
    for a, b, trained in runs(mask):
        text = decode(ids[a:b])
        if trained:
            parts.append(f"{GREEN}{text}{RESET}" if color else f"⟦{text}⟧")
        else:
            parts.append(f"{DIM}{text}{RESET}" if color and ds.has_loss_mask else text)
    if "chat" in ds.manifest:  # source.chat: the conversation's roles, read from its source line
        head += "\n" + _roles_line(ds, sample_id)
    legend = ("trained tokens in green" if color else "trained tokens inside ⟦ ⟧") if ds.has_loss_mask else ""
    return "\n".join(
        x for x in (head, legend, "", "".join(parts) if parts else "(no tokens)") if x is not None
    )


def _roles_line(ds, sample_id: int) -> str:
    """`roles: system, user, assistant*` (* trained) from the sample's source line, rendered again
    with the build's chat options; the source path as declared, from the current directory."""
    cols, manifest = ds.sample_columns, ds.manifest
    path, number = cols.file_names[int(cols.source_file[sample_id])], int(cols.source_line[sample_id])
    files = manifest["source"]["files"]
    chat = manifest["chat"]["source"][files.index(path)] if path in files else None
    from ..sources import inputs

    if chat is None or not inputs.exists(path):
        return f"roles: (source {path} not found from this directory)"
    from ..errors import MintDimError
    from ..sources import chat as C

    train_on = manifest["chat"]["train_on"][files.index(path)]
    where = "row" if inputs.kind_of(path) != inputs.JSONL else "line"
    try:  # the sample's record: its line of a JSONL file, its row of a Parquet file or datasets directory
        obj = next((record for at, record in inputs.records(path, path, (), chat) if at == number), None)
        messages, _, flags = C.read_messages(chat, obj or {})
    except (C._Failure, MintDimError):
        return f"roles: ({where} {number} of {path} is no longer a conversation)"
    trained = (
        set(C.choose(chat, frozenset(train_on or ()), messages, flags)) if train_on is not None else set()
    )
    roles = ", ".join(m["role"] + ("*" if i in trained else "") for i, m in enumerate(messages))
    return f"roles: {roles}" + (" (* trained)" if trained else "") + f"; from {path} {where} {number}"

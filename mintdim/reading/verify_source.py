"""`mintdim verify --source`: the source files read again (any input kind), every sample re-rendered
and re-hashed against sample_index.jsonl (under source.take: the samples its take and seed choose),
and a sample of the samples (or all) re-encoded with the tokenizer and compared with what the
shards hold. A record skipped_index.jsonl lists (source.on_bad_record: skip) must still be one that
cannot become a sample, and holds no sample id. Both layouts call `check_source` (verify.py,
verify_packed.py)."""

from __future__ import annotations

import hashlib
import os
import random

from ..formats import output as fmt
from ..formats import shards as fs
from .verify_common import Index, Report, is_int


def check_source(
    out,
    manifest,
    idx: Index,
    per_unit,
    sizes,
    sps,
    dtype,
    report: Report,
    all_samples: bool,
    sample: int,
    root: str | None,
    seed: int,
    packed=None,
) -> None:
    """packed (units.pack): (locate(i) -> (shard path, row in shard, offset) or None, encoded counts)."""
    report.source_checked = True
    root = root or os.getcwd()
    n = len(idx.tc)
    if all_samples:
        chosen = set(range(n))
    else:
        rng = random.Random(seed)
        chosen = set(rng.sample(range(n), min(n, sample))) if n else set()
    texts = _source_texts(manifest, idx, report, chosen, root)
    _encode_again(out, manifest, idx, per_unit, sizes, sps, dtype, report, texts, root, packed)


def _source_texts(manifest, idx: Index, report: Report, chosen: set, root: str) -> dict[int, str]:
    """Read every source file again (any input kind), render and hash each sample, compare it with the
    index; returns the rendered texts of the `chosen` samples. A file under source.take: its samples
    are also the ones its take and seed choose (mintdim/sources/take.py), with their repeats."""
    import numpy as np

    from ..sources import inputs
    from ..sources import template as T

    src = manifest.get("source") or {}
    files, fields, templates = src.get("files") or [], src.get("fields") or [], src.get("templates") or []
    takes = {t.get("file"): t for t in (manifest.get("take") or {}).get("files", []) if isinstance(t, dict)}
    texts: dict[int, str] = {}
    n = len(idx.tc)
    sid = 0
    for fi, decl in enumerate(files):
        path = decl if os.path.isabs(decl) else os.path.join(root, decl)
        if not inputs.exists(path):
            report.add(decl, f"source file not found (looked for {path})")
            sid = int(np.searchsorted(idx.file, fi, side="right")) if len(idx.file) else sid
            continue
        names = fields[fi] if fi < len(fields) else []
        chat = ((manifest.get("chat") or {}).get("source") or [None] * (fi + 1))[fi]
        try:
            tpl = _chat_template(manifest, chat, root, decl) if chat is not None else T.parse(templates[fi])
        except (IndexError, T.TemplateSyntaxError):
            report.add("manifest.json", f"no valid template for source file {decl}")
            continue
        except Exception as exc:  # source.chat: the tokenizer directory or its template
            report.add(
                "manifest.json", f"cannot render the conversations of {decl}: {str(exc).splitlines()[0]}"
            )
            continue
        rendered = _rendered(path, decl, names, chat, tpl, idx, fi, sid, chosen, report)
        if decl in takes:
            sid = _check_taken(
                rendered,
                decl,
                fi,
                takes[decl],
                (manifest.get("take") or {}).get("seed"),
                idx,
                sid,
                chosen,
                texts,
                report,
            )
        else:
            sid = _check_whole(rendered, decl, fi, idx, sid, chosen, texts, report)
    if sid < n:
        report.add("sample_index.jsonl", f"{n - sid} samples more than the source files hold ({sid})", sid)
    return texts


def _rendered(path, decl, names, chat, tpl, idx: Index, fi: int, sid: int, chosen: set, report: Report):
    """(line, digest, text) of every sample of one source, in order: digest None for one that is no
    longer valid (reported), text only where the index's chosen samples of this file need it."""
    from .. import errors as E
    from ..sources import inputs, jsonl

    wanted = {int(idx.line[i]) for i in chosen if idx.file[i] == fi}
    skipped = idx.skipped.get(fi, set())  # source.on_bad_record: skip
    try:
        reader = inputs.open_whole(path, decl, names, chat)
        for local, raw in reader:
            line = reader.location(local)
            try:
                obj = jsonl.declared_values(reader.parse(raw, line), names, decl, line)
                text = tpl.render(obj)
                digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
            except (E.MintDimError, UnicodeEncodeError) as err:
                if int(line) in skipped:  # a bad record the build left out: no sample
                    continue
                report.add(decl, f"{_where(line)} is no longer a valid sample: {str(err).splitlines()[0]}")
                yield line, None, None
                continue
            if int(line) in skipped:
                report.add(decl, f"{_where(line)} is listed in {fmt.SKIPPED_INDEX} but renders as a sample")
                continue
            yield line, digest, text if int(line) in wanted else None
    except E.MintDimError as err:
        report.add(decl, f"cannot be read: {str(err).splitlines()[0]}")


def _check_whole(rendered, decl, fi: int, idx: Index, sid: int, chosen, texts, report: Report) -> int:
    """A source without take: its samples are the index's next ones, one each, in order."""
    n = len(idx.tc)
    for line, digest, text in rendered:
        if digest is None or sid >= n:
            if digest is not None:
                report.add(decl, f"{_where(line)} has no sample in sample_index.jsonl")
            sid += 1
            continue
        if _compare(idx, sid, fi, decl, line, 0, digest, report) and sid in chosen:
            texts[sid] = text
        sid += 1
    return sid


def _where(line) -> str:
    """A source place in words: "line 7" (JSONL) or "row 7" (Parquet, datasets)."""
    from ..errors import Row

    return f"row {line}" if isinstance(line, Row) else f"line {line}"


def _compare(
    idx: Index,
    sid: int,
    fi: int,
    decl: str,
    line: int,
    repeat: int,
    digest: str,
    report: Report,
    why: str = "the source files give",
) -> bool:
    """Does index sample `sid` come from this source place and text? Else a problem is reported."""
    if idx.file[sid] != fi or idx.line[sid] != line or idx.repeat[sid] != repeat:
        got = f"{idx.file_name(sid)}:{int(idx.line[sid])}" + (
            f" repeat {int(idx.repeat[sid])}" if repeat else ""
        )
        report.add(
            "sample_index.jsonl",
            f"source is {got}, {why} {decl}:{line}" + (f" repeat {repeat}" if repeat else ""),
            sid,
        )
        return False
    if idx.hashes[sid] != digest:
        report.add("sample_index.jsonl", f"hash differs from the rendered text of {decl}:{line}", sid)
        return False
    return True


def _check_taken(
    rendered, decl, fi: int, entry: dict, seed, idx: Index, sid: int, chosen, texts, report: Report
) -> int:
    """A source under source.take: the samples its take and seed choose, from the samples it holds now."""
    from ..sources import take as TK

    samples = list(rendered)  # (line, digest, text): 32 bytes and a line number per sample
    available = len(samples)
    value, index = entry.get("take"), entry.get("file_index")
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not is_int(index)
        or not is_int(seed)
    ):
        report.add("manifest.json", f"take of {decl}: take, file_index and seed are not numbers: {entry}")
        return sid
    want = TK.summary(decl, index, value, available)
    if entry != want:
        report.add("manifest.json", f"take of {decl} is {entry}, the source gives {want}")
    positions, repeats = TK.select(value, available, seed, index)
    n = len(idx.tc)
    for p, r in zip(positions.tolist(), repeats.tolist()):
        line, digest, text = samples[p]
        if sid >= n:
            report.add(
                decl, f"{_where(line)} repeat {r} (chosen by its take) has no sample in sample_index.jsonl"
            )
        elif digest is not None:
            if (
                _compare(
                    idx, sid, fi, decl, line, r, digest, report, f"the take of {decl} (seed {seed}) chooses"
                )
                and sid in chosen
            ):
                texts[sid] = text
        sid += 1
    return sid


def _encode_again(
    out, manifest, idx: Index, per_unit, sizes, sps, dtype, report: Report, texts: dict, root: str, packed
) -> None:
    """The chosen samples' texts encoded again with the tokenizer, compared with their shard records."""
    import numpy as np

    tok = _manifest_tokenizer(manifest, root, report)
    if tok is None:
        return
    if packed is None:

        def locate(i):  # (shard, row in it, first slot, record width) of a stored sample; None: dropped
            if idx.status[i] in (1, 3):  # dropped (units.overflow, source.drop_untrained)
                return None
            unit = int(idx.unit[i])
            rank = int(np.searchsorted(per_unit[unit], i))  # its place among its unit's samples
            return fs.shard_path(unit, rank // sps), rank % sps, 0, unit

        # a cut sample: the encoder gives its whole length
        counts = np.where(idx.status > 0, idx.source_tc, idx.tc)
    else:

        def locate(i):
            place = packed[0](i)
            return None if place is None else (*place, sizes[0])

        counts = packed[1]
    _compare_encoded(out, tok, texts, idx, locate, counts, dtype, report)


def _manifest_tokenizer(manifest: dict, root: str, report: Report):
    """The manifest's tokenizer, loaded from `root`, its ids
    checked against the manifest; None: unloadable."""
    from ..tokenizers.kinds import load

    tok_cfg = manifest.get("tokenizer") or {}
    tpath = tok_cfg.get("path", "")
    tpath = tpath if os.path.isabs(tpath) else os.path.join(root, tpath)
    try:
        tok = load(tok_cfg.get("type"), tpath, **(manifest.get("tokenizer_options") or {}))
    except Exception as exc:  # the library's own words
        report.add(
            "manifest.json",
            f"tokenizer {tok_cfg.get('path')!r} cannot be loaded from {tpath}: "
            f"{str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__}",
        )
        return None
    for key, value in (("vocab_size", tok.vocab_size), ("unk_id", tok.unk_id), ("pad_id", tok.pad_id)):
        if tok_cfg.get(key) != value:
            report.add(
                "manifest.json", f"tokenizer {key} is {tok_cfg.get(key)!r}, the tokenizer file says {value!r}"
            )
    return tok


def _compare_encoded(out, tok, texts: dict, idx: Index, locate, counts, dtype, report: Report) -> None:
    """Each chosen sample re-encoded: the encoder's count is counts[i] (its whole length), and the record
    where locate(i) puts it (None: dropped) holds the first token_count of its tokens."""
    import numpy as np

    ids = sorted(texts)
    shards: dict[str, np.ndarray] = {}
    for lo in range(0, len(ids), 1024):
        batch = ids[lo : lo + 1024]
        flat, lengths = tok.encode_batch([texts[i] for i in batch])
        ends = np.cumsum(lengths)
        for j, i in enumerate(batch):
            tokens = flat[ends[j] - lengths[j] : ends[j]]
            report.encoded += 1
            want = int(counts[i])
            if len(tokens) != want:
                key = "token_count" if want == idx.tc[i] else "source_token_count"
                report.add("sample_index.jsonl", f"{key} {want}, the tokenizer gives {len(tokens)}", i)
                continue
            place = locate(i)
            if place is None:  # dropped: nothing stored to compare
                continue
            rel, row, offset, width = place
            tokens = tokens[: int(idx.tc[i])].astype(dtype)
            if rel not in shards:
                try:
                    shards[rel] = np.memmap(os.path.join(out, rel), dtype=dtype, mode="r").reshape(-1, width)
                except (OSError, ValueError):
                    shards[rel] = np.zeros((0, width), dtype=dtype)
            if row >= len(shards[rel]):
                continue  # a missing or short shard is reported already
            stored = shards[rel][row, offset : offset + len(tokens)]
            if not np.array_equal(stored, tokens):
                where = offset + int(np.flatnonzero(stored != tokens)[0])
                report.add(
                    rel,
                    f"row {row}: tokens differ from the tokenizer's encode of the source "
                    f"(first at slot {where})",
                    i,
                )


def _chat_template(manifest: dict, chat: dict, root: str, decl: str):
    """source.chat: the build's renderer (its tokenizer directory's chat template) for one file."""
    from ..sources.chat import ChatRenderer
    from ..tokenizers.kinds import load

    tok_cfg = manifest.get("tokenizer") or {}
    tpath = tok_cfg.get("path", "")
    opts = dict(manifest.get("tokenizer_options") or {})
    if opts.get("chat_template") and not os.path.isabs(opts["chat_template"]):
        opts["chat_template"] = os.path.join(root, opts["chat_template"])
    tok = load("hf_dir", tpath if os.path.isabs(tpath) else os.path.join(root, tpath), **opts)
    return ChatRenderer(
        tok.chat_template, tok.special_tokens, chat, None, (), tok.tool_chat_template
    ).as_template(decl)

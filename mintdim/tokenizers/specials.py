"""`mintdim tokenizer add-specials IN OUT [--pad TOKEN] [--unk TOKEN]`: expose a missing PAD or UNK id.

Most real tokenizers lack one (Mistral's SentencePiece models have no pad;
Llama 3 and DeepSeek tokenizer.json files have no unk), and MintDim refuses
them (TokenizerSpecialTokenError). This writes a NEW tokenizer file that
appends the missing tokens at the end of the vocabulary: IN is never touched,
and no existing id changes.

- SentencePiece `.model`: the ModelProto (sentencepiece_model_pb2, needs
  protobuf) gains a CONTROL piece, and `trainer_spec.pad_piece` / `unk_piece`
  name it, which is where `pad_id()` / `unk_id()` look. Control pieces are never
  matched in text, so every text encodes as before. (A SentencePiece model
  always has an unk piece: only --pad applies.)
- Hugging Face `tokenizer.json`: a special added token; PAD becomes the padding
  settings' pad token, UNK the model's unk_token (BPE / WordPiece / WordLevel,
  and a Unigram model's unk_id when the new id is the next model id). Like every
  added special token it is matched in text (DECISIONS: the text `<pad>` then
  encodes as the pad id); choose a string your data does not hold.
- unitoken model directory: the token is appended to vocab.json and to the
  special tokens of ffbpe.json (the copy's files; the model's own are untouched).

Before writing, the new tokenizer is loaded and checked: the same ids for every
existing token, the same ids on a probe text (and `check_texts`), and MintDim's
UNK/PAD found where expected.
"""

from __future__ import annotations

import json
import os
import tempfile

from .. import errors as E

DEFAULTS = {"pad": "<pad>", "unk": "<unk>"}
PROBE_TEXT = (
    "MintDim packs samples into fixed-width units: 128, 192, 256 tokens.\n"
    "  Indented line\twith a tab, symbols {}[]()<>!?#$%&*+-=/\\|~^`@ and numbers 3.14159, 1e-9.\n"
    "Tiếng Việt có dấu: Thư viện tokenizer. 中文：分词器。 日本語のテキスト。 Ünïcödé — “quotes” 🙂\n\n"
)


TokenizerToolError = E.TokenizerToolError  # importable from here as before


def refuse_existing(out_path: str) -> None:
    if os.path.exists(out_path) and not (os.path.isdir(out_path) and not os.listdir(out_path)):
        raise TokenizerToolError.exists(out_path)


def kind_of(path: str) -> str:
    from .unitoken import is_model_dir

    if os.path.isdir(path):
        if is_model_dir(path):
            return "unitoken"
    elif path.endswith(".model"):
        return "sentencepiece"
    elif path.endswith(".json"):
        return "hf_json"
    else:  # by content (e.g. Mistral's tokenizer.model.v1)
        with open(path, "rb") as f:
            head = f.read(64)
        if head.lstrip().startswith(b"{"):
            return "hf_json"
        if head[:1] == b"\x0a":  # ModelProto: field 1 (pieces), length-delimited
            return "sentencepiece"
    raise TokenizerToolError.unknown_kind(path)


def _wanted(tok, pad: str | None, unk: str | None) -> dict[str, str]:
    """{"pad": token, "unk": token} to add: the flags given, else whatever is missing (default names)."""
    present = {"pad": tok.pad_id, "unk": tok.unk_id}
    asked = {k: v for k, v in (("pad", pad), ("unk", unk)) if v is not None}
    if not asked:
        asked = {k: DEFAULTS[k] for k, v in present.items() if v is None}
        if not asked:
            raise TokenizerToolError.nothing_to_add(present["unk"], present["pad"])
    for k, token in asked.items():
        if present[k] is not None:
            raise TokenizerToolError.already_has(k, present[k])
        if not isinstance(token, str) or not token:
            raise TokenizerToolError.empty_token(k)
    if len(set(asked.values())) != len(asked):
        raise TokenizerToolError.same_tokens()
    return asked


# --- SentencePiece ------------------------------------------------------------------------------------------


def _sentencepiece(src: str, wanted: dict[str, str]) -> tuple[bytes, dict[str, int]]:
    try:
        from sentencepiece import sentencepiece_model_pb2 as pb
    except ImportError as exc:  # protobuf missing
        raise TokenizerToolError.needs_protobuf(exc) from None
    model = pb.ModelProto()
    with open(src, "rb") as f:
        model.ParseFromString(f.read())
    pieces = {p.piece: i for i, p in enumerate(model.pieces)}
    added = {}
    for k, token in wanted.items():
        if k == "unk":
            raise TokenizerToolError.sentencepiece_unk()
        if token in pieces:
            raise TokenizerToolError.taken(token, pieces[token])
        piece = model.pieces.add()
        piece.piece = token
        piece.score = 0.0
        piece.type = pb.ModelProto.SentencePiece.CONTROL
        added[k] = len(model.pieces) - 1
        model.trainer_spec.pad_piece = token
        model.trainer_spec.pad_id = added[k]
    return model.SerializeToString(), added


# --- tokenizer.json -----------------------------------------------------------------------------------------


def _hf_json(src: str, wanted: dict[str, str]) -> tuple[bytes, dict[str, int]]:
    from tokenizers import AddedToken, Tokenizer

    tok = Tokenizer.from_file(src)
    vocab = tok.get_vocab(with_added_tokens=True)
    added = {}
    for k, token in wanted.items():
        if token in vocab:
            raise TokenizerToolError.taken(token, vocab[token])
        tok.add_special_tokens([AddedToken(token, special=True, normalized=False)])
        new_id = tok.token_to_id(token)
        if new_id is None or new_id <= max(vocab.values()):  # appended after every existing id
            raise TokenizerToolError.not_appended(token)
        added[k] = new_id
    if "pad" in added:
        padding = tok.padding
        tok.enable_padding(
            pad_id=added["pad"], pad_token=wanted["pad"], direction=(padding or {}).get("direction", "right")
        )
    data = json.loads(tok.to_str())
    if "unk" in added:
        model = data["model"]
        kind = model.get("type")
        if kind in ("BPE", "WordPiece", "WordLevel"):
            model["unk_token"] = wanted["unk"]
            # into the model's vocab too only when it is the next model id: a hole there would shift the
            # ids of the added tokens when the file is loaded (Llama 3: 128000 model ids + 257 added)
            if isinstance(model.get("vocab"), dict) and len(model["vocab"]) == added["unk"]:
                model["vocab"][wanted["unk"]] = added["unk"]
        elif kind == "Unigram" and len(model.get("vocab", [])) == added["unk"]:
            low = min((score for _, score in model["vocab"]), default=0.0)
            model["vocab"].append([wanted["unk"], low - 10.0])
            model["unk_id"] = added["unk"]
        else:
            raise TokenizerToolError.no_unk_slot(kind)
    return json.dumps(data, ensure_ascii=False).encode("utf-8"), added


# --- unitoken model directory -------------------------------------------------------------------------------


def _unitoken(src: str, staging: str, wanted: dict[str, str]) -> dict[str, int]:
    from .unitoken import CONFIG_FILE, copy_model, read_config

    config = read_config(src)
    copy_model(src, staging)
    vocab_path = os.path.join(staging, config["vocab_file"])
    with open(vocab_path, encoding="utf-8") as f:
        vocab = json.load(f)
    added = {}
    next_id = max(vocab.values()) + 1
    for k, token in wanted.items():
        if token in vocab:
            raise TokenizerToolError.taken(token, vocab[token])
        if not all("!" <= ch <= "~" for ch in token):
            raise TokenizerToolError.unitoken_token()
        vocab[token] = added[k] = next_id
        next_id += 1
        config["special_tokens"].append(token)
    with open(vocab_path, "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False, indent=2)
    for name in os.listdir(staging):  # the legacy name, if the source used it, is replaced by ffbpe.json
        if name.endswith(".json") and name not in (CONFIG_FILE, config["vocab_file"]):
            os.unlink(os.path.join(staging, name))
    with open(os.path.join(staging, CONFIG_FILE), "w", encoding="utf-8") as f:
        json.dump(config, f, ensure_ascii=False, indent=2)
        f.write("\n")
    return added


# --- the command --------------------------------------------------------------------------------------------


def _vocab_of(kind: str, tok) -> dict:
    if kind == "sentencepiece":
        return {tok.sp.id_to_piece(i): i for i in range(tok.vocab_size)}
    if kind == "hf_json":
        return tok.tok.get_vocab(with_added_tokens=True)
    with open(os.path.join(tok.path, tok.config["vocab_file"]), encoding="utf-8") as f:
        return json.load(f)


def add_specials(src: str, dst: str, pad: str | None = None, unk: str | None = None, check_texts=()) -> dict:
    """Write dst: src plus the missing special tokens. Returns what was added and checked."""
    from .kinds import load

    if not os.path.exists(src):
        raise E.MintDimFileNotFoundError.make("tokenizer", src)
    kind = kind_of(src)
    if os.path.abspath(src) == os.path.abspath(dst):
        raise TokenizerToolError.same_path()
    refuse_existing(dst)
    ext = {"sentencepiece": ".model", "hf_json": ".json"}.get(kind)
    if ext and not dst.endswith(ext):
        raise TokenizerToolError.out_extension(ext, kind)
    old = load(kind, src)
    wanted = _wanted(old, pad, unk)
    parent = os.path.dirname(os.path.abspath(dst))
    os.makedirs(parent, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".mintdim-specials-", dir=parent) as tmp:
        staged = os.path.join(tmp, os.path.basename(dst.rstrip("/")) or "out")
        if kind == "unitoken":
            added = _unitoken(src, staged, wanted)
        else:
            data, added = (_sentencepiece if kind == "sentencepiece" else _hf_json)(src, wanted)
            with open(staged, "wb") as f:
                f.write(data)
        new = load(kind, staged)
        _check(kind, old, new, added, [PROBE_TEXT, *check_texts])
        refuse_existing(dst)
        if os.path.isdir(dst):
            os.rmdir(dst)
        os.replace(staged, dst)
    return {
        "kind": kind,
        "added": {f"{k}_id": v for k, v in added.items()},
        "tokens": {f"{k}_id": wanted[k] for k in added},
        "vocab_size": [old.vocab_size, new.vocab_size],
        "unk_id": new.unk_id,
        "pad_id": new.pad_id,
        "checked_texts": 1 + len(check_texts),
    }


def _check(kind: str, old, new, added: dict[str, int], texts: list[str]) -> None:
    for k, new_id in added.items():
        if getattr(new, f"{k}_id") != new_id:
            raise TokenizerToolError.not_exposed(k, new_id)
    old_vocab, new_vocab = _vocab_of(kind, old), _vocab_of(kind, new)
    changed = [t for t, i in old_vocab.items() if new_vocab.get(t) != i]
    if changed:
        raise TokenizerToolError.ids_change(len(changed), changed[0])
    if new.vocab_size != old.vocab_size + len(added):
        raise TokenizerToolError.vocab_growth()
    texts = [t for t in texts if not any(tok in t for tok in _added_strings(kind, new, added))]
    try:
        same = old.encode_ids(texts) == new.encode_ids(texts)
    except Exception as exc:  # the library refuses to encode with the new file
        same = False
        texts = [f"{type(exc).__name__}: {exc}"]
    if not same:
        raise TokenizerToolError.encodes_differently()


def _added_strings(kind: str, new, added: dict[str, int]) -> list[str]:
    """Texts that hold an added token string encode differently by design (HF and unitoken match them)."""
    if kind == "sentencepiece":
        return []
    vocab = {i: t for t, i in _vocab_of(kind, new).items()}
    return [vocab[i] for i in added.values() if i in vocab]


def read_check_texts(path: str, limit: int = 2000) -> list[str]:
    """Texts for a check: JSONL (every string value of each line, joined) or plain text (each line)."""
    texts = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if len(texts) >= limit:
                break
            line = line.rstrip("\n")
            if not line.strip():
                continue
            if path.endswith(".jsonl"):
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if isinstance(obj, dict):
                    line = "\n".join(v for v in obj.values() if isinstance(v, str))
            texts.append(line)
    return texts

"""The `hf_dir` tokenizer kind: a model's tokenizer directory, read the way `transformers` reads it.

The directory holds `tokenizer.json` (the encoder: the same `tokenizers` library call as the
`hf_json` kind) and `tokenizer_config.json` (the named special tokens, as plain strings or
`{"__type": "AddedToken", "content": ...}` objects, and the chat template), optionally
`special_tokens_map.json` (read, as transformers 5 does, only when the config carries no
`added_tokens_decoder`) and `chat_template.jinja` (preferred to the config's template).

PAD is the config's `pad_token`, or the `pad_token` the MintDim config names, which must be an
existing token (never a new id). UNK is the config's `unk_token`. A tokenizer that can encode
every string (byte-level BPE with the whole byte alphabet, or byte fallback with all 256 byte
pieces) needs no UNK: `unk_id` is None and pre-flight accepts that (DECISIONS.md, "Beyond the
spec"). The in-file padding and truncation of tokenizer.json are switched off, as for hf_json.
"""

from __future__ import annotations

import json
import os

from .engines import bytes_to_unicode
from .library import HFJsonTokenizer

TOKENIZER_FILE = "tokenizer.json"
CONFIG_FILE = "tokenizer_config.json"
SPECIAL_MAP_FILE = "special_tokens_map.json"
TEMPLATE_FILE = "chat_template.jinja"
FILES = (TOKENIZER_FILE, CONFIG_FILE, SPECIAL_MAP_FILE, TEMPLATE_FILE)
# transformers 5 (tokenization_utils_base.SPECIAL_TOKENS_ATTRIBUTES): the named special tokens
# every chat template receives as variables when they are set
NAMED = ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token")


def model_files(path: str) -> list[str]:
    """The files whose content defines the tokenizer (for change detection)."""
    return [os.path.join(path, name) for name in FILES]


def _read_json(path: str) -> dict:
    if not os.path.isfile(path):
        return {}
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return data if isinstance(data, dict) else {}


def token_text(value) -> str | None:
    """A special token as transformers stores it: a string, or an AddedToken object (its content)."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and isinstance(value.get("content"), str):
        return value["content"]
    return None


def read_special_tokens(config: dict, special_map: dict) -> dict[str, str]:
    """The template variables transformers 5 passes as `special_tokens_map`: the named tokens that
    are set, plus model-specific `*_token` keys of the config (e.g. `image_token`)."""
    values = dict(config)
    if "added_tokens_decoder" not in config:  # legacy directories: special_tokens_map.json fills in
        for key, value in special_map.items():
            values[key] = value
    out: dict[str, str] = {}
    for key in NAMED:
        text = token_text(values.get(key))
        if text is not None:
            out[key] = text
    for key, value in values.items():
        if key in out or key in NAMED or not key.endswith("_token"):
            continue
        if isinstance(value, str) or (isinstance(value, dict) and value.get("__type") == "AddedToken"):
            out[key] = token_text(value)
    extra = values.get("extra_special_tokens")
    if isinstance(extra, dict):
        for key, value in extra.items():
            if token_text(value) is not None:
                out.setdefault(key, token_text(value))
    return out


def read_chat_template(
    path: str, config: dict, override: str | None = None, tools: bool = False
) -> str | None:
    """The template transformers would use: a named file (override), chat_template.jinja beside
    the tokenizer (named ones in additional_chat_templates/), or the config's chat_template (a
    string, or named templates). Of named templates: "tool_use" when the record passes tools and
    the directory has one, else "default" (transformers' get_chat_template)."""
    if override:
        with open(override, encoding="utf-8") as f:
            return f.read()
    named: dict = {}
    beside = os.path.join(path, TEMPLATE_FILE)
    if os.path.isfile(beside):
        with open(beside, encoding="utf-8") as f:
            named["default"] = f.read()
        extra = os.path.join(path, "additional_chat_templates")
        for name in sorted(os.listdir(extra)) if os.path.isdir(extra) else ():
            if name.endswith(".jinja"):
                with open(os.path.join(extra, name), encoding="utf-8") as f:
                    named[name[: -len(".jinja")]] = f.read()
    else:
        value = config.get("chat_template")
        if isinstance(value, list):
            value = {item.get("name"): item.get("template") for item in value if isinstance(item, dict)}
        named = value if isinstance(value, dict) else {"default": value}
    value = named.get("tool_use") if tools and "tool_use" in named else named.get("default")
    return value if isinstance(value, str) else None


def _has_byte_level(node) -> bool:
    if not isinstance(node, dict):
        return False
    if node.get("type") == "ByteLevel":
        return True
    return any(_has_byte_level(child) for child in node.get("pretokenizers") or [])


def encodes_every_string(spec: dict) -> bool:
    """True when no text can produce an UNK: a BPE whose ByteLevel pre-tokenizer maps every byte to
    a character of its alphabet and whose vocabulary holds all 256 of them, or a model with
    byte_fallback and all 256 `<0xXX>` pieces."""
    model = spec.get("model") or {}
    vocab = model.get("vocab")
    if isinstance(vocab, list):  # Unigram: [[piece, score], ...]
        pieces = {item[0] for item in vocab if item}
    elif isinstance(vocab, dict):
        pieces = set(vocab)
    else:
        return False
    if model.get("byte_fallback") and all(f"<0x{b:02X}>" in pieces for b in range(256)):
        return True
    return (
        model.get("type") == "BPE"
        and _has_byte_level(spec.get("pre_tokenizer"))
        and all(ch in pieces for ch in bytes_to_unicode().values())
    )


class HFDirTokenizer(HFJsonTokenizer):
    kind = "hf_dir"

    def __init__(
        self,
        path: str,
        threads: int = 1,
        pad_token: str | None = None,
        chat_template: str | None = None,
        engine: str | None = None,
        engine_cache: str | None = None,
    ):
        super().__init__(
            os.path.join(os.fspath(path), TOKENIZER_FILE),
            threads=threads,
            engine=engine,
            engine_cache=engine_cache,
        )
        self.dir = os.fspath(path)
        self.config = _read_json(os.path.join(self.dir, CONFIG_FILE))
        special_map = _read_json(os.path.join(self.dir, SPECIAL_MAP_FILE))
        self.special_tokens = read_special_tokens(self.config, special_map)
        self.chat_template_path = chat_template
        self.declared_pad = pad_token  # the MintDim config's pad_token (must name an existing token)
        self.pad_token = pad_token if pad_token is not None else self.special_tokens.get("pad_token")
        self._every = None

    # PAD and UNK ids on demand (pre-flight asks; a tokenize job on the fast engine takes them from
    # pre-flight's record and so does not load the library for them: ~0.5 s per job, Qwen3/Llama-3)
    @property
    def pad_id(self) -> int | None:
        return self.tok.token_to_id(self.pad_token) if self.pad_token is not None else None

    @property
    def unk_id(self) -> int | None:
        unk = self.special_tokens.get("unk_token")
        return self.tok.token_to_id(unk) if unk is not None else None

    @property
    def chat_template(self) -> str | None:
        return read_chat_template(self.dir, self.config, self.chat_template_path)

    @property
    def tool_chat_template(self) -> str | None:
        """The template for records that pass tools (a directory's "tool_use" template, if any)."""
        return read_chat_template(self.dir, self.config, self.chat_template_path, tools=True)

    @property
    def encodes_every_string(self) -> bool:
        if self._every is None:
            with open(os.path.join(self.dir, TOKENIZER_FILE), "rb") as f:
                import orjson

                self._every = encodes_every_string(orjson.loads(f.read()))
        return self._every

    def pad_candidates(self, limit: int = 6) -> tuple[list[str], int]:
        """Existing special tokens a user could pad with: names holding "pad" first, then reserved
        (unused) tokens, then end-of-text markers, then the rest, in id order (at most `limit`
        shown), and how many there are. Padding is never trained or attended, so any token works;
        an unused one keeps the shards easy to read."""
        decoder = self.tok.get_added_tokens_decoder()
        names = [decoder[i].content for i in sorted(decoder) if decoder[i].special]

        def rank(name: str) -> int:
            low = name.lower()
            if "pad" in low:
                return 0
            if "reserved" in low or "unused" in low:
                return 1
            return 2 if "end_of_text" in low or "endoftext" in low else 3

        ranked = sorted(dict.fromkeys(names), key=rank)  # stable: id order within a rank
        shown, per_rank = [], {}
        for name in ranked:  # at most two of a kind, so 250 reserved tokens do not hide the rest
            if len(shown) < limit and per_rank.get(rank(name), 0) < 2:
                shown.append(name)
                per_rank[rank(name)] = per_rank.get(rank(name), 0) + 1
        return shown, len(ranked)

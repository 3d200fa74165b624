"""Export a byte-unit ffbpe model (a unitoken kind directory) to a Hugging Face tokenizer.json.

The tokenizer.json holds the same vocabulary and merges (ffbpe's ` => freq`
suffixes stripped), the byte-level pre-tokenizer and decoder, `<unk>` and
`<pad>` as special added tokens with their ids, the BPE model's unk_token, and
padding settings naming `<pad>`: MintDim's hf_json kind reads the same UNK and
PAD ids from it. Byte-level models trained with the byte-level alphabet and
counted with `PreTokenizer([])` (what `train_bpe` and `mintdim tokenizer train`
do) encode to identical ids; the export checks this on a probe text (and on
`check_texts`) before it writes anything. Unicode-unit models have no
tokenizer.json equivalent and are refused.
"""

from __future__ import annotations

import json
import os

from .. import errors as E
from .specials import PROBE_TEXT, TokenizerToolError, refuse_existing
from .unitoken import PAD_TOKEN, UNK_TOKEN, NotAModelDirectory, read_config


def read_merges(path: str) -> list[tuple[str, str]]:
    merges = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#version"):
                continue
            if " => " in line:
                line = line.rsplit(" => ", 1)[0]
            parts = line.split(" ")
            if len(parts) != 2:
                raise TokenizerToolError.merges_line(path, line[:80])
            merges.append((parts[0], parts[1]))
    return merges


def build_hf(model_dir: str):
    """The Hugging Face Tokenizer equivalent to a byte-unit ffbpe model directory."""
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers

    try:
        config = read_config(model_dir)
    except NotAModelDirectory as exc:
        raise TokenizerToolError.not_model_dir(model_dir, exc) from None
    if config["unit"] != "byte" or config["format"] != "gpt2":
        raise TokenizerToolError.not_byte_unit(model_dir, config["unit"])
    if config.get("unicode_bigrams"):
        raise TokenizerToolError.unicode_bigrams(model_dir)
    with open(os.path.join(model_dir, config["vocab_file"]), encoding="utf-8") as f:
        vocab = json.load(f)
    merges = read_merges(os.path.join(model_dir, config["merges_file"]))
    specials = list(config["special_tokens"])
    unk = UNK_TOKEN if UNK_TOKEN in specials else None
    tok = Tokenizer(
        models.BPE(vocab=vocab, merges=merges, unk_token=unk, fuse_unk=False, byte_fallback=False)
    )
    if config.get("pat_str"):
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(config["pat_str"]), behavior="isolated"),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    else:  # ffbpe's default pattern is GPT-2's, as ByteLevel's
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([AddedToken(s, special=True, normalized=False) for s in specials])
    for s in specials:
        if tok.token_to_id(s) != vocab.get(s):
            raise TokenizerToolError.special_moved(s)
    if PAD_TOKEN in specials:
        tok.enable_padding(pad_id=vocab[PAD_TOKEN], pad_token=PAD_TOKEN)
    return tok


def export(model_dir: str, out_path: str, check_texts=()) -> dict:
    """Write `out_path` (never overwritten) after checking identical ids on a probe text and check_texts."""
    from tokenizers import Tokenizer

    from .unitoken import UnitokenTokenizer

    if not os.path.exists(model_dir):
        raise E.MintDimFileNotFoundError.make("tokenizer", model_dir)
    refuse_existing(out_path)
    hf = build_hf(model_dir)
    ff = UnitokenTokenizer(model_dir)
    texts = [PROBE_TEXT, *check_texts]
    reloaded = Tokenizer.from_str(hf.to_str())
    reloaded.no_padding()
    got = [e.ids for e in reloaded.encode_batch(texts, add_special_tokens=False)]
    want = ff.encode_ids(texts)
    for i, (a, b) in enumerate(zip(got, want)):
        if a != b:
            raise TokenizerToolError.export_differs(i)
    os.makedirs(os.path.dirname(os.path.abspath(out_path)), exist_ok=True)
    tmp = out_path + ".partial"
    hf.save(tmp)
    os.replace(tmp, out_path)
    return {
        "vocab_size": hf.get_vocab_size(with_added_tokens=True),
        "unk_id": ff.unk_id,
        "pad_id": ff.pad_id,
        "checked_texts": len(texts),
        "checked_tokens": sum(map(len, want)),
    }

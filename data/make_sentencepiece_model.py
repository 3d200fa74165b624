#!/usr/bin/env python3
"""Train the small SentencePiece model shipped in data/tokenizers/ (used by tests and examples).

A unigram model on the GSM8K test questions and answers, with an UNK (id 0)
and a PAD (id 1) so it satisfies MintDim's contract. No byte fallback:
characters unseen in training (e.g. CJK) encode to UNK, which the tests use.
Deterministic for a given sentencepiece version.

    python data/make_sentencepiece_model.py
"""

import io
import json
import os

import sentencepiece as spm

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    texts = []
    with open(os.path.join(HERE, "gsm8k", "test.jsonl"), encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            texts += [row["question"], row["answer"]]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(texts),
        model_writer=model,
        vocab_size=2000,
        model_type="unigram",
        unk_id=0,
        pad_id=1,
        bos_id=2,
        eos_id=3,
        character_coverage=1.0,
        byte_fallback=False,
        num_threads=1,
        minloglevel=2,
        remove_extra_whitespaces=False,
    )
    out = os.path.join(HERE, "tokenizers", "gsm8k-unigram-2k.model")
    with open(out, "wb") as f:
        f.write(model.getvalue())
    print(f"wrote {out} ({len(model.getvalue())} bytes)")


if __name__ == "__main__":
    main()

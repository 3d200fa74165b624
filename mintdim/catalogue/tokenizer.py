"""The tokenizer's messages: the tokenizer block of the config (mintdim/config.py), pre-flight's loading
(mintdim/stages/preflight.py), train_bpe (mintdim/tokenizers/training.py), special tokens."""

from mintdim.catalogue.entry import Msg

MESSAGES = {
    # what a directory kind's directory holds (dir_holds_<kind>), for every class that says so
    "MintDimError": {
        "dir_holds_hf_dir": Msg(
            "",
            "A tokenizer directory (hf_dir) holds tokenizer.json and tokenizer_config.json "
            "(special_tokens_map.json, chat_template.jinja too when the model has them): what transformers' "
            "save_pretrained writes.",
            "Thư mục tokenizer (hf_dir) gồm tokenizer.json và tokenizer_config.json (thêm "
            "special_tokens_map.json, chat_template.jinja nếu model có): những file mà save_pretrained của "
            "transformers ghi ra.",
        ),
        "dir_holds_unitoken": Msg(
            "",
            "A unitoken model directory holds ffbpe.json, vocab.json and merges.txt: what ffbpe's "
            "save_pretrained writes.",
            "Thư mục model unitoken gồm ffbpe.json, vocab.json và merges.txt: những file mà save_pretrained "
            "của ffbpe ghi ra.",
        ),
    },
}

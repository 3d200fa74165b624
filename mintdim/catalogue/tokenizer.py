"""The tokenizer's messages: the tokenizer block of the config (mintdim/config.py), pre-flight's loading
(mintdim/stages/preflight.py), train_bpe (mintdim/tokenizers/training.py), special tokens."""

from mintdim.catalogue.entry import Both, Msg

TRAIN_MIN_VOCAB = 258  # 256 bytes + <unk> + <pad>: the schema's minimum of train_bpe.vocab_size

# The rules a TokenizerValidationError lists: each component reports only its own (the spec); `config`
# is the spec's list. A train_bpe component "train_bpe.<key>" reports that key's rule, "train_bpe" (the
# whole item) all of them.
TRAIN_RULES = Both(
    [
        "train_bpe config must be a dict with keys: vocab_size, out (unit, hot_pair_window_size optional)",
        f"vocab_size is an int >= {TRAIN_MIN_VOCAB} (256 bytes + <unk> + <pad>)",
        "unit is byte or unicode (default byte)",
        "out is a directory path: new, empty, or a model MintDim trained from the same files and options",
        "hot_pair_window_size is a positive int (bounds trainer memory, same result)",
    ],
    [
        "config train_bpe phải là dict có key: vocab_size, out (unit, hot_pair_window_size tuỳ chọn)",
        f"vocab_size là số nguyên >= {TRAIN_MIN_VOCAB} (256 byte + <unk> + <pad>)",
        "unit là byte hoặc unicode (mặc định byte)",
        "out là đường dẫn thư mục: mới, rỗng, hoặc model MintDim đã train từ cùng file và tuỳ chọn",
        "hot_pair_window_size là số nguyên dương (giới hạn bộ nhớ trainer, cùng kết quả)",
    ],
)
RULES = {
    "config": Both(
        [
            "config must be a dict with key: path",
            "path must be a string",
            "unk_id and pad_id are loaded from the tokenizer library",
        ],
        [
            "config phải là dict có key: path",
            "path phải là string",
            "unk_id và pad_id được lấy từ thư viện tokenizer",
        ],
    ),
    "path": Both(
        [
            "path must be a string",
            "path names the tokenizer: a .model file (sentencepiece), a .json file (hf_json), a model "
            "directory (unitoken, hf_dir)",
        ],
        [
            "path phải là string",
            "path chỉ tới tokenizer: file .model (sentencepiece), file .json (hf_json), thư mục model "
            "(unitoken, hf_dir)",
        ],
    ),
    "pad_token": Both(
        [
            "pad_token (hf_dir, optional) is a string naming an existing token of the directory: it "
            "becomes pad_id (no new id is added)",
            "pad_token is the same wherever one tokenizer directory is used",
        ],
        [
            "pad_token (hf_dir, tuỳ chọn) là string tên một token có sẵn của thư mục: nó thành pad_id "
            "(không thêm id mới)",
            "pad_token giống nhau ở mọi nơi dùng cùng một thư mục tokenizer",
        ],
    ),
    "chat_template": Both(
        [
            "chat_template (hf_dir, optional) is the path (string) of a Jinja chat template file, "
            "used instead of the directory's own"
        ],
        [
            "chat_template (hf_dir, tuỳ chọn) là đường dẫn (string) tới file chat template Jinja, "
            "dùng thay cho template của thư mục"
        ],
    ),
    "kind": Both(
        [
            "kind: exactly one of sentencepiece, hf_json, unitoken, train_bpe, hf_dir",
            "kind hf_dir (a model's tokenizer directory) for source.chat: its chat template renders the "
            "conversations",
        ],
        [
            "kind: đúng một trong sentencepiece, hf_json, unitoken, train_bpe, hf_dir",
            "kind hf_dir (thư mục tokenizer của model) cho source.chat: chat template của nó render hội "
            "thoại",
        ],
    ),
    "train_bpe": TRAIN_RULES,
}
for _key in ("vocab_size", "unit", "out", "hot_pair_window_size"):
    RULES[f"train_bpe.{_key}"] = Both(
        *([r for r in rules if r.startswith(_key + " ")] for rules in TRAIN_RULES)
    )

# a tokenizer MintDim cannot read: its problem after the supported formats (English, then Vietnamese)
_UNSUPPORTED = (
    "Unsupported tokenizer format.\n\nSupported formats:\n\n"
    "• sentencepiece (.model)\n• huggingface tokenizer (.json)\n\n",
    "\n\nAlso supported: unitoken (a model directory saved by ffbpe: ffbpe.json, vocab.json, "
    "merges.txt), train_bpe (trains one from the data), and hf_dir (a model's tokenizer directory: "
    "tokenizer.json + tokenizer_config.json).",
    "Định dạng tokenizer chưa được hỗ trợ.\n\nCác định dạng hiện hỗ trợ:\n\n"
    "• sentencepiece (.model)\n• huggingface tokenizer (.json)\n\n",
    "\n\nCũng được hỗ trợ: unitoken (thư mục model do ffbpe lưu: ffbpe.json, vocab.json, "
    "merges.txt), train_bpe (train từ dữ liệu), và hf_dir (thư mục tokenizer của model: "
    "tokenizer.json + tokenizer_config.json).",
)

# a directory tokenizer kind, as messages name it
DIR_NAMES = {
    "hf_dir": Both("a tokenizer directory", "thư mục tokenizer"),
    "unitoken": Both("a unitoken model directory", "thư mục model unitoken"),
}

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
    # The config check's problems (mintdim/config.py, mintdim/tokenizers/training.py): each names as its
    # base the component at fault ("config", "path", "train_bpe.out", ...; an entry based on "config"
    # may give `component` as a field), whose RULES the text `config` lists.
    "TokenizerValidationError": {
        "config": Msg(
            "problem component",
            "Invalid tokenizer config.\n\nComponent: {component}\n\nProblem: {problem}\n\n"
            "Rules:\n\n{rules:bullets}",
            "Cấu hình tokenizer không hợp lệ.\n\nThành phần: {component}\n\nVấn đề: {problem}\n\n"
            "Quy tắc:\n\n{rules:bullets}",
        ),
        "unknown_keys": Msg(
            "keys",
            "tokenizer config has unknown keys: {keys!r}. unk_id and pad_id are loaded from the tokenizer "
            "library.",
            "config tokenizer có key không hợp lệ: {keys!r}. unk_id và pad_id được lấy từ thư viện "
            "tokenizer.",
            base="config",
        ),
        "not_mapping": Msg(
            "got",
            "tokenizer must be a mapping with one key (sentencepiece or hf_json), got {got}",
            "tokenizer phải là mapping có một key (sentencepiece hoặc hf_json), hiện tại là {got}",
            base="config",
        ),
        "kinds": Msg(
            "kinds",
            "declare exactly one tokenizer kind, got {kinds!r}",
            "chỉ khai báo đúng một loại tokenizer, hiện tại là {kinds!r}",
            base="config",
        ),
        "item_not_dict": Msg(
            "got",
            "tokenizer config must be a dict with key: path, got {got}",
            "config tokenizer phải là dict có key: path, hiện tại là {got}",
            base="config",
        ),
        "missing_path": Msg(
            "", "tokenizer config is missing key: path", "config tokenizer thiếu key: path", base="config"
        ),
        "path_not_string": Msg(
            "got", "path must be a string, got {got}", "path phải là string, hiện tại là {got}", base="path"
        ),
        "path_empty": Msg(
            "",
            "path must be a non-empty string, got an empty string",
            "path phải là string không rỗng, hiện tại là string rỗng",
            base="path",
        ),
        # tokenizer.train_bpe: its own rules
        "train_not_dict": Msg(
            "got",
            "train_bpe config must be a dict, got {got}",
            "config train_bpe phải là dict, hiện tại là {got}",
            base="train_bpe",
        ),
        "train_unknown_keys": Msg(
            "keys",
            "train_bpe config has unknown keys: {keys!r}",
            "config train_bpe có key không hợp lệ: {keys!r}",
            base="train_bpe",
        ),
        "train_missing_keys": Msg(
            "keys",
            "train_bpe config is missing keys: {keys!r}",
            "config train_bpe thiếu key: {keys!r}",
            base="train_bpe",
        ),
        "train_vocab_size": Msg(
            "got",
            f"vocab_size must be an int >= {TRAIN_MIN_VOCAB}, got {{got!r}}",
            f"vocab_size phải là số nguyên >= {TRAIN_MIN_VOCAB}, hiện tại là {{got!r}}",
            base="train_bpe.vocab_size",
        ),
        "train_unit": Msg(
            "got",
            "unit must be byte or unicode, got {got!r}",
            "unit phải là byte hoặc unicode, hiện tại là {got!r}",
            base="train_bpe.unit",
        ),
        "train_out": Msg(
            "got",
            "out must be a non-empty path (string), got {got!r}",
            "out phải là đường dẫn (string) không rỗng, hiện tại là {got!r}",
            base="train_bpe.out",
        ),
        "train_window": Msg(
            "got",
            "hot_pair_window_size must be a positive int, got {got!r}",
            "hot_pair_window_size phải là số nguyên dương, hiện tại là {got!r}",
            base="train_bpe.hot_pair_window_size",
        ),
        "train_options_differ": Msg(
            "first second out",
            "files {first} and {second} train the same out {out} with different options",
            "file {first} và {second} train cùng out {out} với tuỳ chọn khác nhau",
            base="train_bpe.out",
        ),
        # train_out_overlaps(out, other, what): `out` inside or around an output directory (what=output)
        # or the work directory (what=work)
        "train_out_overlaps": Msg(
            "out other",
            "out {out} overlaps the output directory {other}",
            "out {out} trùng với thư mục output {other}",
            base="train_bpe.out",
        ),
        "train_out_overlaps_work": Msg(
            "out other",
            "out {out} overlaps the work directory {other}",
            "out {out} trùng với thư mục làm việc {other}",
            base="train_bpe.out",
        ),
        "train_out_is_input": Msg(
            "out", "out {out} is an input file", "out {out} là file đầu vào", base="train_bpe.out"
        ),
        # tokenizer.hf_dir's options (component: the option), and source.chat's tokenizer
        "option_not_string": Msg(
            "component got",
            "{component} must be a non-empty string, got {got!r}",
            "{component} phải là string không rỗng, hiện tại là {got!r}",
            base="config",
        ),
        "two_pad_tokens": Msg(
            "path",
            "tokenizer {path} is declared with two pad_token values",
            "tokenizer {path} được khai báo với hai giá trị pad_token",
            base="pad_token",
        ),
        "chat_needs_hf_dir": Msg(
            "kind",
            "source.chat renders conversations with the model's chat template: use the hf_dir "
            "tokenizer kind (a tokenizer directory), not {kind}",
            "source.chat render hội thoại bằng chat template của model: dùng loại tokenizer hf_dir "
            "(thư mục tokenizer), không phải {kind}",
            base="kind",
        ),
        # dir_expected(): a directory kind (hf_dir, unitoken) declared with a file's path; the fix
        # (dir_fix) names its directory when that holds the kind's files, else (dir_fix@missing) says what
        # it lacks and, for hf_dir given a .json file (json_file), the hf_json kind that reads it alone
        "dir_expected": Msg(
            "kind path",
            "{kind} expects a tokenizer directory, but path {path} is a file",
            "{kind} cần một thư mục tokenizer, nhưng path {path} là một file",
            base="path",
        ),
        "dir_fix": Msg(
            "kind parent",
            "\n\nFix: name its directory: tokenizer: {{{kind}: {{path: {parent}}}}}",
            "\n\nCách sửa: chỉ định thư mục chứa nó: tokenizer: {{{kind}: {{path: {parent}}}}}",
        ),
        "dir_fix@missing": Msg(
            "parent what missing holds json_file path",
            "\n\n{parent} is not {what}: it has no {missing}. {holds}{json_file:?use_hf_json}",
            "\n\n{parent} không phải {what}: không có {missing}. {holds}{json_file:?use_hf_json}",
        ),
        "use_hf_json": Msg(
            "path",
            "\n\nFix: a tokenizer.json file alone is read by kind hf_json: "
            "tokenizer: {{hf_json: {{path: {path}}}}}",
            "\n\nCách sửa: một file tokenizer.json riêng lẻ được đọc bằng loại hf_json: "
            "tokenizer: {{hf_json: {{path: {path}}}}}",
        ),
        # a tokenizer MintDim cannot read: its problem after the supported formats
        "unsupported": Msg(
            "problem",
            _UNSUPPORTED[0] + "{problem}" + _UNSUPPORTED[1],
            _UNSUPPORTED[2] + "{problem}" + _UNSUPPORTED[3],
        ),
        # an unknown kind (the schema), then the closest known kind if one is close (hint: mintdim/schema.py)
        "unknown_kind": Msg(
            "kind hint",
            _UNSUPPORTED[0] + "Declared kind: {kind}" + _UNSUPPORTED[1] + "{hint}",
            _UNSUPPORTED[2] + "Loại đã khai báo: {kind}" + _UNSUPPORTED[3] + "{hint}",
        ),
        # pre-flight: the tokenizer library could not read the file (its own words in `reason`)
        "unloadable": Msg(
            "kind path reason",
            "The file could not be loaded as {kind}: {path} ({reason})",
            "Không tải được file dạng {kind}: {path} ({reason})",
            base="unsupported",
        ),
        # extension (mintdim/config.py): a file kind's path without its extension; then, for a directory,
        # that a file is expected, and for hf_json given a directory (hf_dir), the hf_dir kind (or, json_file,
        # its tokenizer.json alone)
        "extension": Msg(
            "kind path directory hf_dir json_file dir",
            _UNSUPPORTED[0]
            + "Declared: {kind} with path {path}"
            + _UNSUPPORTED[1]
            + "{directory:?extension_directory}"
            "{hf_dir:?use_hf_dir}{json_file:?or_tokenizer_json}",
            _UNSUPPORTED[2]
            + "Đã khai báo: {kind} với path {path}"
            + _UNSUPPORTED[3]
            + "{directory:?extension_directory}"
            "{hf_dir:?use_hf_dir}{json_file:?or_tokenizer_json}",
        ),
        "extension_directory": Msg(
            "kind path",
            "\n\n{path} is a directory: {kind} takes a file.",
            "\n\n{path} là một thư mục: {kind} cần một file.",
        ),
        "use_hf_dir": Msg(
            "path",
            " Fix: a model's tokenizer directory is read by kind hf_dir: "
            "tokenizer: {{hf_dir: {{path: {path}}}}}",
            " Cách sửa: thư mục tokenizer của model được đọc bằng loại hf_dir: "
            "tokenizer: {{hf_dir: {{path: {path}}}}}",
        ),
        "or_tokenizer_json": Msg(
            "dir",
            "; or its tokenizer.json alone: tokenizer: {{hf_json: {{path: {dir}/tokenizer.json}}}}",
            "; hoặc chỉ file tokenizer.json của nó: tokenizer: {{hf_json: {{path: {dir}/tokenizer.json}}}}",
        ),
    },
    "TokenizerSpecialTokenError": {
        # make(token, path): then the tokenizer, if known, and the command that writes a usable copy
        # (`shown`: the tokenizer or IN, `root` + `ext` its name; `name`: pad or unk)
        "make": Msg(
            "token path shown root name ext",
            "Tokenizer library did not expose a required special token.\n\nSpecial token: {token}"
            "{path:?tokenizer}\n\nFix: write a copy that appends the missing token (existing ids unchanged): "
            "mintdim tokenizer add-specials {shown} {root}-with-{name}{ext} --{name} '<{name}>'",
            "Thư viện tokenizer không cung cấp special token bắt buộc.\n\nSpecial token: {token}"
            "{path:?tokenizer}\n\nCách sửa: tạo bản sao có thêm token còn thiếu (id hiện có không đổi): "
            "mintdim tokenizer add-specials {shown} {root}-with-{name}{ext} --{name} '<{name}>'",
        ),
        "tokenizer": Msg("path", "\n\nTokenizer: {path}", "\n\nTokenizer: {path}"),
        # hf_dir: the directory declares no pad_token (Llama-3.1), or the config's pad_token is no token;
        # `shown`: the special tokens it could pad with (`more`: how many more it has, if any)
        "dir_pad": Msg(
            "path problem shown more example",
            "Tokenizer library did not expose a required special token.\n\nSpecial token: pad_id\n\n"
            "Tokenizer: {path}\n\nProblem: {problem}\n\nExisting special tokens it could pad with: "
            "{shown}{more:?more_tokens}\n\nFix: name one in the tokenizer block: hf_dir: {{path: {path}, "
            "pad_token: {example:json}}}",
            "Thư viện tokenizer không cung cấp special token bắt buộc.\n\nSpecial token: pad_id\n\n"
            "Tokenizer: {path}\n\nVấn đề: {problem}\n\nCác special token hiện có có thể dùng để pad: "
            "{shown}{more:?more_tokens}\n\nCách sửa: chỉ định một token trong khối tokenizer: hf_dir: "
            "{{path: {path}, pad_token: {example:json}}}",
        ),
        "pad_not_a_token": Msg(
            "declared",
            "pad_token {declared:json} is not a token of this tokenizer (no new id is added)",
            "pad_token {declared:json} không phải token của tokenizer này (không thêm id mới)",
        ),
        "no_pad_token": Msg(
            "",
            "the directory declares no pad_token (tokenizer_config.json, special_tokens_map.json)",
            "thư mục không khai báo pad_token (tokenizer_config.json, special_tokens_map.json)",
        ),
        "no_tokens": Msg("", "none", "không có"),
        "more_tokens": Msg("more", " (and {more} more)", " (và {more} token khác)"),
    },
}

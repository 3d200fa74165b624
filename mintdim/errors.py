"""Every MintDim error, with the spec's English and Vietnamese texts.

An error carries both texts; `lang` (en | vi | both) only chooses what is
printed. `str(err)` is the text in the error's own language setting, headed
by the class name exactly as the spec prints it. `to_dict()`/`from_dict()`
carry an error across a process boundary (stage job -> runner) unchanged.
"""

from __future__ import annotations

import json

LANGS = ("en", "vi", "both")


def _bullets(items) -> str:
    return "\n".join(f"• {item}" for item in items)


def _quoted(text: str) -> str:
    """A template or path shown as the spec shows it: in double quotes, with \\n escapes."""
    return json.dumps(text, ensure_ascii=False)


class MintDimError(Exception):
    """Base class. Subclasses build `en` and `vi` bodies (without the class name)."""

    def __init__(self, en: str, vi: str, *, lang: str = "en", file: str | None = None, line: int | None = None):
        self.en = en
        self.vi = vi
        self.lang = lang if lang in LANGS else "en"
        self.file = file
        self.line = line
        super().__init__(self.render(self.lang))

    @property
    def kind(self) -> str:
        return type(self).__name__

    def render(self, lang: str = "en") -> str:
        en = f"{self.kind}: {self.en}"
        vi = f"{self.kind}: {self.vi}"
        if lang == "vi":
            return vi
        if lang == "both":
            return f"[english] {en}\n\n[vietnam] {vi}"
        return en

    def with_lang(self, lang: str) -> "MintDimError":
        self.lang = lang if lang in LANGS else "en"
        self.args = (self.render(self.lang),)
        return self

    def __str__(self) -> str:
        return self.render(self.lang)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "en": self.en, "vi": self.vi, "file": self.file, "line": self.line}

    @staticmethod
    def from_dict(data: dict, lang: str = "en") -> "MintDimError":
        cls = ERROR_CLASSES.get(data.get("kind"), MintDimError)
        err = cls.__new__(cls)
        MintDimError.__init__(err, data["en"], data["vi"], lang=lang, file=data.get("file"), line=data.get("line"))
        return err


# --- configuration ---------------------------------------------------------


class PipelineValidationError(MintDimError):
    @classmethod
    def missing(cls, keys: list[str], **kw):
        return cls(
            f"Pipeline configuration is incomplete.\n\nMissing:\n\n{_bullets(keys)}",
            f"Pipeline chưa được cấu hình đầy đủ.\n\nThiếu:\n\n{_bullets(keys)}",
            **kw,
        )

    @classmethod
    def invalid(cls, en_problem: str, vi_problem: str, **kw):
        return cls(
            f"Invalid pipeline configuration.\n\nProblem: {en_problem}",
            f"Cấu hình pipeline không hợp lệ.\n\nVấn đề: {vi_problem}",
            **kw,
        )

    # the config check's problems (mintdim/config.py)
    @classmethod
    def lang(cls, got, **kw):
        return cls.invalid(f"lang must be one of en, vi, both, got {got!r}",
                           f"lang phải là en, vi hoặc both, hiện tại là {got!r}", **kw)

    @classmethod
    def unknown_keys(cls, keys: list[str], block: str | None = None, **kw):
        if block is None:
            return cls.invalid(f"unknown config keys: {keys!r}", f"key cấu hình không hợp lệ: {keys!r}", **kw)
        return cls.invalid(f"unknown keys in {block}: {keys!r}", f"key không hợp lệ trong {block}: {keys!r}", **kw)

    @classmethod
    def files(cls, **kw):
        return cls.invalid("source.files must be a list of file paths (strings)",
                           "source.files phải là list đường dẫn file (string)", **kw)

    @classmethod
    def work_dir(cls, **kw):
        return cls.invalid("work_dir must be a non-empty path (string)",
                           "work_dir phải là đường dẫn (string) không rỗng", **kw)

    @classmethod
    def chunk_mb(cls, got, **kw):
        return cls.invalid(f"chunk_mb must be a positive number, got {got!r}",
                           f"chunk_mb phải là số dương, hiện tại là {got!r}", **kw)

    @classmethod
    def unknown_pipeline(cls, name: str, supported: list[str], **kw):
        return cls.invalid(f"unknown pipeline {name!r}; supported: {', '.join(supported)}",
                           f"pipeline {name!r} không tồn tại; hỗ trợ: {', '.join(supported)}", **kw)


class MintDimFileNotFoundError(MintDimError):
    @classmethod
    def make(cls, context: str, path: str, **kw):
        return cls(
            f"Required file was not found.\n\nContext: {context}\n\nMissing file: {path}",
            f"Không tìm thấy file cần dùng.\n\nContext: {context}\n\nFile thiếu: {path}",
            **kw,
        )


class SourceParseError(MintDimError):
    REASONS = {
        "json": ("invalid JSON syntax", "JSON không hợp lệ"),
        "utf8": ("invalid UTF-8", "UTF-8 không hợp lệ"),
        "object": ("line is not a JSON object", "dòng không phải JSON object"),
        "surrogate": ("a declared field holds a lone surrogate escape (not encodable as UTF-8)",
                      "một field đã khai báo chứa surrogate đơn lẻ (không mã hoá được UTF-8)"),
        "compressed": ("the compressed file could not be decompressed", "không giải nén được file"),
        "unreadable": ("the file could not be read", "không đọc được file"),
    }

    @classmethod
    def make(cls, path: str, line: int, reason: str = "json", **kw):
        en_reason, vi_reason = cls.REASONS[reason]
        return cls(
            f"JSONL line could not be parsed.\n\nFile: {path}\n\nLine: {line}\n\nReason: {en_reason}",
            f"Không đọc được dòng JSONL.\n\nFile: {path}\n\nDòng: {line}\n\nLý do: {vi_reason}",
            file=path, line=line, **kw,
        )


class SampleSchemaError(MintDimError):
    @classmethod
    def missing(cls, path: str, line: int, declared: list[str], missing: list[str], available: list[str], **kw):
        d, m, a = " ".join(declared), " ".join(missing), " ".join(available)
        return cls(
            f"JSONL sample is missing declared fields.\n\nFile: {path}\n\nLine: {line}\n\n"
            f"Declared fields: {d}\n\nMissing fields: {m}\n\nAvailable keys: {a}",
            f"Sample JSONL thiếu fields đã khai báo.\n\nFile: {path}\n\nDòng: {line}\n\n"
            f"Fields đã khai báo: {d}\n\nFields bị thiếu: {m}\n\nKeys hiện có: {a}",
            file=path, line=line, **kw,
        )

    @classmethod
    def not_string(cls, path: str, line: int, field: str, found: str, **kw):
        return cls(
            f"JSONL sample field is not a string.\n\nFile: {path}\n\nLine: {line}\n\n"
            f"Field: {field}\n\nFound JSON type: {found}",
            f"Field của sample JSONL không phải string.\n\nFile: {path}\n\nDòng: {line}\n\n"
            f"Field: {field}\n\nKiểu JSON hiện có: {found}",
            file=path, line=line, **kw,
        )


# --- tokenizer -------------------------------------------------------------

_TOK_RULES_EN = [
    "config must be a dict with key: path",
    "path must be a string",
    "unk_id and pad_id are loaded from the tokenizer library",
]
_TOK_RULES_VI = [
    "config phải là dict có key: path",
    "path phải là string",
    "unk_id và pad_id được lấy từ thư viện tokenizer",
]
TRAIN_MIN_VOCAB = 258  # 256 bytes + <unk> + <pad> (mintdim/training.py)
TRAIN_RULES_EN = [
    "train_bpe config must be a dict with keys: vocab_size, out (unit, hot_pair_window_size optional)",
    f"vocab_size is an int >= {TRAIN_MIN_VOCAB} (256 bytes + <unk> + <pad>)",
    "unit is byte or unicode (default byte)",
    "out is a directory path: new, empty, or a model MintDim trained from the same files and options",
    "hot_pair_window_size is a positive int (bounds trainer memory, same result)"]
TRAIN_RULES_VI = [
    "config train_bpe phải là dict có key: vocab_size, out (unit, hot_pair_window_size tuỳ chọn)",
    f"vocab_size là số nguyên >= {TRAIN_MIN_VOCAB} (256 byte + <unk> + <pad>)",
    "unit là byte hoặc unicode (mặc định byte)",
    "out là đường dẫn thư mục: mới, rỗng, hoặc model MintDim đã train từ cùng file và tuỳ chọn",
    "hot_pair_window_size là số nguyên dương (giới hạn bộ nhớ trainer, cùng kết quả)"]


class TokenizerValidationError(MintDimError):
    @classmethod
    def config(cls, en_problem: str, vi_problem: str, component: str = "config", rules_en=None, rules_vi=None,
               **kw):
        # rules_en/rules_vi: the rules of a config other than {path} (tokenizer.train_bpe)
        return cls(
            f"Invalid tokenizer config.\n\nComponent: {component}\n\nProblem: {en_problem}\n\n"
            f"Rules:\n\n{_bullets(rules_en or _TOK_RULES_EN)}",
            f"Cấu hình tokenizer không hợp lệ.\n\nThành phần: {component}\n\nVấn đề: {vi_problem}\n\n"
            f"Quy tắc:\n\n{_bullets(rules_vi or _TOK_RULES_VI)}",
            **kw,
        )

    @classmethod
    def unknown_keys(cls, keys: list[str], **kw):
        return cls.config(
            f"tokenizer config has unknown keys: {keys!r}. unk_id and pad_id are loaded from the tokenizer library.",
            f"config tokenizer có key không hợp lệ: {keys!r}. unk_id và pad_id được lấy từ thư viện tokenizer.",
            **kw,
        )

    @classmethod
    def unsupported(cls, detail_en: str | None = None, detail_vi: str | None = None, **kw):
        en = ("Unsupported tokenizer format.\n\nSupported formats:\n\n"
              "• sentencepiece (.model)\n• huggingface tokenizer (.json)")
        vi = ("Định dạng tokenizer chưa được hỗ trợ.\n\nCác định dạng hiện hỗ trợ:\n\n"
              "• sentencepiece (.model)\n• huggingface tokenizer (.json)")
        if detail_en:
            en += f"\n\n{detail_en}"
            vi += f"\n\n{detail_vi or detail_en}"
        en += ("\n\nAlso supported: unitoken (a model directory saved by ffbpe: ffbpe.json, vocab.json, "
               "merges.txt), and train_bpe (trains one from the data).")
        vi += ("\n\nCũng được hỗ trợ: unitoken (thư mục model do ffbpe lưu: ffbpe.json, vocab.json, "
               "merges.txt), và train_bpe (train từ dữ liệu).")
        return cls(en, vi, **kw)

    # the config check's problems (mintdim/config.py): the block, then one {path} item
    @classmethod
    def not_mapping(cls, got: str, **kw):
        return cls.config(f"tokenizer must be a mapping with one key (sentencepiece or hf_json), got {got}",
                          f"tokenizer phải là mapping có một key (sentencepiece hoặc hf_json), hiện tại là {got}", **kw)

    @classmethod
    def kinds(cls, kinds: list[str], **kw):
        return cls.config(f"declare exactly one tokenizer kind, got {kinds!r}",
                          f"chỉ khai báo đúng một loại tokenizer, hiện tại là {kinds!r}", **kw)

    @classmethod
    def unknown_kind(cls, kind: str, **kw):
        return cls.unsupported(f"Declared kind: {kind}", f"Loại đã khai báo: {kind}", **kw)

    @classmethod
    def extension(cls, kind: str, path: str, **kw):
        return cls.unsupported(f"Declared: {kind} with path {path}", f"Đã khai báo: {kind} với path {path}", **kw)

    @classmethod
    def unloadable(cls, kind: str, path: str, reason: str, **kw):
        """Pre-flight: the tokenizer library could not read the file (its own words in `reason`)."""
        return cls.unsupported(f"The file could not be loaded as {kind}: {path} ({reason})",
                               f"Không tải được file dạng {kind}: {path} ({reason})", **kw)

    @classmethod
    def item_not_dict(cls, got: str, **kw):
        return cls.config(f"tokenizer config must be a dict with key: path, got {got}",
                          f"config tokenizer phải là dict có key: path, hiện tại là {got}", **kw)

    @classmethod
    def missing_path(cls, **kw):
        return cls.config("tokenizer config is missing key: path", "config tokenizer thiếu key: path", **kw)

    @classmethod
    def path_not_string(cls, got: str, **kw):
        return cls.config(f"path must be a string, got {got}", f"path phải là string, hiện tại là {got}",
                          component="path", **kw)

    @classmethod
    def path_empty(cls, **kw):
        return cls.config("path must be a non-empty string, got an empty string",
                          "path phải là string không rỗng, hiện tại là string rỗng", component="path", **kw)

    # tokenizer.train_bpe (mintdim/training.py): its own rules
    @classmethod
    def train(cls, en_problem: str, vi_problem: str, component: str = "train_bpe", **kw):
        return cls.config(en_problem, vi_problem, component=component, rules_en=TRAIN_RULES_EN,
                          rules_vi=TRAIN_RULES_VI, **kw)

    @classmethod
    def train_not_dict(cls, got: str, **kw):
        return cls.train(f"train_bpe config must be a dict, got {got}",
                         f"config train_bpe phải là dict, hiện tại là {got}", **kw)

    @classmethod
    def train_unknown_keys(cls, keys: list[str], **kw):
        return cls.train(f"train_bpe config has unknown keys: {keys!r}",
                         f"config train_bpe có key không hợp lệ: {keys!r}", **kw)

    @classmethod
    def train_missing_keys(cls, keys: list[str], **kw):
        return cls.train(f"train_bpe config is missing keys: {keys!r}", f"config train_bpe thiếu key: {keys!r}", **kw)

    @classmethod
    def train_vocab_size(cls, got, **kw):
        return cls.train(f"vocab_size must be an int >= {TRAIN_MIN_VOCAB}, got {got!r}",
                         f"vocab_size phải là số nguyên >= {TRAIN_MIN_VOCAB}, hiện tại là {got!r}",
                         component="train_bpe.vocab_size", **kw)

    @classmethod
    def train_unit(cls, got, **kw):
        return cls.train(f"unit must be byte or unicode, got {got!r}",
                         f"unit phải là byte hoặc unicode, hiện tại là {got!r}", component="train_bpe.unit", **kw)

    @classmethod
    def train_out(cls, got, **kw):
        return cls.train(f"out must be a non-empty path (string), got {got!r}",
                         f"out phải là đường dẫn (string) không rỗng, hiện tại là {got!r}",
                         component="train_bpe.out", **kw)

    @classmethod
    def train_window(cls, got, **kw):
        return cls.train(f"hot_pair_window_size must be a positive int, got {got!r}",
                         f"hot_pair_window_size phải là số nguyên dương, hiện tại là {got!r}",
                         component="train_bpe.hot_pair_window_size", **kw)

    @classmethod
    def train_options_differ(cls, first: str, second: str, out: str, **kw):
        return cls.train(f"files {first} and {second} train the same out {out} with different options",
                         f"file {first} và {second} train cùng out {out} với tuỳ chọn khác nhau",
                         component="train_bpe.out", **kw)

    @classmethod
    def train_out_overlaps(cls, out: str, other: str, what: str = "output", **kw):
        """`out` inside or around an output directory (what=output) or the work directory (what=work)."""
        if what == "work":
            return cls.train(f"out {out} overlaps the work directory {other}",
                             f"out {out} trùng với thư mục làm việc {other}", component="train_bpe.out", **kw)
        return cls.train(f"out {out} overlaps the output directory {other}",
                         f"out {out} trùng với thư mục output {other}", component="train_bpe.out", **kw)

    @classmethod
    def train_out_is_input(cls, out: str, **kw):
        return cls.train(f"out {out} is an input file", f"out {out} là file đầu vào", component="train_bpe.out", **kw)


class TokenizerSpecialTokenError(MintDimError):
    @classmethod
    def make(cls, token: str, path: str | None = None, **kw):
        en = f"Tokenizer library did not expose a required special token.\n\nSpecial token: {token}"
        vi = f"Thư viện tokenizer không cung cấp special token bắt buộc.\n\nSpecial token: {token}"
        if path:
            en += f"\n\nTokenizer: {path}"
            vi += f"\n\nTokenizer: {path}"
        # one line of advice after the spec's text: the command that writes a usable copy
        name = "pad" if token == "pad_id" else "unk"
        shown = path or "IN"
        ext = next((x for x in (".model", ".json") if shown.endswith(x)), "")
        root = shown[: len(shown) - len(ext)].rstrip("/")
        command = f"mintdim tokenizer add-specials {shown} {root}-with-{name}{ext} --{name} '<{name}>'"
        en += f"\n\nFix: write a copy that appends the missing token (existing ids unchanged): {command}"
        vi += f"\n\nCách sửa: tạo bản sao có thêm token còn thiếu (id hiện có không đổi): {command}"
        return cls(en, vi, **kw)


def _mapping_texts(what_en: str, what_vi: str, n_files: int, n_items: int, shared_en: str, mapped_en: str,
                   shared_vi: str, mapped_vi: str, files_word: str = "input files"):
    en = (f"Received {n_files} {files_word} but {n_items} {what_en}.\n\nMintDim supports:\n\n"
          f"• {shared_en}\n• {mapped_en}")
    vi = (f"Nhận {n_files} file đầu vào nhưng chỉ có {n_items} {what_vi}.\n\nMintDim hỗ trợ:\n\n"
          f"• {shared_vi}\n• {mapped_vi}")
    return en, vi


class _MappingError(MintDimError):
    """Arity errors (len 1 or len N) share one shape; collisions inside one output reuse the class."""

    TEXTS: tuple = ()

    @classmethod
    def arity(cls, n_files: int, n_items: int, **kw):
        return cls(*_mapping_texts(n_files=n_files, n_items=n_items, **cls.TEXTS), **kw)

    @classmethod
    def collision(cls, block: str, output: str, files: list[str], values: list, **kw):
        en_vals = "\n".join(f"• {f}: {v}" for f, v in zip(files, values))
        en = (f"Files that share one output directory must share its {block}.\n\n"
              f"Output directory: {output}\n\nFiles and their {block}:\n\n{en_vals}")
        vi = (f"Các file dùng chung một thư mục output phải dùng chung {block}.\n\n"
              f"Thư mục output: {output}\n\nCác file và {block} của chúng:\n\n{en_vals}")
        return cls(en, vi, **kw)


class TokenizerMappingError(_MappingError):
    TEXTS = dict(what_en="tokenizers", what_vi="tokenizer",
                 shared_en="1 tokenizer shared across all files", mapped_en="N tokenizers for N files",
                 shared_vi="1 tokenizer dùng chung cho tất cả file", mapped_vi="N tokenizer cho N file")


class FieldMappingError(_MappingError):
    TEXTS = dict(what_en="field configs", what_vi="cấu hình fields",
                 shared_en="1 field config shared across all files", mapped_en="N field configs for N files",
                 shared_vi="1 fields dùng chung cho tất cả file", mapped_vi="N fields cho N file")

    @classmethod
    def invalid(cls, en_problem: str, vi_problem: str, **kw):
        return cls(
            f"Invalid fields config.\n\nProblem: {en_problem}\n\nRules:\n\n"
            "• fields is a list of lists of field names (strings)\n"
            "• len(fields) == 1 or len(fields) == file_count",
            f"Cấu hình fields không hợp lệ.\n\nVấn đề: {vi_problem}\n\nQuy tắc:\n\n"
            "• fields là list các list tên field (string)\n"
            "• len(fields) == 1 hoặc len(fields) == số file",
            **kw,
        )

    # the config check's problems (mintdim/config.py)
    @classmethod
    def not_lists(cls, **kw):
        return cls.invalid("fields must be a list of lists, e.g. [[\"prompt\", \"response\"]]",
                           "fields phải là list các list, ví dụ [[\"prompt\", \"response\"]]", **kw)

    @classmethod
    def names(cls, index: int, **kw):
        return cls.invalid(f"fields[{index}] must be a non-empty list of field names (strings)",
                           f"fields[{index}] phải là list tên field (string) không rỗng", **kw)

    @classmethod
    def twice(cls, index: int, names: list, **kw):
        return cls.invalid(f"fields[{index}] names a field twice: {names!r}",
                           f"fields[{index}] khai báo một field hai lần: {names!r}", **kw)

    @classmethod
    def train_on(cls, **kw):
        return cls.invalid("train_on must be a list of lists of field names, e.g. [[\"output\"]]",
                           "train_on phải là list các list tên field, ví dụ [[\"output\"]]", **kw)

    @classmethod
    def train_on_arity(cls, n_files: int, n_items: int, **kw):
        return cls.invalid(f"Received {n_files} input files but {n_items} train_on entries",
                           f"Nhận {n_files} file đầu vào nhưng chỉ có {n_items} train_on", **kw)

    @classmethod
    def train_on_name(cls, index: int, name, declared: list, **kw):
        return cls.invalid(f"train_on[{index}] names {name!r}, which is not one of the file's fields {declared!r}",
                           f"train_on[{index}] có {name!r}, không thuộc fields của file {declared!r}", **kw)


class TemplateMappingError(_MappingError):
    TEXTS = dict(what_en="templates", what_vi="template",
                 shared_en="1 template shared across all files", mapped_en="N templates for N files",
                 shared_vi="1 template dùng chung cho tất cả file", mapped_vi="N template cho N file")

    @classmethod
    def invalid(cls, en_problem: str, vi_problem: str, **kw):
        return cls(
            f"Invalid templates config.\n\nProblem: {en_problem}\n\nRules:\n\n"
            "• templates is a list of strings\n• len(templates) == 1 or len(templates) == file_count",
            f"Cấu hình templates không hợp lệ.\n\nVấn đề: {vi_problem}\n\nQuy tắc:\n\n"
            "• templates là list các string\n• len(templates) == 1 hoặc len(templates) == số file",
            **kw,
        )

    @classmethod
    def not_strings(cls, **kw):
        return cls.invalid("templates must be a list of strings", "templates phải là list các string", **kw)


class UnitMappingError(_MappingError):
    TEXTS = dict(what_en="unit configs", what_vi="unit config",
                 shared_en="1 unit config shared across all files", mapped_en="N unit configs for N input files",
                 shared_vi="1 unit config dùng chung cho tất cả file", mapped_vi="N unit config cho N file")


class OutputMappingError(_MappingError):
    TEXTS = dict(what_en="output directories", what_vi="thư mục output",
                 shared_en="1 shared output directory", mapped_en="N output directories for N input files",
                 shared_vi="1 output dùng chung", mapped_vi="N output cho N file")


class TemplateFieldMismatchError(MintDimError):
    @classmethod
    def make(cls, source_file: str, fields: list[str], template: str, field: str, reason_en: str, reason_vi: str,
             **kw):
        return cls(
            f"Source file: {source_file}\n\nAPI declaration for this file: fields = {fields!r} "
            f"template = {_quoted(template)}\n\nField causing template mismatch: {field} Reason: {reason_en}",
            f"File nguồn: {source_file}\n\nKhai báo API cho file này: fields = {fields!r} "
            f"template = {_quoted(template)}\n\nField gây lệch template: {field} Lý do: {reason_vi}",
            **kw,
        )

    @classmethod
    def placeholder(cls, source_file: str, fields: list[str], template: str, field: str, reason: str, **kw):
        return cls.make(source_file, fields, template, field,
                        f"invalid placeholder ({reason}); use {{name}}, and {{{{ }}}} for literal braces",
                        f"placeholder không hợp lệ ({reason}); dùng {{name}}, và {{{{ }}}} cho dấu ngoặc literal",
                        **kw)

    @classmethod
    def undeclared(cls, source_file: str, fields: list[str], template: str, field: str, **kw):
        return cls.make(source_file, fields, template, field,
                        f"template uses {{{field}}}, but fields does not declare it",
                        f"template dùng {{{field}}}, nhưng fields không khai báo field này", **kw)

    @classmethod
    def unused(cls, source_file: str, fields: list[str], template: str, field: str, **kw):
        return cls.make(source_file, fields, template, field,
                        f"fields declares {field}, but template does not use {{{field}}}",
                        f"fields khai báo {field}, nhưng template không dùng {{{field}}}", **kw)


class TemplateTokenizerError(MintDimError):
    @classmethod
    def make(cls, file_index: int, template: str, literal: str | None = None, **kw):
        en = (f"Template static parts produce UNK when encoded by the tokenizer.\n\nFile index: {file_index}\n\n"
              f"Template: {_quoted(template)}\n\n"
              "Problem: template literal characters are not fully covered by tokenizer vocabulary\n\n"
              "Fix: adjust template literal characters or use a tokenizer that covers them")
        vi = (f"Phần literal của template tạo UNK khi tokenize.\n\nVị trí file: {file_index}\n\n"
              f"Template: {_quoted(template)}\n\n"
              "Vấn đề: ký tự literal trong template không được tokenizer bao phủ\n\n"
              "Cách sửa: chỉnh ký tự literal hoặc dùng tokenizer bao phủ được")
        if literal is not None:
            en += f"\n\nLiteral: {_quoted(literal)}"
            vi += f"\n\nLiteral: {_quoted(literal)}"
        return cls(en, vi, **kw)


_UNIT_RULES_EN = ["sizes must be positive integers", "sizes must be sorted ascending",
                  "build_batch must be a positive integer"]
_UNIT_RULES_VI = ["sizes phải là các số nguyên dương", "sizes phải tăng dần", "build_batch phải là số nguyên dương"]


class UnitValidationError(MintDimError):
    @classmethod
    def make(cls, en_problem: str | None = None, vi_problem: str | None = None, **kw):
        en = f"Invalid unit config.\n\nRules:\n\n{_bullets(_UNIT_RULES_EN)}"
        vi = f"Unit config không hợp lệ.\n\nQuy tắc:\n\n{_bullets(_UNIT_RULES_VI)}"
        if en_problem:  # a line of advice after the spec's text
            en += f"\n\nProblem: {en_problem}"
            vi += f"\n\nVấn đề: {vi_problem or en_problem}"
        return cls(en, vi, **kw)

    # the config check's problems (mintdim/config.py)
    @classmethod
    def auto_only(cls, keys: list[str], **kw):
        return cls.make(f"{keys} apply only with sizes: auto", f"{keys} chỉ dùng được với sizes: auto", **kw)

    @classmethod
    def needs_k(cls, got, **kw):
        return cls.make(f"sizes: auto needs k, a positive int (got {got!r})",
                        f"sizes: auto cần k là số nguyên dương (hiện tại là {got!r})", **kw)

    @classmethod
    def not_positive(cls, key: str, got, **kw):
        return cls.make(f"{key} must be a positive int, got {got!r}",
                        f"{key} phải là số nguyên dương, hiện tại là {got!r}", **kw)

    @classmethod
    def cost(cls, costs: list[str], got, **kw):
        return cls.make(f"cost must be one of {costs}, got {got!r}",
                        f"cost phải là một trong {costs}, hiện tại là {got!r}", **kw)

    @classmethod
    def min_above_max(cls, **kw):
        return cls.make("min_size is above max_size", "min_size lớn hơn max_size", **kw)

    @classmethod
    def sizes_not_lists(cls, **kw):
        return cls.make("sizes must be a list of lists, e.g. [[128, 256]]",
                        "sizes phải là list các list, ví dụ [[128, 256]]", **kw)

    @classmethod
    def build_batch_not_list(cls, **kw):
        return cls.make("build_batch must be a list, e.g. [4096]", "build_batch phải là list, ví dụ [4096]", **kw)

    @classmethod
    def sizes(cls, index: int, got, **kw):
        return cls.make(f"sizes[{index}] = {got!r}", f"sizes[{index}] = {got!r}", **kw)

    @classmethod
    def unsorted(cls, index: int, got, **kw):
        return cls.make(f"sizes[{index}] = {got!r} is not sorted ascending",
                        f"sizes[{index}] = {got!r} không tăng dần", **kw)

    @classmethod
    def build_batch(cls, index: int, got, **kw):
        return cls.make(f"build_batch[{index}] = {got!r}", f"build_batch[{index}] = {got!r}", **kw)


class UnitOverflowError(MintDimError):
    @classmethod
    def make(cls, path: str, line: int, token_count: int, max_unit: int, **kw):
        return cls(
            f"Sample token length exceeds max unit size.\n\nSample: {path}:{line}\n\n"
            f"token_count: {token_count}\n\nmax_unit_size: {max_unit}\n\nIncrease unit sizes and run again.",
            f"Độ dài token của mẫu vượt quá unit lớn nhất.\n\nMẫu: {path}:{line}\n\n"
            f"token_count: {token_count}\n\nmax_unit_size: {max_unit}\n\nHãy tăng unit sizes rồi chạy lại.",
            file=path, line=line, **kw,
        )


class OutputValidationError(MintDimError):
    @classmethod
    def not_empty(cls, directory: str, **kw):
        return cls(
            f"Output directory already exists and is not empty.\n\nDirectory: {directory}\n\n"
            "Use a new output directory.",
            f"Thư mục output đã tồn tại và không rỗng.\n\nThư mục: {directory}\n\nHãy dùng thư mục output mới.",
            **kw,
        )

    @classmethod
    def invalid(cls, en_problem: str, vi_problem: str, **kw):
        return cls(
            f"Invalid output directory.\n\nProblem: {en_problem}",
            f"Thư mục output không hợp lệ.\n\nVấn đề: {vi_problem}",
            **kw,
        )

    # the config check's problems (mintdim/config.py)
    @classmethod
    def not_paths(cls, **kw):
        return cls.invalid("output.dir must be a path (string) or a list of paths",
                           "output.dir phải là đường dẫn (string) hoặc list đường dẫn", **kw)

    @classmethod
    def nested(cls, directory: str, other: str, **kw):
        return cls.invalid(f"output {directory} contains another output {other}",
                           f"output {directory} chứa một output khác {other}", **kw)

    @classmethod
    def overlaps_work(cls, directory: str, work_dir: str, **kw):
        return cls.invalid(f"output {directory} overlaps the work directory {work_dir}",
                           f"output {directory} trùng với thư mục làm việc {work_dir}", **kw)

    @classmethod
    def is_input(cls, directory: str, **kw):
        return cls.invalid(f"output {directory} is an input file", f"output {directory} là một file đầu vào", **kw)

    # tokenizer.train_bpe's out (mintdim/training.py): never overwritten, like an output directory
    @classmethod
    def train_out_taken(cls, directory: str, record: str, **kw):
        err = cls.not_empty(directory, **kw)
        err.en += ("\n\nIt holds a tokenizer MintDim trained from other files, templates or options "
                   f"(tokenizer.train_bpe.out; see {record} there). Delete it to train again, or choose a new out.")
        err.vi += ("\n\nThư mục chứa tokenizer MintDim đã train từ file, template hoặc tuỳ chọn khác "
                   f"(tokenizer.train_bpe.out; xem {record}). Hãy xoá nó để train lại, hoặc chọn out mới.")
        return err.with_lang(err.lang)

    @classmethod
    def train_out_not_empty(cls, directory: str, **kw):
        err = cls.not_empty(directory, **kw)
        err.en += "\n\ntokenizer.train_bpe.out is where the trained tokenizer is saved; MintDim never overwrites it."
        err.vi += "\n\ntokenizer.train_bpe.out là nơi lưu tokenizer được train; MintDim không bao giờ ghi đè nó."
        return err.with_lang(err.lang)


class TokenDTypeValidationError(MintDimError):
    @classmethod
    def make(cls, vocab_size: int | None = None, **kw):
        en = "Tokenizer vocabulary is too large for supported token dtypes.\n\nSupported dtypes:\n\n• uint16\n• uint32"
        vi = ("Vocab của tokenizer quá lớn so với dtype token được hỗ trợ.\n\nCác dtype hiện hỗ trợ:\n\n"
              "• uint16\n• uint32")
        if vocab_size is not None:
            en += f"\n\nvocab_size: {vocab_size}"
            vi += f"\n\nvocab_size: {vocab_size}"
        return cls(en, vi, **kw)


_SPS_RULES_EN = ["each samples_per_shard[i] is a positive int",
                 "len(samples_per_shard) == 1 or len(samples_per_shard) == file_count"]
_SPS_RULES_VI = ["mỗi samples_per_shard[i] phải là số nguyên dương",
                 "len(samples_per_shard) == 1 hoặc len(samples_per_shard) == số file"]


class SamplesPerShardError(MintDimError):
    @classmethod
    def make(cls, en_problem: str, vi_problem: str, **kw):
        return cls(
            f"Invalid samples_per_shard.\n\nProblem: {en_problem}\n\nRules:\n\n{_bullets(_SPS_RULES_EN)}",
            f"samples_per_shard không hợp lệ.\n\nVấn đề: {vi_problem}\n\nQuy tắc:\n\n{_bullets(_SPS_RULES_VI)}",
            **kw,
        )

    @classmethod
    def value(cls, index: int, got, **kw):
        return cls.make(f"samples_per_shard[{index}] must be a positive int, got {got!r}",
                        f"samples_per_shard[{index}] phải là số nguyên dương, hiện tại là {got!r}", **kw)

    @classmethod
    def arity(cls, n_files: int, n_items: int, **kw):
        return cls.make(f"Received {n_files} input files but {n_items} samples_per_shard entries",
                        f"Nhận {n_files} file đầu vào nhưng chỉ có {n_items} samples_per_shard", **kw)

    @classmethod
    def not_list(cls, got: str, **kw):
        return cls.make(f"samples_per_shard must be a list of positive ints, got {got}",
                        f"samples_per_shard phải là list số nguyên dương, hiện tại là {got}", **kw)

    @classmethod
    def shared(cls, output: str, values: str, **kw):
        return cls.make(f"files that share output {output} must share samples_per_shard ({values})",
                        f"các file dùng chung output {output} phải dùng chung samples_per_shard ({values})", **kw)


class BuildError(MintDimError):
    """A stage failed without a spec error (killed job, disk full, a bug): says where to look."""

    @classmethod
    def make(cls, en_detail: str, vi_detail: str | None = None, **kw):
        return cls(f"The build failed.\n\n{en_detail}", f"Build thất bại.\n\n{vi_detail or en_detail}", **kw)


class TokenizerToolError(MintDimError):
    """A `mintdim tokenizer` command could not do what was asked (nothing was written)."""

    def __init__(self, en: str, vi: str | None = None, **kw):
        super().__init__(en, vi or en, **kw)

    # add-specials (mintdim/specials.py)
    @classmethod
    def exists(cls, out: str, **kw):
        return cls(f"{out} already exists; MintDim never overwrites a file. Choose a new OUT.",
                   f"{out} đã tồn tại; MintDim không bao giờ ghi đè file. Hãy chọn OUT mới.", **kw)

    @classmethod
    def same_path(cls, **kw):
        return cls("OUT must differ from IN: IN is never touched", "OUT phải khác IN: IN không bao giờ bị sửa", **kw)

    @classmethod
    def out_extension(cls, ext: str, kind: str, **kw):
        return cls(f"OUT must end with {ext} (the extension MintDim expects for {kind})",
                   f"OUT phải có đuôi {ext} (đuôi MintDim dùng cho {kind})", **kw)

    @classmethod
    def unknown_kind(cls, path: str, **kw):
        return cls(f"{path}: not a SentencePiece .model, a tokenizer.json (.json) or a unitoken model directory",
                   f"{path}: không phải SentencePiece .model, tokenizer.json (.json) hay thư mục model unitoken", **kw)

    @classmethod
    def nothing_to_add(cls, unk_id: int, pad_id: int, **kw):
        return cls(f"the tokenizer already exposes unk_id {unk_id} and pad_id {pad_id}: nothing to add",
                   f"tokenizer đã có unk_id {unk_id} và pad_id {pad_id}: không cần thêm gì", **kw)

    @classmethod
    def already_has(cls, name: str, token_id: int, **kw):
        return cls(f"the tokenizer already has {name}_id {token_id}; --{name} adds only a missing one",
                   f"tokenizer đã có {name}_id {token_id}; --{name} chỉ thêm token còn thiếu", **kw)

    @classmethod
    def empty_token(cls, name: str, **kw):
        return cls(f"--{name} needs a non-empty token string", f"--{name} cần một chuỗi token không rỗng", **kw)

    @classmethod
    def same_tokens(cls, **kw):
        return cls("--pad and --unk must be different strings", "--pad và --unk phải là chuỗi khác nhau", **kw)

    @classmethod
    def taken(cls, token: str, old_id, **kw):
        return cls(f"{token!r} is already in the vocabulary (id {old_id}); choose a string that is not, e.g. <|pad|>",
                   f"{token!r} đã có trong vocab (id {old_id}); hãy chọn chuỗi chưa có, ví dụ <|pad|>", **kw)

    @classmethod
    def needs_protobuf(cls, reason, **kw):
        return cls(f"editing a SentencePiece model needs protobuf ({reason}): pip install protobuf",
                   f"sửa model SentencePiece cần protobuf ({reason}): pip install protobuf", **kw)

    @classmethod
    def sentencepiece_unk(cls, **kw):
        return cls("a SentencePiece model always has an unk piece; only --pad applies",
                   "model SentencePiece luôn có unk piece; chỉ dùng được --pad", **kw)

    @classmethod
    def not_appended(cls, token: str, **kw):
        return cls(f"could not append {token!r} as a new id", f"không thêm được {token!r} làm id mới", **kw)

    @classmethod
    def no_unk_slot(cls, kind: str, **kw):
        return cls(f"cannot set an unk token on a {kind} model here",
                   f"không đặt được unk token cho model {kind}", **kw)

    @classmethod
    def unitoken_token(cls, **kw):
        return cls("a unitoken special token must be printable ASCII without spaces, e.g. <pad>",
                   "special token của unitoken phải là ASCII in được, không có dấu cách, vd <pad>", **kw)

    # the written tokenizer failed its check (nothing written)
    @classmethod
    def _unchecked(cls, en: str, vi: str, **kw):
        return cls(f"{en}; nothing written", f"{vi}; không ghi gì", **kw)

    @classmethod
    def not_exposed(cls, name: str, token_id: int, **kw):
        return cls._unchecked(f"the new tokenizer does not expose {name}_id {token_id}",
                              f"tokenizer mới không có {name}_id {token_id}", **kw)

    @classmethod
    def ids_change(cls, count: int, example: str, **kw):
        return cls._unchecked(f"{count} existing ids would change (e.g. {example!r})",
                              f"{count} id hiện có sẽ bị đổi (vd {example!r})", **kw)

    @classmethod
    def vocab_growth(cls, **kw):
        return cls._unchecked("the vocabulary would not grow by exactly the added tokens",
                              "vocab không tăng đúng số token thêm", **kw)

    @classmethod
    def encodes_differently(cls, **kw):
        return cls._unchecked("a text encodes differently with the new tokenizer",
                              "một văn bản được mã hoá khác với tokenizer mới", **kw)

    # export (mintdim/export.py)
    @classmethod
    def merges_line(cls, path: str, line: str, **kw):
        return cls(f"unexpected line in {path}: {line[:80]!r}", f"dòng không đúng dạng trong {path}: {line[:80]!r}",
                   **kw)

    @classmethod
    def not_model_dir(cls, model_dir: str, reason, **kw):
        return cls(f"{model_dir} is not a unitoken model directory: {reason}",
                   f"{model_dir} không phải thư mục model unitoken: {reason}", **kw)

    @classmethod
    def not_byte_unit(cls, model_dir: str, unit: str, **kw):
        return cls(f"{model_dir} is a {unit}-unit model; only byte-unit models have a tokenizer.json "
                   "with the same ids (train with unit: byte)",
                   f"{model_dir} là model unit {unit}; chỉ model unit byte mới có tokenizer.json cùng id "
                   "(hãy train với unit: byte)", **kw)

    @classmethod
    def unicode_bigrams(cls, model_dir: str, **kw):
        return cls(f"{model_dir} uses Unicode bigram boundaries, which tokenizer.json cannot express",
                   f"{model_dir} dùng ranh giới Unicode bigram, tokenizer.json không biểu diễn được", **kw)

    @classmethod
    def special_moved(cls, token: str, **kw):
        return cls(f"special token {token!r} would not keep its id", f"special token {token!r} bị đổi id", **kw)

    @classmethod
    def export_differs(cls, index: int, **kw):
        return cls(f"the exported tokenizer encodes text {index} differently; nothing written",
                   f"tokenizer đã export mã hoá văn bản {index} khác đi; không ghi gì", **kw)


def schema_violation(path: list, message: str) -> MintDimError:
    """A JSON Schema violation no named problem words (jsonschema's own English, in both texts), with the
    error class of the block it is in."""
    where = ".".join(str(p) for p in path) or "config"
    text = f"{where}: {message}"
    block, sub = (list(path) + [None, None])[:2]
    if block == "tokenizer":
        return TokenizerValidationError.config(text, text)
    if block == "units":
        return UnitValidationError.make(text, text)
    if block == "output" and sub == "samples_per_shard":
        return SamplesPerShardError.make(text, text)
    if block == "output":
        return OutputValidationError.invalid(text, text)
    if block == "source" and sub == "fields":
        return FieldMappingError.invalid(text, text)
    if block == "source" and sub == "templates":
        return TemplateMappingError.invalid(text, text)
    return PipelineValidationError.invalid(text, text)


ERROR_CLASSES = {
    cls.__name__: cls
    for cls in [
        MintDimError, PipelineValidationError, MintDimFileNotFoundError, SourceParseError, SampleSchemaError,
        TokenizerValidationError, TokenizerSpecialTokenError, TokenizerMappingError, FieldMappingError,
        TemplateMappingError, TemplateFieldMismatchError, TemplateTokenizerError, UnitMappingError,
        OutputMappingError, UnitValidationError, UnitOverflowError, OutputValidationError,
        TokenDTypeValidationError, SamplesPerShardError, BuildError, TokenizerToolError,
    ]
}

__all__ = list(ERROR_CLASSES) + ["LANGS"]

"""Every MintDim error, with the spec's English and Vietnamese texts.

An error carries both texts; `lang` (en | vi | both) only chooses what is
printed. `str(err)` is the text in the error's own language setting, headed
by the class name exactly as the spec prints it. `to_dict()`/`from_dict()`
carry an error across a process boundary (stage job -> runner) unchanged.
"""

from __future__ import annotations

import functools
import json
import os
import string

from mintdim.catalogue import MESSAGES, Both, Msg
from mintdim.catalogue.output import AUTO_ONLY, UNIT_PROBLEM_KEYS, UNIT_RULES

LANGS = ("en", "vi", "both")


def _bullets(items) -> str:
    return "\n".join(f"• {item}" for item in items)


class Row(int):
    """A 1-based row of a Parquet file or of a `datasets` directory (counted across its row groups or
    Arrow files). Given as the `line` of a constructor below, the text says Row (and Column) where a
    JSONL line's says Line (and Field): one constructor serves every input kind."""

    kind = "JSONL"

    def __new__(cls, number: int, kind: str = "Parquet"):
        row = super().__new__(cls, number)
        row.kind = kind
        return row


def _at(line) -> tuple[str, str, str]:
    """(record kind, English label, Vietnamese label) of a place in a source: a JSONL line or a Row."""
    if isinstance(line, Row):
        return line.kind, "Row", "Hàng"
    return "JSONL", "Line", "Dòng"


def _did_you_mean(unknown, known) -> tuple[str, str]:
    """A paragraph per unknown name that has a close known one (difflib): "Did you mean ...?"."""
    import difflib

    hints = []
    for name in unknown:
        close = difflib.get_close_matches(str(name), sorted(known), n=1, cutoff=0.6)
        if close:
            hints.append((name, close[0]))
    return (
        "".join(f"\n\nDid you mean {b!r} instead of {a!r}?" for a, b in hints),
        "".join(f"\n\nCó phải ý bạn là {b!r} thay vì {a!r}?" for a, b in hints),
    )


def _quoted(text: str) -> str:
    """A template or path shown as the spec shows it: in double quotes, with \\n escapes."""
    return json.dumps(text, ensure_ascii=False)


class _Formatter(string.Formatter):
    """str.format with the catalogue's specs: {x:bullets} (a line "• item" each), {x:comma} and
    {x:space} (items joined), {x:json} (in double quotes, with \\n escapes, as the spec shows a template
    or path). A Both value is its word in the language being rendered."""

    def __init__(self, lang: str):
        self.lang = lang

    def convert_field(self, value, conversion):
        return super().convert_field(self._word(value), conversion)

    def format_field(self, value, spec):
        value = self._word(value)
        if spec == "bullets":  # an item may be a Both too
            return "\n".join(f"• {self._word(item)}" for item in value)
        if spec in _JOINS:
            return _JOINS[spec].join(str(item) for item in value)
        if spec == "json":
            return json.dumps(value, ensure_ascii=False)
        return super().format_field(value, spec)

    def _word(self, value):
        return getattr(value, self.lang) if isinstance(value, Both) else value


_JOINS = {"comma": ", ", "space": " "}
_FORMAT = {"en": _Formatter("en"), "vi": _Formatter("vi")}


def _place(line) -> dict:
    """The words of a place in a source: `kind` (JSONL, Parquet, ...) and `at` (Line or Row)."""
    if isinstance(line, Row):
        return {"kind": line.kind, "at": Both("Row", "Hàng")}
    return {"kind": "JSONL", "at": Both("Line", "Dòng")}


class _Catalogue(type):
    """`Class.key(...)` for every key of the class's table (and its bases' tables): the message."""

    def __getattr__(cls, name):
        if name.startswith("__") or _entry(cls, name) is None:
            raise AttributeError(f"{cls.__name__} has no message {name!r}")
        return functools.partial(cls.message, name)


def _entry(cls, key: str) -> Msg | None:
    for klass in cls.__mro__:
        entry = MESSAGES.get(klass.__name__, {}).get(key)
        if entry is not None:
            return entry
    return None


class MintDimError(Exception, metaclass=_Catalogue):
    """Base class. An error holds its `en` and `vi` bodies (without the class name); the catalogue's
    entries make them (`message`)."""

    def __init__(
        self, en: str, vi: str, *, lang: str = "en", file: str | None = None, line: int | None = None
    ):
        self.en = en
        self.vi = vi
        self.lang = lang if lang in LANGS else "en"
        self.file = file
        self.line = int(line) if line is not None else None  # a Row is a plain number here
        super().__init__(self.render(self.lang))

    @classmethod
    def texts(cls, key: str, **fields) -> Both:
        """The entry's English and Vietnamese texts with its fields filled (a line also gives `kind`
        and `at`); an entry with a base is put in its base's `{problem}`. For a Row, the entry
        `key@row` when the table has one."""
        if isinstance(fields.get("line"), Row) and _entry(cls, key + "@row"):
            key += "@row"  # the words of a Parquet or `datasets` row (columns, not fields)
        entry = _entry(cls, key)
        if "line" in fields:
            fields = _place(fields["line"]) | fields
        text = Both(_FORMAT["en"].vformat(entry.en, (), fields), _FORMAT["vi"].vformat(entry.vi, (), fields))
        if entry.base:
            return cls.texts(entry.base, problem=text)
        return text

    @classmethod
    def message(cls, key: str, *args, lang: str = "en", file: str | None = None, line=None, **fields):
        """The error of catalogue entry `key`, its fields given by position (the entry's order) or by
        name. Fields `path` and `line` are also the error's file and line."""
        names = _entry(cls, key).fields.split()
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}.{key} takes {len(names)} fields, got {len(args)}")
        fields |= dict(zip(names, args))
        if "line" in names and "line" not in fields:
            fields["line"] = line
        if file is None and "path" in fields and "line" in fields:
            file, line = fields["path"], fields["line"]
        en, vi = cls.texts(key, **fields)
        return cls(en, vi, lang=lang, file=file, line=line)

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

    def with_lang(self, lang: str) -> MintDimError:
        self.lang = lang if lang in LANGS else "en"
        self.args = (self.render(self.lang),)
        return self

    def __str__(self) -> str:
        return self.render(self.lang)

    def to_dict(self) -> dict:
        return {"kind": self.kind, "en": self.en, "vi": self.vi, "file": self.file, "line": self.line}

    @staticmethod
    def from_dict(data: dict, lang: str = "en") -> MintDimError:
        cls = ERROR_CLASSES.get(data.get("kind"), MintDimError)
        err = cls.__new__(cls)
        MintDimError.__init__(
            err, data["en"], data["vi"], lang=lang, file=data.get("file"), line=data.get("line")
        )
        return err


# --- configuration ---------------------------------------------------------


class PipelineValidationError(MintDimError):
    @classmethod
    def invalid(cls, en_problem: str, vi_problem: str, **kw):
        """A problem the catalogue has no entry for, in both languages."""
        return cls.message("invalid", Both(en_problem, vi_problem), **kw)

    # source.on_bad_record / source.max_skipped (mintdim/config.py _bad_records)
    @classmethod
    def on_bad_record(cls, got, **kw):
        return cls.invalid(
            f"source.on_bad_record must be a list of error or skip (one shared by every "
            f"file, or one per file), got {got!r}",
            f"source.on_bad_record phải là list gồm error hoặc skip (một mục dùng chung, "
            f"hoặc mỗi file một mục), hiện tại là {got!r}",
            **kw,
        )

    @classmethod
    def max_skipped(cls, got, **kw):
        return cls.invalid(
            f"source.max_skipped must be a list of limits, each a fraction of the file's "
            f"records (a number from 0 to 1 with a decimal point, e.g. 0.01) or a count (an "
            f"int >= 0), got {got!r}",
            f"source.max_skipped phải là list giới hạn, mỗi mục là tỉ lệ số bản ghi của file "
            f"(số từ 0 đến 1 có dấu thập phân, ví dụ 0.01) hoặc số lượng (số nguyên >= 0), "
            f"hiện tại là {got!r}",
            **kw,
        )

    @classmethod
    def bad_record_arity(cls, key: str, n_files: int, n_items: int, **kw):
        return cls.invalid(
            f"source.{key}: received {n_files} input files but {n_items} entries (1: "
            f"shared, {n_files}: one per file)",
            f"source.{key}: nhận {n_files} file đầu vào nhưng có {n_items} mục (1: dùng "
            f"chung, {n_files}: mỗi file một mục)",
            **kw,
        )

    @classmethod
    def max_skipped_alone(cls, **kw):
        return cls.invalid(
            "source.max_skipped applies only with source.on_bad_record: [skip] (it bounds "
            "the records skipped)",
            "source.max_skipped chỉ dùng cùng source.on_bad_record: [skip] (nó giới hạn "
            "số bản ghi bị bỏ qua)",
            **kw,
        )

    @classmethod
    def chunk_mb(cls, got, **kw):
        return cls.invalid(
            f"chunk_mb must be a positive number, got {got!r}",
            f"chunk_mb phải là số dương, hiện tại là {got!r}",
            **kw,
        )

    @classmethod
    def unknown_pipeline(cls, name: str, supported: list[str], **kw):
        return cls.invalid(
            f"unknown pipeline {name!r}; supported: {', '.join(supported)}",
            f"pipeline {name!r} không tồn tại; hỗ trợ: {', '.join(supported)}",
            **kw,
        )

    @classmethod
    def not_yaml(cls, path: str, exc, **kw):
        return cls.invalid(f"{path} is not valid YAML: {exc}", f"{path} không phải YAML hợp lệ: {exc}", **kw)

    @classmethod
    def unknown_keys(cls, unknown: list[str], known, block: str | None = None, **kw):
        """Unknown keys, each with the closest known key when there is one (difflib)."""
        where_en = f"unknown keys in {block}" if block else "unknown config keys"
        where_vi = f"key không hợp lệ trong {block}" if block else "key cấu hình không hợp lệ"
        hint_en, hint_vi = _did_you_mean(unknown, known)
        return cls.invalid(f"{where_en}: {unknown!r}{hint_en}", f"{where_vi}: {unknown!r}{hint_vi}", **kw)

    # source.chat (conversations; mintdim/config.py checks the block, mintdim/sources/chat.py renders)
    @classmethod
    def chat_arity(cls, n_files: int, n_items: int, **kw):
        return cls.invalid(
            f"source.chat: received {n_files} input files but {n_items} chat entries (1: shared, "
            f"{n_files}: one per file)",
            f"source.chat: nhận {n_files} file đầu vào nhưng có {n_items} mục chat (1: dùng chung, "
            f"{n_files}: mỗi file một mục)",
            **kw,
        )

    @classmethod
    def chat_not_mapping(cls, where: str, got: str, **kw):
        return cls.invalid(
            f"{where} must be a mapping (e.g. {{}} for OpenAI messages), got {got}",
            f"{where} phải là mapping (ví dụ {{}} cho messages kiểu OpenAI), hiện tại là {got}",
            **kw,
        )

    @classmethod
    def chat_unknown_keys(cls, where: str, keys: list[str], known: list[str], **kw):
        return cls.invalid(
            f"unknown keys in {where}: {keys!r} (known: {', '.join(known)})",
            f"key không hợp lệ trong {where}: {keys!r} (hợp lệ: {', '.join(known)})",
            **kw,
        )

    @classmethod
    def chat_key(cls, where: str, key: str, got, **kw):
        return cls.invalid(
            f"{where}.{key} must be a non-empty string (a JSON key), got {got!r}",
            f"{where}.{key} phải là string không rỗng (một key JSON), hiện tại là {got!r}",
            **kw,
        )

    @classmethod
    def chat_same_key(cls, where: str, key: str, **kw):
        return cls.invalid(
            f"{where}: role and content name the same key {key!r}",
            f"{where}: role và content cùng là key {key!r}",
            **kw,
        )

    @classmethod
    def chat_roles(cls, where: str, **kw):
        return cls.invalid(
            f"{where}.roles must map source roles to template roles (strings), e.g. "
            "{human: user, gpt: assistant}",
            f"{where}.roles phải ánh xạ role nguồn sang role của template (string), ví dụ "
            "{human: user, gpt: assistant}",
            **kw,
        )

    @classmethod
    def chat_extras(cls, where: str, **kw):
        return cls.invalid(
            f"{where}.extras must be a list of record keys (strings), e.g. [tools]",
            f"{where}.extras phải là list key của bản ghi (string), ví dụ [tools]",
            **kw,
        )

    @classmethod
    def chat_extras_reserved(cls, where: str, names: list[str], **kw):
        return cls.invalid(
            f"{where}.extras may not name {names}: the template receives them from MintDim",
            f"{where}.extras không được có {names}: MintDim truyền các biến này cho template",
            **kw,
        )

    @classmethod
    def chat_last_turn(cls, where: str, got, **kw):
        return cls.invalid(
            f"{where}.last_turn must be true or false, got {got!r}",
            f"{where}.last_turn phải là true hoặc false, hiện tại là {got!r}",
            **kw,
        )

    # source.take / source.seed (mixing with exact counts; mintdim/sources/take.py)
    @classmethod
    def take_not_list(cls, got, **kw):
        return cls.invalid(
            f"source.take must be a list (one entry shared by every file, or one per file), got {got!r}",
            f"source.take phải là list (một mục dùng chung, hoặc mỗi file một mục), hiện tại là {got!r}",
            **kw,
        )

    @classmethod
    def take(cls, index: int, got, **kw):
        return cls.invalid(
            f"source.take[{index}] must be a fraction of the file's samples (a number > 0 with a "
            f"decimal point, e.g. 0.5; above 1 repeats) or a count (an int >= 1), got {got!r}",
            f"source.take[{index}] phải là tỉ lệ số sample của file (số > 0 có dấu thập phân, ví dụ "
            f"0.5; lớn hơn 1 là lặp lại) hoặc số lượng (số nguyên >= 1), hiện tại là {got!r}",
            **kw,
        )

    @classmethod
    def take_arity(cls, n_files: int, n_items: int, **kw):
        return cls.invalid(
            f"source.take: received {n_files} input files but {n_items} take entries (1: shared, "
            f"{n_files}: one per file)",
            f"source.take: nhận {n_files} file đầu vào nhưng có {n_items} mục take (1: dùng chung, "
            f"{n_files}: mỗi file một mục)",
            **kw,
        )

    @classmethod
    def seed(cls, got, **kw):
        return cls.invalid(
            f"source.seed must be an int >= 0, got {got!r}",
            f"source.seed phải là số nguyên >= 0, hiện tại là {got!r}",
            **kw,
        )

    @classmethod
    def seed_alone(cls, **kw):
        return cls.invalid(
            "source.seed applies only with source.take (it seeds the choice of samples)",
            "source.seed chỉ dùng cùng source.take (nó là seed cho việc chọn sample)",
            **kw,
        )

    @classmethod
    def take_no_samples(cls, index: int, path: str, count: int, **kw):
        return cls.invalid(
            f"source.take[{index}] asks for {count} samples of {path}, which holds no samples",
            f"source.take[{index}] yêu cầu {count} sample của {path}, nhưng file không có sample nào",
            **kw,
        )

    # source.train_eos, source.drop_untrained: a list of true/false, shared or one per file
    @classmethod
    def flag_list(cls, key: str, got, **kw):
        return cls.invalid(
            f"source.{key} must be a list of true or false (one shared by every file, or "
            f"one per file), e.g. [true], got {got!r}",
            f"source.{key} phải là list các giá trị true hoặc false (một giá trị dùng chung, "
            f"hoặc mỗi file một giá trị), ví dụ [true], hiện tại là {got!r}",
            **kw,
        )

    @classmethod
    def flag_arity(cls, key: str, n_files: int, n_items: int, **kw):
        return cls.invalid(
            f"source.{key}: received {n_files} input files but {n_items} entries (1: shared, "
            f"{n_files}: one per file)",
            f"source.{key}: nhận {n_files} file đầu vào nhưng có {n_items} mục (1: dùng "
            f"chung, {n_files}: mỗi file một mục)",
            **kw,
        )

    @classmethod
    def chat_drop_roles(cls, where: str, **kw):
        return cls.invalid(
            f"{where}.drop_roles must be a list of roles (strings), e.g. [tool_user]",
            f"{where}.drop_roles phải là list role (string), ví dụ [tool_user]",
            **kw,
        )

    @classmethod
    def chat_reasoning(cls, where: str, got, **kw):
        return cls.invalid(
            f"{where}.reasoning must be train or mask, got {got!r}",
            f"{where}.reasoning phải là train hoặc mask, hiện tại là {got!r}",
            **kw,
        )

    @classmethod
    def chat_template_kwargs(cls, where: str, **kw):
        return cls.invalid(
            f"{where}.chat_template_kwargs must be a mapping of template variables, e.g. "
            "{enable_thinking: false}",
            f"{where}.chat_template_kwargs phải là mapping các biến của template, ví dụ "
            "{enable_thinking: false}",
            **kw,
        )

    @classmethod
    def chat_template_kwargs_reserved(cls, where: str, names: list[str], **kw):
        return cls.invalid(
            f"{where}.chat_template_kwargs may not set {names}: the template receives them from MintDim",
            f"{where}.chat_template_kwargs không được đặt {names}: MintDim truyền các biến này cho template",
            **kw,
        )


class MintDimFileNotFoundError(MintDimError):
    @classmethod
    def make(cls, context: str, path: str, **kw):
        return cls(
            f"Required file was not found.\n\nContext: {context}\n\nMissing file: {path}",
            f"Không tìm thấy file cần dùng.\n\nContext: {context}\n\nFile thiếu: {path}",
            **kw,
        )

    @classmethod
    def resolved(cls, context: str, path: str, base: str, **kw):
        """A relative path: says which directory it was resolved from (the one the build ran in)."""
        err = cls.make(context, path, **kw)
        if not path.startswith("/"):
            err.en += f"\n\nResolved from: {base} (relative paths start from the directory you run in)"
            err.vi += f"\n\nTính từ thư mục: {base} (đường dẫn tương đối tính từ thư mục bạn chạy lệnh)"
            err.with_lang(err.lang)
        return err

    @classmethod
    def tokenizer_dir_file(cls, kind: str, path: str, base: str, **kw):
        """A directory kind's directory that lacks one of its files (`path`: that file), then what it
        holds."""
        err = cls.resolved("tokenizer", path, base, **kw)
        holds_en, holds_vi = tokenizer_dir_holds(kind)
        err.en += f"\n\n{holds_en}"
        err.vi += f"\n\n{holds_vi}"
        return err.with_lang(err.lang)

    @classmethod
    def datasets_state(cls, directory: str, dataset_dict: bool = False, **kw):
        """A directory given as a source that is not a `datasets` directory (no state.json)."""
        d = directory.rstrip("/")
        err = cls.make("source (a datasets directory)", f"{d}/state.json", **kw)
        err.en += (
            "\n\nA datasets directory is what Dataset.save_to_disk writes: its Arrow files, "
            "dataset_info.json and state.json (which lists the Arrow files in order)."
        )
        err.vi += (
            "\n\nThư mục datasets là thứ Dataset.save_to_disk ghi ra: các file Arrow, dataset_info.json "
            "và state.json (liệt kê các file Arrow theo thứ tự)."
        )
        if dataset_dict:
            err.en += (
                "\n\nThis directory holds a DatasetDict (dataset_dict.json): give one split's directory, "
                f"e.g. {d}/train."
            )
            err.vi += (
                f"\n\nThư mục này chứa một DatasetDict (dataset_dict.json): hãy chỉ định thư mục của một "
                f"split, ví dụ {d}/train."
            )
        err.with_lang(err.lang)
        return err


class SourceParseError(MintDimError):
    REASONS = {
        "json": ("invalid JSON syntax", "JSON không hợp lệ"),
        "utf8": ("invalid UTF-8", "UTF-8 không hợp lệ"),
        "object": ("line is not a JSON object", "dòng không phải JSON object"),
        "surrogate": (
            "a declared field holds a lone surrogate escape (not encodable as UTF-8)",
            "một field đã khai báo chứa surrogate đơn lẻ (không mã hoá được UTF-8)",
        ),
        "compressed": ("the compressed file could not be decompressed", "không giải nén được file"),
        "unreadable": ("the file could not be read", "không đọc được file"),
    }

    @classmethod
    def make(cls, path: str, line: int, reason: str = "json", **kw):
        en_reason, vi_reason = cls.REASONS[reason]
        return cls(
            f"JSONL line could not be parsed.\n\nFile: {path}\n\nLine: {line}\n\nReason: {en_reason}",
            f"Không đọc được dòng JSONL.\n\nFile: {path}\n\nDòng: {line}\n\nLý do: {vi_reason}",
            file=path,
            line=line,
            **kw,
        )

    @classmethod
    def unknown_kind(cls, path: str, shape: str | None = None, **kw):
        """An input whose name is none MintDim reads (sources/inputs.py ACCEPTED). shape: what the file
        seems to hold ("array": a JSON array; "lines": JSON objects), for the fix."""
        en = (
            f"Input file is not of a kind MintDim reads.\n\nFile: {path}\n\nReason: MintDim reads JSON "
            "Lines (.jsonl, .jsonl.gz, .jsonl.zst), Parquet (.parquet) and datasets directories (what "
            "Dataset.save_to_disk writes), told apart by their names"
        )
        vi = (
            f"File đầu vào không thuộc loại MintDim đọc được.\n\nFile: {path}\n\nLý do: MintDim đọc JSON "
            "Lines (.jsonl, .jsonl.gz, .jsonl.zst), Parquet (.parquet) và thư mục datasets (do "
            "Dataset.save_to_disk ghi ra), phân biệt theo tên"
        )
        if shape == "array":
            command = (
                'python -c "import json, sys; [print(json.dumps(r, ensure_ascii=False)) for r in '
                f"json.load(open(sys.argv[1], encoding='utf-8'))]\" {path} "
                f"> {os.path.splitext(path)[0]}.jsonl"
            )
            en += (
                "\n\nThe file holds a JSON array. Fix: write its records as JSON Lines, a line each: "
                + command
            )
            vi += (
                "\n\nFile chứa một mảng JSON. Cách sửa: ghi các bản ghi thành JSON Lines, mỗi dòng một: "
                + command
            )
        elif shape == "lines":
            en += "\n\nThe file starts with a JSON object: if it is JSON Lines, rename it to .jsonl"
            vi += "\n\nFile bắt đầu bằng một JSON object: nếu nó là JSON Lines, hãy đổi tên thành .jsonl"
        return cls(en, vi, file=path, **kw)

    EMPTY_REASONS = {
        "empty": ("the file is empty (0 bytes)", "file rỗng (0 byte)"),
        "blank": (
            "the file holds no line with data (only white space or blank lines)",
            "file không có dòng nào chứa dữ liệu (chỉ có khoảng trắng hoặc dòng trống)",
        ),
        "no_rows": ("it has no row", "không có hàng nào"),
    }

    @classmethod
    def empty(cls, path: str, reason: str = "blank", kind: str = "JSONL", **kw):
        """An input with no sample at all (source.allow_empty: true makes it a warning). kind: JSONL,
        Parquet, datasets (sources/inputs.py label)."""
        en_reason, vi_reason = cls.EMPTY_REASONS[reason]
        return cls(
            f"{kind} file holds no samples.\n\nFile: {path}\n\nReason: {en_reason}\n\n"
            "Fix: remove it from source.files, or set source.allow_empty: true to build without it "
            "(a warning in the console and stats.json)",
            f"File {kind} không có mẫu nào.\n\nFile: {path}\n\nLý do: {vi_reason}\n\n"
            "Cách sửa: bỏ nó khỏi source.files, hoặc đặt source.allow_empty: true để build không có nó "
            "(kèm cảnh báo trên console và trong stats.json)",
            file=path,
            **kw,
        )

    # Parquet files and datasets directories (mintdim/sources/arrow.py):
    # a Row, and the column when one is at fault
    @classmethod
    def row(cls, path: str, row: Row, en_reason: str, vi_reason: str, column: str | None = None, **kw):
        col_en = f"\n\nColumn: {column}" if column is not None else ""
        col_vi = f"\n\nCột: {column}" if column is not None else ""
        return cls(
            f"{row.kind} row could not be read.\n\nFile: {path}\n\nRow: {row}{col_en}\n\nReason: {en_reason}",
            f"Không đọc được hàng {row.kind}.\n\nFile: {path}\n\nHàng: {row}{col_vi}\n\nLý do: {vi_reason}",
            file=path,
            line=row,
            **kw,
        )

    @classmethod
    def footer(cls, path: str, detail: str, **kw):
        """A damaged or missing footer: no row can be read, from the first one on."""
        return cls.row(
            path,
            Row(1),
            f"the file's footer (the index of its row groups) is damaged or missing, "
            f"so no row can be read: {detail}",
            f"footer của file (chỉ mục các row group) bị hỏng hoặc thiếu, nên không đọc được hàng "
            f"nào: {detail}",
            **kw,
        )

    @classmethod
    def empty_row_group(cls, path: str, row: Row, group: int, **kw):
        return cls.row(
            path,
            row,
            f"row group {group} is empty (0 rows) in a file that has rows; rewrite the "
            "file without it (e.g. pyarrow.parquet.write_table(pyarrow.parquet.read_table(f), "
            "new_path))",
            f"row group {group} rỗng (0 hàng) trong một file có dữ liệu; hãy ghi lại file không có "
            "row group đó (ví dụ pyarrow.parquet.write_table(pyarrow.parquet.read_table(f), new_path))",
            **kw,
        )

    @classmethod
    def unreadable_rows(cls, path: str, row: Row, detail: str, **kw):
        """Data pages (Parquet) or record batches (Arrow) that pyarrow cannot decode, from this row on."""
        return cls.row(
            path,
            row,
            f"the data from this row on cannot be decoded: {detail}",
            f"không giải mã được dữ liệu từ hàng này trở đi: {detail}",
            **kw,
        )

    @classmethod
    def datasets_dir(cls, path: str, en_problem: str, vi_problem: str, **kw):
        """A `datasets` directory (Dataset.save_to_disk) whose state.json or Arrow files cannot be used."""
        return cls(
            f"datasets directory could not be read.\n\nFile: {path}\n\nReason: {en_problem}",
            f"Không đọc được thư mục datasets.\n\nFile: {path}\n\nLý do: {vi_problem}",
            file=path,
            **kw,
        )

    @classmethod
    def datasets_state_json(cls, path: str, detail: str, **kw):
        return cls.datasets_dir(
            path,
            f"not the state.json save_to_disk writes (_data_files: [{{filename}}]): {detail}",
            f"không phải state.json mà save_to_disk ghi ra (_data_files: [{{filename}}]): {detail}",
            **kw,
        )

    @classmethod
    def datasets_no_files(cls, path: str, **kw):
        return cls.datasets_dir(
            path, "state.json lists no Arrow file", "state.json không liệt kê file Arrow nào", **kw
        )

    @classmethod
    def datasets_not_stream(cls, path: str, detail: str, **kw):
        return cls.datasets_dir(
            path, f"not an Arrow stream file: {detail}", f"không phải file Arrow stream: {detail}", **kw
        )

    @classmethod
    def datasets_columns_differ(cls, path: str, **kw):
        return cls.datasets_dir(
            path,
            "its columns differ from the first Arrow file's",
            "các cột khác với file Arrow đầu tiên",
            **kw,
        )


class SampleSchemaError(MintDimError):
    @classmethod
    def missing(
        cls, path: str, line: int, declared: list[str], missing: list[str], available: list[str], **kw
    ):
        d, m, a = " ".join(declared), " ".join(missing), " ".join(available)
        if isinstance(line, Row):  # Parquet / datasets: the fields are columns
            return cls(
                f"{line.kind} sample is missing declared fields.\n\nFile: {path}\n\nRow: {line}\n\n"
                f"Declared fields: {d}\n\nMissing columns: {m}\n\nAvailable columns: {a}",
                f"Sample {line.kind} thiếu fields đã khai báo.\n\nFile: {path}\n\nHàng: {line}\n\n"
                f"Fields đã khai báo: {d}\n\nCột bị thiếu: {m}\n\nCột hiện có: {a}",
                file=path,
                line=line,
                **kw,
            )
        return cls(
            f"JSONL sample is missing declared fields.\n\nFile: {path}\n\nLine: {line}\n\n"
            f"Declared fields: {d}\n\nMissing fields: {m}\n\nAvailable keys: {a}",
            f"Sample JSONL thiếu fields đã khai báo.\n\nFile: {path}\n\nDòng: {line}\n\n"
            f"Fields đã khai báo: {d}\n\nFields bị thiếu: {m}\n\nKeys hiện có: {a}",
            file=path,
            line=line,
            **kw,
        )

    @classmethod
    def not_string(cls, path: str, line: int, field: str, found: str, **kw):
        """found: a JSON type; for a Row, an Arrow type (the column's) or null."""
        if isinstance(line, Row):
            return cls(
                f"{line.kind} sample field is not a string.\n\nFile: {path}\n\nRow: {line}\n\n"
                f"Column: {field}\n\nFound type: {found}",
                f"Field của sample {line.kind} không phải string.\n\nFile: {path}\n\nHàng: {line}\n\n"
                f"Cột: {field}\n\nKiểu hiện có: {found}",
                file=path,
                line=line,
                **kw,
            )
        return cls(
            f"JSONL sample field is not a string.\n\nFile: {path}\n\nLine: {line}\n\n"
            f"Field: {field}\n\nFound JSON type: {found}",
            f"Field của sample JSONL không phải string.\n\nFile: {path}\n\nDòng: {line}\n\n"
            f"Field: {field}\n\nKiểu JSON hiện có: {found}",
            file=path,
            line=line,
            **kw,
        )

    @classmethod
    def chat(cls, path: str, line: int, message: int | None, problem_en: str, problem_vi: str, **kw):
        """A conversation record (source.chat) MintDim cannot render: message is its 0-based index."""
        where_en = f"\n\nMessage: {message}" if message is not None else ""
        where_vi = f"\n\nTin nhắn: {message}" if message is not None else ""
        kind, at_en, at_vi = _at(line)
        return cls(
            f"{kind} conversation is not valid.\n\nFile: {path}\n\n{at_en}: {line}{where_en}\n\n"
            f"Problem: {problem_en}",
            f"Hội thoại {kind} không hợp lệ.\n\nFile: {path}\n\n{at_vi}: {line}{where_vi}\n\n"
            f"Vấn đề: {problem_vi}",
            file=path,
            line=line,
            **kw,
        )

    # a record's problems (mintdim/sources/chat.py read_messages): key is the record or message key, found the
    # JSON type found there; message is the 0-based index of the message in the record's list
    @classmethod
    def chat_no_messages(cls, path: str, line: int, key: str, keys: list[str], **kw):
        return cls.chat(
            path,
            line,
            None,
            f"the record has no key {key!r} (keys: {', '.join(keys)})",
            f"bản ghi không có key {key!r} (các key: {', '.join(keys)})",
            **kw,
        )

    @classmethod
    def chat_not_list(cls, path: str, line: int, key: str, found: str, **kw):
        return cls.chat(
            path,
            line,
            None,
            f"{key!r} must be a list of messages, found JSON type {found}",
            f"{key!r} phải là list tin nhắn, kiểu JSON hiện có: {found}",
            **kw,
        )

    @classmethod
    def chat_empty(cls, path: str, line: int, key: str, **kw):
        return cls.chat(
            path,
            line,
            None,
            f"{key!r} is an empty list: a conversation needs at least one message",
            f"{key!r} là list rỗng: hội thoại cần ít nhất một tin nhắn",
            **kw,
        )

    @classmethod
    def chat_system_not_string(cls, path: str, line: int, key: str, found: str, **kw):
        return cls.chat(
            path,
            line,
            None,
            f"the system prompt {key!r} must be a string, found JSON type {found}",
            f"system prompt {key!r} phải là string, kiểu JSON hiện có: {found}",
            **kw,
        )

    @classmethod
    def chat_message_not_object(cls, path: str, line: int, message: int, found: str, **kw):
        return cls.chat(
            path,
            line,
            message,
            f"a message must be a JSON object, found JSON type {found}",
            f"tin nhắn phải là JSON object, kiểu JSON hiện có: {found}",
            **kw,
        )

    @classmethod
    def chat_no_role(cls, path: str, line: int, message: int, key: str, **kw):
        return cls.chat(
            path,
            line,
            message,
            f"the message has no role (key {key!r})",
            f"tin nhắn không có role (key {key!r})",
            **kw,
        )

    @classmethod
    def chat_role_not_string(cls, path: str, line: int, message: int, key: str, found: str, **kw):
        return cls.chat(
            path,
            line,
            message,
            f"the role (key {key!r}) must be a string, found JSON type {found}",
            f"role (key {key!r}) phải là string, kiểu JSON hiện có: {found}",
            **kw,
        )

    @classmethod
    def chat_unknown_role(cls, path: str, line: int, message: int, role: str, roles: list[str], **kw):
        return cls.chat(
            path,
            line,
            message,
            f"unknown role {role!r} (source.chat.roles maps {', '.join(roles)})",
            f"role {role!r} không xác định (source.chat.roles ánh xạ {', '.join(roles)})",
            **kw,
        )

    @classmethod
    def chat_content(cls, path: str, line: int, message: int, key: str, found: str, **kw):
        """found: a JSON type, or "missing"."""
        return cls.chat(
            path,
            line,
            message,
            f"content (key {key!r}) must be a string or a list of text parts, found {found}",
            f"content (key {key!r}) phải là string hoặc list các phần text, hiện có: {found}",
            **kw,
        )

    @classmethod
    def chat_train_flag(cls, path: str, line: int, message: int, key: str, found: str, **kw):
        return cls.chat(
            path,
            line,
            message,
            f"the train flag (key {key!r}) must be true or false, found {found}",
            f"cờ train (key {key!r}) phải là true hoặc false, hiện có: {found}",
            **kw,
        )

    @classmethod
    def chat_two_systems(cls, path: str, line: int, message: int, key: str, **kw):
        return cls.chat(
            path,
            line,
            message,
            f"the record has both a system prompt {key!r} and a system message",
            f"bản ghi có cả system prompt {key!r} lẫn tin nhắn system",
            **kw,
        )

    @classmethod
    def chat_extra_not_objects(cls, path: str, line: int, key: str, **kw):
        return cls.chat(
            path,
            line,
            None,
            f"{key!r} must be a list of JSON objects (schemas)",
            f"{key!r} phải là list JSON object (schema)",
            **kw,
        )

    @classmethod
    def chat_tool_calls_not_list(cls, path: str, line: int, message: int, found: str, **kw):
        return cls.chat(
            path,
            line,
            message,
            f"'tool_calls' must be a list of tool calls, found JSON type {found}",
            f"'tool_calls' phải là list các tool call, kiểu JSON hiện có: {found}",
            **kw,
        )

    @classmethod
    def chat_tool_call(cls, path: str, line: int, message: int, found: str, **kw):
        return cls.chat(
            path,
            line,
            message,
            f"a tool call must be a JSON object with a function {{name, arguments}}, found JSON type {found}",
            f"tool call phải là JSON object có function {{name, arguments}}, kiểu JSON hiện có: {found}",
            **kw,
        )

    @classmethod
    def chat_tool_call_name(cls, path: str, line: int, message: int, **kw):
        return cls.chat(
            path,
            line,
            message,
            "a tool call's function has no name (a string)",
            "function của tool call không có name (string)",
            **kw,
        )

    @classmethod
    def chat_tool_call_arguments(cls, path: str, line: int, message: int, name: str, found: str, **kw):
        """found: what the arguments are ("missing", "JSON type array", "a string that is not JSON", ...)."""
        vi_found = (
            found.replace("a string that is not JSON", "string không phải JSON")
            .replace("a string holding JSON type", "string chứa kiểu JSON")
            .replace("JSON type", "kiểu JSON")
        )
        return cls.chat(
            path,
            line,
            message,
            f"arguments of tool call {name!r} must be a JSON object or a string holding one, found {found}",
            f"arguments của tool call {name!r} phải là JSON object hoặc string chứa JSON object, "
            f"hiện có: {vi_found}",
            **kw,
        )

    @classmethod
    def chat_kwargs_not_object(cls, path: str, line: int, key: str, found: str, **kw):
        return cls.chat(
            path,
            line,
            None,
            f"{key!r} must be a JSON object (template variables), found JSON type {found}",
            f"{key!r} phải là JSON object (các biến của template), kiểu JSON hiện có: {found}",
            **kw,
        )

    @classmethod
    def chat_kwargs_reserved(cls, path: str, line: int, key: str, names: list[str], **kw):
        return cls.chat(
            path,
            line,
            None,
            f"{key!r} may not set {', '.join(names)}: MintDim passes messages, tools, "
            "documents and add_generation_prompt itself",
            f"{key!r} không được đặt {', '.join(names)}: MintDim tự truyền messages, tools, documents "
            "và add_generation_prompt",
            **kw,
        )

    @classmethod
    def chat_no_parts(cls, path: str, line: int, message: int, key: str, **kw):
        return cls.chat(
            path,
            line,
            message,
            f"content (key {key!r}) is an empty list of parts",
            f"content (key {key!r}) là list rỗng",
            **kw,
        )

    @classmethod
    def chat_part_type(cls, path: str, line: int, message: int, kind, **kw):
        """kind: the part's "type" value, or the JSON type of a part that is no object."""
        return cls.chat(
            path,
            line,
            message,
            f"content part of type {kind!r}: only text parts "
            '({"type": "text", "text": ...}) can be rendered',
            f'phần content kiểu {kind!r}: chỉ render được phần text ({{"type": "text", "text": ...}})',
            **kw,
        )


class ChatTemplateError(MintDimError):
    """The chat template raised on a conversation, or a trained span could not be located exactly."""

    @classmethod
    def raised(cls, path: str, line: int, message: str, **kw):
        _kind, at_en, at_vi = _at(line)
        return cls(
            f"The chat template raised an error on this conversation.\n\nFile: {path}\n\n{at_en}: {line}\n\n"
            f"Template message: {message}",
            f"Chat template báo lỗi với hội thoại này.\n\nFile: {path}\n\n{at_vi}: {line}\n\n"
            f"Thông báo của template: {message}",
            file=path,
            line=line,
            **kw,
        )

    @classmethod
    def unlocated(cls, path: str, line: int, message: int, role: str, **kw):
        _kind, at_en, at_vi = _at(line)
        err = cls(
            f"The loss mask of a trained message cannot be located exactly in the rendered conversation.\n\n"
            f"File: {path}\n\n{at_en}: {line}\n\nMessage: {message} (role {role})\n\n"
            "Problem: the chat template does not render this message's content as a part of it (it rewrites "
            "the text), so MintDim cannot tell which tokens to train; no mask is guessed\n\n"
            "Fix: use a template that renders the content verbatim (or with {% generation %} tags), or do "
            "not train this message",
            "Không xác định chính xác được loss mask của một tin nhắn được train trong hội thoại đã "
            f"render.\n\nFile: {path}\n\n{at_vi}: {line}\n\nTin nhắn: {message} (role {role})\n\n"
            "Vấn đề: chat template không render nội dung tin nhắn này thành một phần của nó (template viết "
            "lại văn bản), nên MintDim không biết token nào cần train; MintDim không đoán mask\n\n"
            "Cách sửa: dùng template render nguyên văn nội dung (hoặc có thẻ {% generation %}), hoặc không "
            "train tin nhắn này",
            file=path,
            line=line,
            **kw,
        )
        err.not_a_record = True  # the template rewrites the text: a fault of the template, not of the record
        return err

    @classmethod
    def dropped(
        cls,
        path: str,
        line: int,
        message: int | None,
        role: str,
        call: str | None,
        roles,
        system_key: str | None = None,
        **kw,
    ):
        """A message the template did not render (or one of its tool calls, `call`); roles: the roles the
        template names (jinja_env.template_roles), empty when it names none. message None: the record's
        system prompt key (source.chat.system), named by system_key."""
        where = message if message is not None else f"system prompt {system_key!r}"
        what_en = f"its tool call {call!r}" if call else "its content"
        what_vi = f"tool call {call!r} của tin nhắn" if call else "nội dung của tin nhắn"
        named_en = f" (the template names the roles {', '.join(roles)})" if roles else ""
        named_vi = f" (template có các role {', '.join(roles)})" if roles else ""
        if call:
            fix_en = (
                "use a chat template that writes tool calls: tokenizer: {hf_dir: {path: ..., chat_template: "
                "FILE}}"
            )
            fix_vi = (
                "dùng chat template có viết tool call: tokenizer: {hf_dir: {path: ..., chat_template: FILE}}"
            )
        else:
            fix_en = (
                f"map the role to one the template renders (source.chat.roles), or, to let the template drop "
                f"this role's messages, list it: source.chat.drop_roles: [{role}]"
            )
            fix_vi = (
                f"ánh xạ role sang một role mà template render (source.chat.roles), hoặc, để template bỏ các "
                f"tin nhắn của role này, liệt kê nó: source.chat.drop_roles: [{role}]"
            )
        return cls(
            "A message is missing from the rendered conversation: the chat template dropped it.\n\n"
            f"File: {path}\n\nLine: {line}\n\nMessage: {where} (role {role})\n\n"
            f"Problem: {what_en} is not in the rendered conversation{named_en}; MintDim never drops a "
            f"message silently\n\nFix: {fix_en}",
            f"Một tin nhắn bị thiếu trong hội thoại đã render: chat template đã bỏ nó.\n\nFile: {path}\n\n"
            f"Dòng: {line}\n\nTin nhắn: {where} (role {role})\n\n"
            f"Vấn đề: {what_vi} không có trong hội thoại đã render{named_vi}; MintDim không bao giờ âm thầm "
            f"bỏ một tin nhắn\n\nCách sửa: {fix_vi}",
            file=path,
            line=line,
            **kw,
        )

    @classmethod
    def missing(cls, tokenizer: str, **kw):
        return cls(
            f"No chat template was found for source.chat.\n\nTokenizer: {tokenizer}\n\n"
            "Looked for: chat_template.jinja beside tokenizer.json, chat_template in "
            "tokenizer_config.json\n\nFix: name a Jinja template file: tokenizer: {hf_dir: {path: ..., "
            "chat_template: FILE}}",
            f"Không tìm thấy chat template cho source.chat.\n\nTokenizer: {tokenizer}\n\n"
            "Đã tìm: chat_template.jinja cạnh tokenizer.json, chat_template trong tokenizer_config.json\n\n"
            "Cách sửa: chỉ định file template Jinja: tokenizer: {hf_dir: {path: ..., chat_template: FILE}}",
            **kw,
        )

    @classmethod
    def invalid(cls, template: str, problem: str, **kw):
        return cls(
            f"The chat template cannot be compiled.\n\nTemplate: {template}\n\nProblem: {problem}",
            f"Không biên dịch được chat template.\n\nTemplate: {template}\n\nVấn đề: {problem}",
            **kw,
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
TRAIN_MIN_VOCAB = 258  # 256 bytes + <unk> + <pad> (mintdim/tokenizers/training.py)
TRAIN_RULES_EN = [
    "train_bpe config must be a dict with keys: vocab_size, out (unit, hot_pair_window_size optional)",
    f"vocab_size is an int >= {TRAIN_MIN_VOCAB} (256 bytes + <unk> + <pad>)",
    "unit is byte or unicode (default byte)",
    "out is a directory path: new, empty, or a model MintDim trained from the same files and options",
    "hot_pair_window_size is a positive int (bounds trainer memory, same result)",
]
TRAIN_RULES_VI = [
    "config train_bpe phải là dict có key: vocab_size, out (unit, hot_pair_window_size tuỳ chọn)",
    f"vocab_size là số nguyên >= {TRAIN_MIN_VOCAB} (256 byte + <unk> + <pad>)",
    "unit là byte hoặc unicode (mặc định byte)",
    "out là đường dẫn thư mục: mới, rỗng, hoặc model MintDim đã train từ cùng file và tuỳ chọn",
    "hot_pair_window_size là số nguyên dương (giới hạn bộ nhớ trainer, cùng kết quả)",
]


# Each component reports only its own rules (the spec); `config` is the spec's list. A train_bpe
# component "train_bpe.<key>" reports that key's rule, "train_bpe" (the whole item) all of them.
_TOK_COMPONENT_RULES = {
    "path": (
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
    "pad_token": (
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
    "chat_template": (
        [
            "chat_template (hf_dir, optional) is the path (string) of a Jinja chat template file, "
            "used instead of the directory's own"
        ],
        [
            "chat_template (hf_dir, tuỳ chọn) là đường dẫn (string) tới file chat template Jinja, "
            "dùng thay cho template của thư mục"
        ],
    ),
    "kind": (
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
}


def _tok_rules(component: str) -> tuple[list[str], list[str]]:
    if component.startswith("train_bpe"):
        key = component.partition(".")[2]
        if not key:
            return TRAIN_RULES_EN, TRAIN_RULES_VI
        return (
            [r for r in TRAIN_RULES_EN if r.startswith(key + " ")],
            [r for r in TRAIN_RULES_VI if r.startswith(key + " ")],
        )
    return _TOK_COMPONENT_RULES.get(component, (_TOK_RULES_EN, _TOK_RULES_VI))


class TokenizerValidationError(MintDimError):
    @classmethod
    def config(cls, en_problem: str, vi_problem: str, component: str = "config", **kw):
        rules_en, rules_vi = _tok_rules(component)
        return cls(
            f"Invalid tokenizer config.\n\nComponent: {component}\n\nProblem: {en_problem}\n\n"
            f"Rules:\n\n{_bullets(rules_en)}",
            f"Cấu hình tokenizer không hợp lệ.\n\nThành phần: {component}\n\nVấn đề: {vi_problem}\n\n"
            f"Quy tắc:\n\n{_bullets(rules_vi)}",
            **kw,
        )

    @classmethod
    def unknown_keys(cls, keys: list[str], **kw):
        return cls.config(
            f"tokenizer config has unknown keys: {keys!r}. unk_id and pad_id are loaded from the tokenizer "
            "library.",
            f"config tokenizer có key không hợp lệ: {keys!r}. unk_id và pad_id được lấy từ thư viện "
            "tokenizer.",
            **kw,
        )

    @classmethod
    def unsupported(cls, detail_en: str | None = None, detail_vi: str | None = None, **kw):
        en = (
            "Unsupported tokenizer format.\n\nSupported formats:\n\n"
            "• sentencepiece (.model)\n• huggingface tokenizer (.json)"
        )
        vi = (
            "Định dạng tokenizer chưa được hỗ trợ.\n\nCác định dạng hiện hỗ trợ:\n\n"
            "• sentencepiece (.model)\n• huggingface tokenizer (.json)"
        )
        if detail_en:
            en += f"\n\n{detail_en}"
            vi += f"\n\n{detail_vi or detail_en}"
        en += (
            "\n\nAlso supported: unitoken (a model directory saved by ffbpe: ffbpe.json, vocab.json, "
            "merges.txt), train_bpe (trains one from the data), and hf_dir (a model's tokenizer directory: "
            "tokenizer.json + tokenizer_config.json)."
        )
        vi += (
            "\n\nCũng được hỗ trợ: unitoken (thư mục model do ffbpe lưu: ffbpe.json, vocab.json, "
            "merges.txt), train_bpe (train từ dữ liệu), và hf_dir (thư mục tokenizer của model: "
            "tokenizer.json + tokenizer_config.json)."
        )
        return cls(en, vi, **kw)

    # the config check's problems (mintdim/config.py): the block, then one {path} item
    @classmethod
    def not_mapping(cls, got: str, **kw):
        return cls.config(
            f"tokenizer must be a mapping with one key (sentencepiece or hf_json), got {got}",
            f"tokenizer phải là mapping có một key (sentencepiece hoặc hf_json), hiện tại là {got}",
            **kw,
        )

    @classmethod
    def kinds(cls, kinds: list[str], **kw):
        return cls.config(
            f"declare exactly one tokenizer kind, got {kinds!r}",
            f"chỉ khai báo đúng một loại tokenizer, hiện tại là {kinds!r}",
            **kw,
        )

    @classmethod
    def unknown_kind(cls, kind: str, known=(), **kw):
        err = cls.unsupported(f"Declared kind: {kind}", f"Loại đã khai báo: {kind}", **kw)
        hint_en, hint_vi = _did_you_mean([kind], known)
        err.en += hint_en
        err.vi += hint_vi
        return err.with_lang(err.lang)

    @classmethod
    def extension(cls, kind: str, path: str, directory: bool = False, has_tokenizer_json: bool = False, **kw):
        """A file kind's path without its extension; `directory`: the path is a directory (a model's
        tokenizer directory, usually), and `has_tokenizer_json`: it holds a tokenizer.json."""
        err = cls.unsupported(
            f"Declared: {kind} with path {path}", f"Đã khai báo: {kind} với path {path}", **kw
        )
        if directory:
            err.en += f"\n\n{path} is a directory: {kind} takes a file."
            err.vi += f"\n\n{path} là một thư mục: {kind} cần một file."
        if directory and kind == "hf_json":
            inner = f"{path.rstrip('/')}/tokenizer.json"
            err.en += (
                f" Fix: a model's tokenizer directory is read by kind hf_dir: "
                f"tokenizer: {{hf_dir: {{path: {path}}}}}"
            )
            err.vi += (
                f" Cách sửa: thư mục tokenizer của model được đọc bằng loại hf_dir: "
                f"tokenizer: {{hf_dir: {{path: {path}}}}}"
            )
            if has_tokenizer_json:
                err.en += f"; or its tokenizer.json alone: tokenizer: {{hf_json: {{path: {inner}}}}}"
                err.vi += f"; hoặc chỉ file tokenizer.json của nó: tokenizer: {{hf_json: {{path: {inner}}}}}"
        return err.with_lang(err.lang)

    @classmethod
    def unloadable(cls, kind: str, path: str, reason: str, **kw):
        """Pre-flight: the tokenizer library could not read the file (its own words in `reason`)."""
        return cls.unsupported(
            f"The file could not be loaded as {kind}: {path} ({reason})",
            f"Không tải được file dạng {kind}: {path} ({reason})",
            **kw,
        )

    @classmethod
    def item_not_dict(cls, got: str, **kw):
        return cls.config(
            f"tokenizer config must be a dict with key: path, got {got}",
            f"config tokenizer phải là dict có key: path, hiện tại là {got}",
            **kw,
        )

    @classmethod
    def missing_path(cls, **kw):
        return cls.config("tokenizer config is missing key: path", "config tokenizer thiếu key: path", **kw)

    @classmethod
    def path_not_string(cls, got: str, **kw):
        return cls.config(
            f"path must be a string, got {got}",
            f"path phải là string, hiện tại là {got}",
            component="path",
            **kw,
        )

    @classmethod
    def path_empty(cls, **kw):
        return cls.config(
            "path must be a non-empty string, got an empty string",
            "path phải là string không rỗng, hiện tại là string rỗng",
            component="path",
            **kw,
        )

    # tokenizer.train_bpe (mintdim/tokenizers/training.py): its own rules
    @classmethod
    def train(cls, en_problem: str, vi_problem: str, component: str = "train_bpe", **kw):
        return cls.config(en_problem, vi_problem, component=component, **kw)

    @classmethod
    def train_not_dict(cls, got: str, **kw):
        return cls.train(
            f"train_bpe config must be a dict, got {got}",
            f"config train_bpe phải là dict, hiện tại là {got}",
            **kw,
        )

    @classmethod
    def train_unknown_keys(cls, keys: list[str], **kw):
        return cls.train(
            f"train_bpe config has unknown keys: {keys!r}",
            f"config train_bpe có key không hợp lệ: {keys!r}",
            **kw,
        )

    @classmethod
    def train_missing_keys(cls, keys: list[str], **kw):
        return cls.train(
            f"train_bpe config is missing keys: {keys!r}", f"config train_bpe thiếu key: {keys!r}", **kw
        )

    @classmethod
    def train_vocab_size(cls, got, **kw):
        return cls.train(
            f"vocab_size must be an int >= {TRAIN_MIN_VOCAB}, got {got!r}",
            f"vocab_size phải là số nguyên >= {TRAIN_MIN_VOCAB}, hiện tại là {got!r}",
            component="train_bpe.vocab_size",
            **kw,
        )

    @classmethod
    def train_unit(cls, got, **kw):
        return cls.train(
            f"unit must be byte or unicode, got {got!r}",
            f"unit phải là byte hoặc unicode, hiện tại là {got!r}",
            component="train_bpe.unit",
            **kw,
        )

    @classmethod
    def train_out(cls, got, **kw):
        return cls.train(
            f"out must be a non-empty path (string), got {got!r}",
            f"out phải là đường dẫn (string) không rỗng, hiện tại là {got!r}",
            component="train_bpe.out",
            **kw,
        )

    @classmethod
    def train_window(cls, got, **kw):
        return cls.train(
            f"hot_pair_window_size must be a positive int, got {got!r}",
            f"hot_pair_window_size phải là số nguyên dương, hiện tại là {got!r}",
            component="train_bpe.hot_pair_window_size",
            **kw,
        )

    @classmethod
    def train_options_differ(cls, first: str, second: str, out: str, **kw):
        return cls.train(
            f"files {first} and {second} train the same out {out} with different options",
            f"file {first} và {second} train cùng out {out} với tuỳ chọn khác nhau",
            component="train_bpe.out",
            **kw,
        )

    @classmethod
    def train_out_overlaps(cls, out: str, other: str, what: str = "output", **kw):
        """`out` inside or around an output directory (what=output) or the work directory (what=work)."""
        if what == "work":
            return cls.train(
                f"out {out} overlaps the work directory {other}",
                f"out {out} trùng với thư mục làm việc {other}",
                component="train_bpe.out",
                **kw,
            )
        return cls.train(
            f"out {out} overlaps the output directory {other}",
            f"out {out} trùng với thư mục output {other}",
            component="train_bpe.out",
            **kw,
        )

    @classmethod
    def train_out_is_input(cls, out: str, **kw):
        return cls.train(
            f"out {out} is an input file", f"out {out} là file đầu vào", component="train_bpe.out", **kw
        )

    # tokenizer.hf_dir's options, and source.chat's tokenizer
    @classmethod
    def option_not_string(cls, key: str, got, **kw):
        return cls.config(
            f"{key} must be a non-empty string, got {got!r}",
            f"{key} phải là string không rỗng, hiện tại là {got!r}",
            component=key,
            **kw,
        )

    @classmethod
    def two_pad_tokens(cls, path: str, **kw):
        return cls.config(
            f"tokenizer {path} is declared with two pad_token values",
            f"tokenizer {path} được khai báo với hai giá trị pad_token",
            component="pad_token",
            **kw,
        )

    @classmethod
    def chat_needs_hf_dir(cls, kind: str, **kw):
        return cls.config(
            f"source.chat renders conversations with the model's chat template: use the hf_dir "
            f"tokenizer kind (a tokenizer directory), not {kind}",
            f"source.chat render hội thoại bằng chat template của model: dùng loại tokenizer hf_dir "
            f"(thư mục tokenizer), không phải {kind}",
            component="kind",
            **kw,
        )

    @classmethod
    def dir_expected(cls, kind: str, path: str, parent: str, missing: list[str] | None = None, **kw):
        """A directory kind (hf_dir, unitoken) declared with a file's path: the fix names its directory
        when that holds the kind's files; else (`missing`: those it lacks) what such a directory holds,
        and for hf_dir given a .json file, the hf_json kind that reads the file alone."""
        err = cls.config(
            f"{kind} expects a tokenizer directory, but path {path} is a file",
            f"{kind} cần một thư mục tokenizer, nhưng path {path} là một file",
            component="path",
            **kw,
        )
        if not missing:
            err.en += f"\n\nFix: name its directory: tokenizer: {{{kind}: {{path: {parent}}}}}"
            err.vi += f"\n\nCách sửa: chỉ định thư mục chứa nó: tokenizer: {{{kind}: {{path: {parent}}}}}"
            return err.with_lang(err.lang)
        what_en, what_vi = TOKENIZER_DIRS[kind][:2]
        holds_en, holds_vi = tokenizer_dir_holds(kind)
        err.en += f"\n\n{parent} is not {what_en}: it has no {', no '.join(missing)}. {holds_en}"
        err.vi += f"\n\n{parent} không phải {what_vi}: không có {', '.join(missing)}. {holds_vi}"
        if kind == "hf_dir" and path.endswith(".json"):
            err.en += (
                "\n\nFix: a tokenizer.json file alone is read by kind hf_json: "
                f"tokenizer: {{hf_json: {{path: {path}}}}}"
            )
            err.vi += (
                f"\n\nCách sửa: một file tokenizer.json riêng lẻ được đọc bằng loại hf_json: "
                f"tokenizer: {{hf_json: {{path: {path}}}}}"
            )
        return err.with_lang(err.lang)


# a directory tokenizer kind: its name in messages, and the files it holds (required, then the optional ones)
TOKENIZER_DIRS = {
    "hf_dir": (
        "a tokenizer directory",
        "thư mục tokenizer",
        ("tokenizer.json", "tokenizer_config.json"),
        ("special_tokens_map.json", "chat_template.jinja"),
    ),
    "unitoken": (
        "a unitoken model directory",
        "thư mục model unitoken",
        ("ffbpe.json", "vocab.json", "merges.txt"),
        (),
    ),
}


def tokenizer_dir_holds(kind: str) -> tuple[str, str]:
    """What a directory kind's directory holds, as one sentence (English, Vietnamese)."""
    _en, _vi, required, optional = TOKENIZER_DIRS[kind]
    need = f"{', '.join(required[:-1])} and {required[-1]}"
    need_vi = f"{', '.join(required[:-1])} và {required[-1]}"
    if kind == "hf_dir":
        return (
            f"A tokenizer directory (hf_dir) holds {need} ({', '.join(optional)} too when the model has "
            "them): what transformers' save_pretrained writes.",
            f"Thư mục tokenizer (hf_dir) gồm {need_vi} (thêm {', '.join(optional)} nếu model có): "
            "những file mà save_pretrained của transformers ghi ra.",
        )
    return (
        f"A unitoken model directory holds {need}: what ffbpe's save_pretrained writes.",
        f"Thư mục model unitoken gồm {need_vi}: những file mà save_pretrained của ffbpe ghi ra.",
    )


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

    @classmethod
    def dir_pad(cls, path: str, candidates: list[str], total: int, declared: str | None = None, **kw):
        """hf_dir: the directory declares no pad_token (Llama-3.1), or the config's pad_token is no token."""
        en = (
            "Tokenizer library did not expose a required special token.\n\nSpecial token: pad_id\n\n"
            f"Tokenizer: {path}"
        )
        vi = (
            "Thư viện tokenizer không cung cấp special token bắt buộc.\n\nSpecial token: pad_id\n\n"
            f"Tokenizer: {path}"
        )
        if declared is not None:
            en += (
                f"\n\nProblem: pad_token {_quoted(declared)} is not a token of this tokenizer (no new id is "
                "added)"
            )
            vi += (
                f"\n\nVấn đề: pad_token {_quoted(declared)} không phải token của tokenizer này (không thêm "
                "id mới)"
            )
        else:
            en += (
                "\n\nProblem: the directory declares no pad_token (tokenizer_config.json, "
                "special_tokens_map.json)"
            )
            vi += (
                "\n\nVấn đề: thư mục không khai báo pad_token (tokenizer_config.json, "
                "special_tokens_map.json)"
            )
        shown = ", ".join(_quoted(c) for c in candidates)
        more = f" (and {total - len(candidates)} more)" if total > len(candidates) else ""
        more_vi = f" (và {total - len(candidates)} token khác)" if total > len(candidates) else ""
        example = _quoted(candidates[0]) if candidates else '"<string>"'
        en += (
            f"\n\nExisting special tokens it could pad with: {shown or 'none'}{more}\n\n"
            f"Fix: name one in the tokenizer block: hf_dir: {{path: {path}, pad_token: {example}}}"
        )
        vi += (
            f"\n\nCác special token hiện có có thể dùng để pad: {shown or 'không có'}{more_vi}\n\n"
            f"Cách sửa: chỉ định một token trong khối tokenizer: hf_dir: {{path: {path}, pad_token: "
            f"{example}}}"
        )
        return cls(en, vi, **kw)


class _MappingError(MintDimError):
    """A config list per file (`arity`: one shared, or one per file) and what the files of one output share
    (`collision`): one shape each, in every subclass's words."""

    @classmethod
    def collision(cls, block: str, output: str, files: list[str], values: list, **kw):
        return cls.message("collision", block, output, [f"{f}: {v}" for f, v in zip(files, values)], **kw)


class TokenizerMappingError(_MappingError):
    pass


class FieldMappingError(_MappingError):
    pass


class TemplateMappingError(_MappingError):
    pass


class UnitMappingError(_MappingError):
    pass


class OutputMappingError(_MappingError):
    pass


class TemplateFieldMismatchError(MintDimError):
    pass


class TemplateTokenizerError(MintDimError):
    @classmethod
    def make(cls, file_index: int, template: str, literal: str | None = None, **kw):
        """literal: the template's static part that encodes to UNK, when known."""
        return cls.message("unk" if literal is None else "unk_literal", file_index, template, literal, **kw)


def extended(err: MintDimError, key: str, **fields) -> MintDimError:
    """err with the catalogue entry `key` (of its class or a base) after its texts."""
    more = err.texts(key, **fields)
    err.en += more.en
    err.vi += more.vi
    return err.with_lang(err.lang)


def _unit_rules(keys) -> Both:
    """The rules of these unit keys, then that each planning key applies only with sizes: auto (the spec's
    list when there is no key, or one without rules of its own)."""
    keys = [keys] if isinstance(keys, str) else list(keys)
    if not keys or any(k not in UNIT_RULES for k in keys):
        keys = [""]
    rules = [r for k in keys for r in UNIT_RULES[k]] + [AUTO_ONLY[k] for k in keys if k in AUTO_ONLY]
    return Both([r.en for r in rules], [r.vi for r in rules])


class UnitValidationError(MintDimError):
    @classmethod
    def texts(cls, key: str, **fields) -> Both:
        """A problem under the rules of the unit keys it is about: its `keys` or `option`, else those
        UNIT_PROBLEM_KEYS names."""
        problem = super().texts(key, **fields)
        keys = fields.get("keys") or fields.get("option") or UNIT_PROBLEM_KEYS.get(key, ())
        return super().texts("rules", problem=problem, rules=_unit_rules(keys))

    @classmethod
    def pack(cls, problem: str, value=None, **kw):
        """units.pack / units.overflow: problem is both, pack or overflow."""
        return cls.message("pack_" + problem, value, **kw)


class UnitOverflowError(MintDimError):
    @classmethod
    def counted(cls, samples: list, count: int, max_unit: int, packed: bool = False, longest=None, **kw):
        """The spec's text for the first over-long sample, then how many there are in the output, the first
        few by file:line (samples: (path, line, token_count), in input order), and what to do. packed
        (units.pack): the row length is `max_unit`; `longest`, the longest sample's token count, is the
        row length that holds them all."""
        err = cls.make(*samples[0], max_unit, **kw)
        return extended(
            err,
            "counted_packed" if packed else "counted",
            many=cls.texts("one" if count == 1 else "many", count=count),
            max_unit=max_unit,
            first=cls.texts("first", n=len(samples)) if count > len(samples) else "",
            samples=[cls.texts("listed", path=p, n=n, tokens=c) for p, n, c in samples],
            longest=max(c for *_, c in samples) if longest is None else longest,
        )


class OutputValidationError(MintDimError):
    @classmethod
    def texts(cls, key: str, how: str | None = None, **fields) -> Both:
        """{how}: the command that rebuilds, in the words of the run that refused (`mintdim build my.yaml
        --rebuild`, `job.run(rebuild=True)`); unknown: the same command with --rebuild."""
        how = f"`{how}`" if how else super().texts("rebuild_how")
        return super().texts(key, how=how, **fields)

    @classmethod
    def other_config(cls, directory: str, build_id: str, changes: list[str], how: str | None = None, **kw):
        changed = cls.texts("config_changes", changes=changes) if changes else ""
        return cls.message("other_config", directory, build_id, changed, how, **kw)

    @classmethod
    def not_only_ours(cls, directory: str, files: list[str], **kw):
        return cls.message("not_only_ours", directory, files or ["?"], **kw)

    @classmethod
    def failed_verification(cls, path: str, count: int, first: str, **kw):
        return cls.message("failed_verification", path, count, first, "" if count == 1 else "s", **kw)

    @classmethod
    def checksums_differ(cls, path: str, differ: list[str], missing: list[str], extra: list[str], **kw):
        """The files of a finished output are not the ones its checksums.sha256 records, each kind listed
        up to CHECKSUM_FILES_SHOWN."""
        sections = []
        for kind, files in (("changed", differ), ("missing", missing), ("extra", extra)):
            listed = files[:CHECKSUM_FILES_SHOWN]
            if len(files) > CHECKSUM_FILES_SHOWN:
                listed.append(cls.texts("checksums_more", n=len(files) - CHECKSUM_FILES_SHOWN, path=path))
            if files:
                sections.append(cls.texts("checksums_" + kind, files=listed))
        both = Both("\n\n".join(t.en for t in sections), "\n\n".join(t.vi for t in sections))
        return cls.message("checksums_differ", path, both, **kw)


CHECKSUM_FILES_SHOWN = 20  # files named per kind in OutputValidationError.checksums_differ


class TokenDTypeValidationError(MintDimError):
    @classmethod
    def make(cls, vocab_size: int | None = None, **kw):
        return cls.message("too_large" if vocab_size is None else "too_large_vocab", vocab_size, **kw)


class SamplesPerShardError(MintDimError):
    pass


class BuildError(MintDimError):
    @classmethod
    def already_running(cls, root: str, pid: str, **kw):
        return cls.message(
            "already_running", root, cls.texts("who_pid" if pid else "who_unknown", pid=pid), **kw
        )

    @classmethod
    def job_failed(
        cls, stage: str, cause: str, paths: str | None = None, named: bool = True, space: bool = False, **kw
    ):
        """A job failed without a MintDim error (an OSError, a bug): its cause, the path where there
        is one (named: the system named it; else where the job writes), advice when a disk is full."""
        where = cls.texts("path_named" if named else "path_writing", paths=paths) if paths else ""
        return cls.message("job_failed", stage, cause, where, cls.texts("full") if space else "", **kw)


class MissingExtraError(MintDimError, ImportError):
    @classmethod
    def make(cls, what: str, extra: str | None, package: str, **kw):
        how = cls.texts(
            "pip" if extra is None else "pip_extra_or" if package else "pip_extra",
            extra=extra,
            package=package,
        )
        return cls.message("needs", what, package, how, **kw)


class ClusterError(MintDimError):
    @classmethod
    def no_partition(cls, partition: str, known: list[str], **kw):
        return cls.message("no_partition", partition, known or ["(none)"], **kw)

    @classmethod
    def no_status(cls, command: str, answer: str, other: str | None, **kw):
        advice = cls.texts("status_other" if other else "status_any", other=other)
        return cls.message("no_status", command, answer, advice, **kw)

    @classmethod
    def short_min_job_age(cls, age: int | None, needed: int, sacct: str | None, **kw):
        seen = f"{age} s" if age is not None else cls.texts("age_unknown")
        said = sacct.strip().splitlines()[0] if sacct and sacct.strip() else "no answer"
        why = cls.texts("sacct_said", said=said) if sacct else ""
        return cls.message("short_min_job_age", seen, needed, why, **kw)


class UsageError(MintDimError):
    @classmethod
    def sample_range(cls, sample: int, count: int, out: str, **kw):
        return cls.message("sample_range", sample, count, out, count - 1, **kw)


class ExportError(MintDimError):
    pass


class TokenizerToolError(MintDimError):
    @classmethod
    def merges_line(cls, path: str, line: str, **kw):
        return cls.message("merges_line", path, line[:80], **kw)


def schema_violation(path: list, message: str) -> MintDimError:
    """A JSON Schema violation no named problem words (jsonschema's own English, in both texts), with the
    error class of the block it is in."""
    where = ".".join(str(p) for p in path) or "config"
    text = f"{where}: {message}"
    block, sub = (list(path) + [None, None])[:2]
    if block == "tokenizer":
        return TokenizerValidationError.config(text, text)
    if block == "units":
        return UnitValidationError.invalid(text, [sub])
    if block == "output" and sub == "samples_per_shard":
        return SamplesPerShardError.invalid(text)
    if block == "output":
        return OutputValidationError.invalid(text)
    if block == "source" and sub == "fields":
        return FieldMappingError.invalid(text)
    if block == "source" and sub == "templates":
        return TemplateMappingError.invalid(text)
    return PipelineValidationError.invalid(text, text)


def markdown_sections(err: MintDimError) -> str:
    """The error in both languages as two Markdown sections, English first (the body of a failure marker,
    mintdim/formats/records.py)."""
    return f"## Error\n\n```\n{err.render('en')}\n```\n\n## Lỗi\n\n```\n{err.render('vi')}\n```\n"


ERROR_CLASSES = {
    cls.__name__: cls
    for cls in [
        MintDimError,
        PipelineValidationError,
        MintDimFileNotFoundError,
        SourceParseError,
        SampleSchemaError,
        TokenizerValidationError,
        TokenizerSpecialTokenError,
        TokenizerMappingError,
        FieldMappingError,
        TemplateMappingError,
        TemplateFieldMismatchError,
        TemplateTokenizerError,
        UnitMappingError,
        OutputMappingError,
        UnitValidationError,
        UnitOverflowError,
        OutputValidationError,
        TokenDTypeValidationError,
        SamplesPerShardError,
        BuildError,
        TokenizerToolError,
        ChatTemplateError,
        MissingExtraError,
        UsageError,
        ExportError,
        ClusterError,
    ]
}

__all__ = list(ERROR_CLASSES) + ["LANGS"]

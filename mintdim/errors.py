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

LANGS = ("en", "vi", "both")


def _bullets(items) -> str:
    return "\n".join(f"• {item}" for item in items)


def _rebuild_how(how: str | None) -> tuple[str, str]:
    """How to rebuild, in the words of the run that refused: `mintdim build my.yaml --rebuild`,
    `job.run(rebuild=True)`; unknown: the option by name."""
    if how:
        return f"`{how}`", f"`{how}`"
    return "the same `mintdim build` command with --rebuild", "lại lệnh `mintdim build` đó với --rebuild"


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
        if spec == "bullets":
            return "\n".join(f"• {item}" for item in value)
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


# mintdim/config.py (the config check), mintdim/stages/preflight.py and the plan stage (source.take of
# an empty file), mintdim/api.py (an unknown pipeline): texts in mintdim/catalogue/config.py
class PipelineValidationError(MintDimError):
    @classmethod
    def invalid(cls, en_problem: str, vi_problem: str, **kw):
        """A problem the catalogue has no entry for, in both languages."""
        return cls.message("invalid", Both(en_problem, vi_problem), **kw)

    @classmethod
    def unknown_keys(cls, unknown: list[str], known, block: str | None = None, **kw):
        """Unknown keys, each with the closest known key when there is one (difflib)."""
        hint = Both(*_did_you_mean(unknown, known))
        if block:
            return cls.message("unknown_block_keys", block, unknown, hint, **kw)
        return cls.message("unknown_config_keys", unknown, hint, **kw)


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


def _mapping_texts(
    what_en: str,
    what_vi: str,
    n_files: int,
    n_items: int,
    shared_en: str,
    mapped_en: str,
    shared_vi: str,
    mapped_vi: str,
    files_word: str = "input files",
):
    en = (
        f"Received {n_files} {files_word} but {n_items} {what_en}.\n\nMintDim supports:\n\n"
        f"• {shared_en}\n• {mapped_en}"
    )
    vi = (
        f"Nhận {n_files} file đầu vào nhưng chỉ có {n_items} {what_vi}.\n\nMintDim hỗ trợ:\n\n"
        f"• {shared_vi}\n• {mapped_vi}"
    )
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
        en = (
            f"Files that share one output directory must share its {block}.\n\n"
            f"Output directory: {output}\n\nFiles and their {block}:\n\n{en_vals}"
        )
        vi = (
            f"Các file dùng chung một thư mục output phải dùng chung {block}.\n\n"
            f"Thư mục output: {output}\n\nCác file và {block} của chúng:\n\n{en_vals}"
        )
        return cls(en, vi, **kw)


class TokenizerMappingError(_MappingError):
    TEXTS = dict(
        what_en="tokenizers",
        what_vi="tokenizer",
        shared_en="1 tokenizer shared across all files",
        mapped_en="N tokenizers for N files",
        shared_vi="1 tokenizer dùng chung cho tất cả file",
        mapped_vi="N tokenizer cho N file",
    )


class FieldMappingError(_MappingError):
    TEXTS = dict(
        what_en="field configs",
        what_vi="cấu hình fields",
        shared_en="1 field config shared across all files",
        mapped_en="N field configs for N files",
        shared_vi="1 fields dùng chung cho tất cả file",
        mapped_vi="N fields cho N file",
    )

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
        return cls.invalid(
            'fields must be a list of lists, e.g. [["prompt", "response"]]',
            'fields phải là list các list, ví dụ [["prompt", "response"]]',
            **kw,
        )

    @classmethod
    def names(cls, index: int, **kw):
        return cls.invalid(
            f"fields[{index}] must be a non-empty list of field names (strings)",
            f"fields[{index}] phải là list tên field (string) không rỗng",
            **kw,
        )

    @classmethod
    def twice(cls, index: int, names: list, **kw):
        return cls.invalid(
            f"fields[{index}] names a field twice: {names!r}",
            f"fields[{index}] khai báo một field hai lần: {names!r}",
            **kw,
        )

    # source.train_on: its own rules (of field names, or of roles for a conversation file)
    TRAIN_ON_RULES = {
        "shape": (
            "train_on is a list of lists: one list shared by every file, or one per file",
            "train_on là list các list: một list cho mọi file, hoặc mỗi file một list",
        ),
        "fields": (
            'train_on[i] names fields that files[i] declares (fields[i]), e.g. [["output"]]',
            'train_on[i] gồm các field mà files[i] khai báo (fields[i]), ví dụ [["output"]]',
        ),
        "roles": (
            "train_on[i] of a conversation file (source.chat) names roles, as the chat template sees them "
            '(after source.chat.roles when it maps them), e.g. [["assistant"]]',
            "train_on[i] của file hội thoại (source.chat) gồm các role, như chat template thấy chúng "
            '(sau source.chat.roles nếu có ánh xạ), ví dụ [["assistant"]]',
        ),
    }

    @classmethod
    def train_on_invalid(cls, en_problem: str, vi_problem: str, kinds=("shape", "fields", "roles"), **kw):
        rules = [cls.TRAIN_ON_RULES[k] for k in kinds]
        return cls(
            f"Invalid train_on config.\n\nProblem: {en_problem}\n\nRules:\n\n{_bullets(r[0] for r in rules)}",
            f"Cấu hình train_on không hợp lệ.\n\nVấn đề: {vi_problem}\n\nQuy tắc:\n\n"
            f"{_bullets(r[1] for r in rules)}",
            **kw,
        )

    @classmethod
    def train_on(cls, **kw):
        return cls.train_on_invalid(
            'train_on must be a list of lists of field names, e.g. [["output"]]',
            'train_on phải là list các list tên field, ví dụ [["output"]]',
            **kw,
        )

    @classmethod
    def train_on_arity(cls, n_files: int, n_items: int, **kw):
        return cls.train_on_invalid(
            f"Received {n_files} input files but {n_items} train_on entries",
            f"Nhận {n_files} file đầu vào nhưng chỉ có {n_items} train_on",
            **kw,
        )

    @classmethod
    def train_on_name(cls, index: int, name, declared: list, **kw):
        return cls.train_on_invalid(
            f"train_on[{index}] names {name!r}, which is not one of the file's fields {declared!r}",
            f"train_on[{index}] có {name!r}, không thuộc fields của file {declared!r}",
            ("fields",),
            **kw,
        )

    # a conversation file (source.chat) trains roles
    @classmethod
    def train_on_role_name(cls, index: int, name, **kw):
        return cls.train_on_invalid(
            f"train_on[{index}] names {name!r}: a conversation file trains roles (strings), "
            'e.g. [["assistant"]]',
            f'train_on[{index}] có {name!r}: file hội thoại train theo role (string), ví dụ [["assistant"]]',
            ("roles",),
            **kw,
        )

    @classmethod
    def train_on_role(cls, index: int, name: str, produced: list[str], **kw):
        return cls.train_on_invalid(
            f"train_on[{index}] names role {name!r}, which source.chat.roles never produces {produced!r}",
            f"train_on[{index}] có role {name!r}, không thuộc các role mà source.chat.roles tạo ra "
            f"{produced!r}",
            ("roles",),
            **kw,
        )

    # `mintdim tokenizer train --jsonl` (mintdim/commands/tokenizer.py)
    @classmethod
    def jsonl_needs_fields(cls, **kw):
        return cls.invalid(
            "--jsonl needs --fields (the keys to render)", "--jsonl cần --fields (các key để render)", **kw
        )


class TemplateMappingError(_MappingError):
    TEXTS = dict(
        what_en="templates",
        what_vi="template",
        shared_en="1 template shared across all files",
        mapped_en="N templates for N files",
        shared_vi="1 template dùng chung cho tất cả file",
        mapped_vi="N template cho N file",
    )

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
    TEXTS = dict(
        what_en="unit configs",
        what_vi="unit config",
        shared_en="1 unit config shared across all files",
        mapped_en="N unit configs for N input files",
        shared_vi="1 unit config dùng chung cho tất cả file",
        mapped_vi="N unit config cho N file",
    )


class OutputMappingError(_MappingError):
    TEXTS = dict(
        what_en="output directories",
        what_vi="thư mục output",
        shared_en="1 shared output directory",
        mapped_en="N output directories for N input files",
        shared_vi="1 output dùng chung",
        mapped_vi="N output cho N file",
    )

    @classmethod
    def same_file(cls, output: str, path: str, first: int, second: int, **kw):
        return cls(
            f"A file is declared twice for one output directory.\n\nOutput directory: {output}\n"
            f"File: {path} (source.files items {first} and {second}, counting from 0)\n\n"
            "The indexes name a sample's file by its path as declared, so the two could not be told apart: "
            "mintdim verify and mintdim export would refuse the output. To use the samples twice: "
            "source.take (2.0 takes every sample twice), a copy or a link of the file under another name, or "
            "another output directory.",
            f"Một file được khai báo hai lần cho cùng một thư mục output.\n\nThư mục output: {output}\n"
            f"File: {path} (phần tử {first} và {second} của source.files, đếm từ 0)\n\n"
            "Các index ghi file của mỗi sample bằng đường dẫn như đã khai báo, nên không thể phân biệt hai "
            "lần khai báo: mintdim verify và mintdim export sẽ từ chối output. Để dùng các sample hai lần: "
            "source.take (2.0 lấy mỗi sample hai lần), một bản sao hoặc link của file với tên khác, hoặc một "
            "thư mục output khác.",
            **kw,
        )


class TemplateFieldMismatchError(MintDimError):
    @classmethod
    def make(
        cls,
        source_file: str,
        fields: list[str],
        template: str,
        field: str,
        reason_en: str,
        reason_vi: str,
        **kw,
    ):
        return cls(
            f"Source file: {source_file}\n\nAPI declaration for this file: fields = {fields!r} "
            f"template = {_quoted(template)}\n\nField causing template mismatch: {field} Reason: {reason_en}",
            f"File nguồn: {source_file}\n\nKhai báo API cho file này: fields = {fields!r} "
            f"template = {_quoted(template)}\n\nField gây lệch template: {field} Lý do: {reason_vi}",
            **kw,
        )

    @classmethod
    def placeholder(cls, source_file: str, fields: list[str], template: str, field: str, reason: str, **kw):
        return cls.make(
            source_file,
            fields,
            template,
            field,
            f"invalid placeholder ({reason}); use {{name}}, and {{{{ }}}} for literal braces",
            f"placeholder không hợp lệ ({reason}); dùng {{name}}, và {{{{ }}}} cho dấu ngoặc literal",
            **kw,
        )

    @classmethod
    def undeclared(cls, source_file: str, fields: list[str], template: str, field: str, **kw):
        return cls.make(
            source_file,
            fields,
            template,
            field,
            f"template uses {{{field}}}, but fields does not declare it",
            f"template dùng {{{field}}}, nhưng fields không khai báo field này",
            **kw,
        )

    @classmethod
    def unused(cls, source_file: str, fields: list[str], template: str, field: str, **kw):
        return cls.make(
            source_file,
            fields,
            template,
            field,
            f"fields declares {field}, but template does not use {{{field}}}",
            f"fields khai báo {field}, nhưng template không dùng {{{field}}}",
            **kw,
        )


class TemplateTokenizerError(MintDimError):
    @classmethod
    def make(cls, file_index: int, template: str, literal: str | None = None, **kw):
        en = (
            "Template static parts produce UNK when encoded by the tokenizer.\n\n"
            f"File index: {file_index}\n\nTemplate: {_quoted(template)}\n\n"
            "Problem: template literal characters are not fully covered by tokenizer vocabulary\n\n"
            "Fix: adjust template literal characters or use a tokenizer that covers them"
        )
        vi = (
            f"Phần literal của template tạo UNK khi tokenize.\n\nVị trí file: {file_index}\n\n"
            f"Template: {_quoted(template)}\n\n"
            "Vấn đề: ký tự literal trong template không được tokenizer bao phủ\n\n"
            "Cách sửa: chỉnh ký tự literal hoặc dùng tokenizer bao phủ được"
        )
        if literal is not None:
            en += f"\n\nLiteral: {_quoted(literal)}"
            vi += f"\n\nLiteral: {_quoted(literal)}"
        return cls(en, vi, **kw)


_UNIT_RULES_EN = [
    "sizes must be positive integers",
    "sizes must be sorted ascending",
    "build_batch must be a positive integer",
]
_UNIT_RULES_VI = [
    "sizes phải là các số nguyên dương",
    "sizes phải tăng dần",
    "build_batch phải là số nguyên dương",
]
_AUTO_ONLY = (
    "{key} applies only with sizes: auto (planning the sizes from the data)",
    "{key} chỉ dùng được với sizes: auto (lập unit sizes từ dữ liệu)",
)
# The rules of each key beyond the spec's (sizes and build_batch keep the spec's list): an error about
# one of them lists only its own.
_UNIT_KEY_RULES = {
    "k": (
        ["k is a positive int: how many unit sizes to plan"],
        ["k là số nguyên dương: số unit size cần lập"],
    ),
    "multiple_of": (
        ["multiple_of is a positive int: every planned size is a multiple of it (default 1)"],
        ["multiple_of là số nguyên dương: mọi size được lập là bội của nó (mặc định 1)"],
    ),
    "min_size": (
        ["min_size is a positive int, at most max_size: no planned size is below it"],
        ["min_size là số nguyên dương, không lớn hơn max_size: không size nào được lập nhỏ hơn nó"],
    ),
    "max_size": (
        [
            "max_size is a positive int, at least min_size: no planned size is above it; a longer sample "
            "overflows (units.overflow)"
        ],
        [
            "max_size là số nguyên dương, không nhỏ hơn min_size: không size nào được lập lớn hơn nó; mẫu "
            "dài hơn bị tràn (units.overflow)"
        ],
    ),
    "cost": (
        ["cost is linear (fewest token slots) or attention (smallest sum of size^2)"],
        ["cost là linear (ít ô token nhất) hoặc attention (tổng size^2 nhỏ nhất)"],
    ),
    "pack": (
        [
            "pack is a list of positive row lengths: one shared by every file, or one per file",
            "pack replaces sizes: declare one of them, not both",
        ],
        [
            "pack là list độ dài hàng dương: một cho mọi file, hoặc mỗi file một giá trị",
            "pack thay cho sizes: chỉ khai báo một trong hai",
        ],
    ),
    "overflow": (
        [
            "overflow is a list of error | drop | truncate: one shared by every file, or one per file "
            "(default error)",
            "overflow decides a sample longer than the largest unit size (the row length with pack): error "
            "stops the build, drop leaves it out, truncate keeps its first tokens",
        ],
        [
            "overflow là list gồm error | drop | truncate: một cho mọi file, hoặc mỗi file một giá trị "
            "(mặc định error)",
            "overflow quyết định mẫu dài hơn unit lớn nhất (độ dài hàng khi dùng pack): error dừng build, "
            "drop bỏ mẫu, truncate giữ các token đầu",
        ],
    ),
}
AUTO_KEYS = ("k", "multiple_of", "min_size", "max_size", "cost")


def _unit_rules(keys) -> tuple[list[str], list[str]]:
    """The rules of these keys (the spec's list when none is given or a key has no rules of its own)."""
    if not keys or any(k not in _UNIT_KEY_RULES for k in keys):
        return _UNIT_RULES_EN, _UNIT_RULES_VI
    en = [r for k in keys for r in _UNIT_KEY_RULES[k][0]]
    vi = [r for k in keys for r in _UNIT_KEY_RULES[k][1]]
    for k in (k for k in keys if k in AUTO_KEYS):
        en.append(_AUTO_ONLY[0].format(key=k))
        vi.append(_AUTO_ONLY[1].format(key=k))
    return en, vi


class UnitValidationError(MintDimError):
    @classmethod
    def make(cls, en_problem: str | None = None, vi_problem: str | None = None, keys=(), **kw):
        """keys: the unit keys the problem is about (their rules are listed); none: the spec's list."""
        rules_en, rules_vi = _unit_rules(keys)
        en = f"Invalid unit config.\n\nRules:\n\n{_bullets(rules_en)}"
        vi = f"Unit config không hợp lệ.\n\nQuy tắc:\n\n{_bullets(rules_vi)}"
        if en_problem:  # a line of advice after the spec's text
            en += f"\n\nProblem: {en_problem}"
            vi += f"\n\nVấn đề: {vi_problem or en_problem}"
        return cls(en, vi, **kw)

    # the config check's problems (mintdim/config.py)
    @classmethod
    def auto_only(cls, keys: list[str], **kw):
        return cls.make(
            f"{keys} apply only with sizes: auto", f"{keys} chỉ dùng được với sizes: auto", keys=keys, **kw
        )

    @classmethod
    def needs_k(cls, got, **kw):
        return cls.make(
            f"sizes: auto needs k, a positive int (got {got!r})",
            f"sizes: auto cần k là số nguyên dương (hiện tại là {got!r})",
            keys=["k"],
            **kw,
        )

    @classmethod
    def not_positive(cls, key: str, got, **kw):
        return cls.make(
            f"{key} must be a positive int, got {got!r}",
            f"{key} phải là số nguyên dương, hiện tại là {got!r}",
            keys=[key],
            **kw,
        )

    @classmethod
    def cost(cls, costs: list[str], got, **kw):
        return cls.make(
            f"cost must be one of {costs}, got {got!r}",
            f"cost phải là một trong {costs}, hiện tại là {got!r}",
            keys=["cost"],
            **kw,
        )

    @classmethod
    def min_above_max(cls, **kw):
        return cls.make(
            "min_size is above max_size", "min_size lớn hơn max_size", keys=["min_size", "max_size"], **kw
        )

    @classmethod
    def sizes_not_lists(cls, **kw):
        return cls.make(
            "sizes must be a list of lists, e.g. [[128, 256]]",
            "sizes phải là list các list, ví dụ [[128, 256]]",
            **kw,
        )

    @classmethod
    def build_batch_not_list(cls, **kw):
        return cls.make(
            "build_batch must be a list, e.g. [4096]", "build_batch phải là list, ví dụ [4096]", **kw
        )

    @classmethod
    def sizes(cls, index: int, got, **kw):
        return cls.make(f"sizes[{index}] = {got!r}", f"sizes[{index}] = {got!r}", **kw)

    @classmethod
    def unsorted(cls, index: int, got, **kw):
        return cls.make(
            f"sizes[{index}] = {got!r} is not sorted ascending",
            f"sizes[{index}] = {got!r} không tăng dần",
            **kw,
        )

    @classmethod
    def build_batch(cls, index: int, got, **kw):
        return cls.make(f"build_batch[{index}] = {got!r}", f"build_batch[{index}] = {got!r}", **kw)

    @classmethod
    def pack(cls, problem: str, value=None, **kw):
        """units.pack / units.overflow: one of the problems below."""
        texts = {
            "both": (
                "declare either sizes or pack, not both (pack replaces sizes)",
                "chỉ khai báo sizes hoặc pack, không cả hai (pack thay cho sizes)",
                "pack",
            ),
            "pack": (
                f"pack must be a list of positive row lengths, e.g. [4096], got {value!r}",
                f"pack phải là list độ dài hàng dương, ví dụ [4096], hiện tại là {value!r}",
                "pack",
            ),
            "overflow": (
                f"overflow must be a list of error | drop | truncate, e.g. [drop], got {value!r}",
                f"overflow phải là list gồm error | drop | truncate, ví dụ [drop], hiện tại là {value!r}",
                "overflow",
            ),
        }
        en, vi, key = texts[problem]
        return cls.make(en, vi, keys=[key], **kw)


BAD_SHOWN = 10  # bad records listed by file:line when a file's bad records stop the build
BAD_REASONS_SHOWN = 5  # the most frequent reasons listed when a file holds more than max_skipped
# the classes of a record's own data errors (source.on_bad_record: skip leaves such a record out);
# ChatTemplateError.unlocated is the template's (it rewrites a trained message), never a record's
BAD_RECORD_CLASSES = (
    "SourceParseError",
    "SampleSchemaError",
    "TemplateFieldMismatchError",
    "ChatTemplateError",
)
_REASON_LABELS = ("Reason: ", "Problem: ", "Template message: ")
_PLACE_LABELS = ("File: ", "Line: ", "Row: ", "Message: ")


def is_bad_record(err: MintDimError) -> bool:
    """A record's own data error (source.on_bad_record), not the config's, the tokenizer's or the file's."""
    return err.kind in BAD_RECORD_CLASSES and not getattr(err, "not_a_record", False)


def reason_of(err: MintDimError) -> str:
    """One line saying what is wrong with a record (skipped_index.jsonl `reason`): the Reason, Problem or
    Template message of its English text; without one, its other parts but the place (file, line)."""
    parts = err.en.split("\n\n")
    found = [p[len(label) :] for p in parts for label in _REASON_LABELS if p.startswith(label)]
    if not found:
        found = ["; ".join(p for p in parts if not p.startswith(_PLACE_LABELS))]
    return " ".join(found[0].split())


def relocated(data: dict, line: int) -> dict:
    """An error's to_dict() told at another line of its file: its Line (Row) paragraph in both languages
    and its `line`. A tokenize job tells a bad record's line within its chunk; the plan knows the real one."""
    old = data["line"]
    out = dict(data, line=line)
    for key, labels in (("en", ("Line", "Row")), ("vi", ("Dòng", "Hàng"))):
        for label in labels:
            out[key] = out[key].replace(f"\n\n{label}: {old}\n\n", f"\n\n{label}: {line}\n\n", 1)
    return out


def _bad_list(bad: list[tuple[str, int, str]]) -> str:
    return "\n".join(f"• {path}:{line} ({kind})" for path, line, kind in bad[:BAD_SHOWN])


def bad_records_counted(
    first: dict, bad: list[tuple[str, int, str]], count: int, path: str, **kw
) -> MintDimError:
    """on_bad_record: error (the default): the first bad record's error, then how many the file holds, the
    first BAD_SHOWN by file:line with their class, and the way to build without them. first: that error's
    to_dict(); bad: (path, line, class) in input order."""
    err = MintDimError.from_dict(first)
    many_en = "1 bad record" if count == 1 else f"{count} bad records"
    first_en = f"; the first {BAD_SHOWN}" if count > BAD_SHOWN else ""
    first_vi = f"; {BAD_SHOWN} bản ghi đầu tiên" if count > BAD_SHOWN else ""
    err.en += (
        f"\n\n{path} holds {many_en} (records that cannot become a sample){first_en}:\n\n"
        f"{_bad_list(bad)}\n\nTo build without them: source: {{on_bad_record: [skip]}} leaves them "
        "out and lists them in skipped_index.jsonl, up to source.max_skipped of a file's records "
        "(default [0.01])"
    )
    err.vi += (
        f"\n\n{path} có {count} bản ghi lỗi (bản ghi không thành sample được){first_vi}:\n\n"
        f"{_bad_list(bad)}\n\nĐể build không có chúng: source: {{on_bad_record: [skip]}} bỏ chúng "
        "và liệt kê trong skipped_index.jsonl, tối đa source.max_skipped số bản ghi của một file "
        "(mặc định [0.01])"
    )
    return err.with_lang(kw.get("lang", "en"))


def too_many_bad_records(
    first: dict,
    bad: list[tuple[str, int, str]],
    reasons: list[tuple[int, str, str]],
    count: int,
    records: int,
    limit,
    path: str,
    **kw,
) -> MintDimError:
    """on_bad_record: skip, and a file holds more bad records than max_skipped allows (or nothing else):
    the first bad record's error, the count, the most frequent reasons ((count, class, reason)), the
    first BAD_SHOWN, and what to change."""
    err = MintDimError.from_dict(first)
    top = "\n".join(f"• {n} × {kind}: {reason}" for n, kind, reason in reasons[:BAD_REASONS_SHOWN])
    if count == records:
        err.en += (
            f"\n\nEvery record of {path} ({records}) is bad: that is a config mistake, not dirty "
            f"data (on_bad_record: skip never skips a whole file). Reasons:\n\n{top}\n\nFix: check "
            "source.fields and source.templates, or source.chat (messages, role, content, roles) and "
            "the chat template"
        )
        err.vi += (
            f"\n\nMọi bản ghi của {path} ({records}) đều lỗi: đó là lỗi cấu hình, không phải dữ "
            f"liệu bẩn (on_bad_record: skip không bao giờ bỏ cả một file). Lý do:\n\n{top}\n\n"
            "Cách sửa: kiểm tra source.fields và source.templates, hoặc source.chat (messages, role, "
            "content, roles) và chat template"
        )
        return err.with_lang(kw.get("lang", "en"))
    allowed_en = f"{limit} of its {records} records" if isinstance(limit, float) else f"{limit} records"
    allowed_vi = f"{limit} số bản ghi ({records})" if isinstance(limit, float) else f"{limit} bản ghi"
    shown = min(count, BAD_SHOWN)
    err.en += (
        f"\n\n{count} of the {records} records of {path} are bad, more than source.max_skipped "
        f"allows ({allowed_en}). Most frequent reasons:\n\n{top}\n\nThe first {shown}:\n\n"
        f"{_bad_list(bad)}\n\nFix: correct the records or the config (source.chat.roles, the chat "
        "template), or raise source.max_skipped: a fraction of each file's records (e.g. [0.05]) or "
        f"a count (e.g. [{count}])"
    )
    err.vi += (
        f"\n\n{count} trên {records} bản ghi của {path} bị lỗi, nhiều hơn source.max_skipped cho "
        f"phép ({allowed_vi}). Lý do thường gặp nhất:\n\n{top}\n\n{shown} bản ghi đầu tiên:\n\n"
        f"{_bad_list(bad)}\n\nCách sửa: sửa các bản ghi hoặc cấu hình (source.chat.roles, chat "
        "template), hoặc tăng source.max_skipped: tỉ lệ số bản ghi của mỗi file (ví dụ [0.05]) hoặc "
        f"số lượng (ví dụ [{count}])"
    )
    return err.with_lang(kw.get("lang", "en"))


OVERFLOW_SHOWN = 10  # over-long samples listed by file:line in UnitOverflowError


class UnitOverflowError(MintDimError):
    @classmethod
    def make(cls, path: str, line: int, token_count: int, max_unit: int, **kw):
        at_en, at_vi = (
            (f"{path} row {line}", f"{path} hàng {line}")
            if isinstance(line, Row)
            else (f"{path}:{line}",) * 2
        )
        return cls(
            f"Sample token length exceeds max unit size.\n\nSample: {at_en}\n\n"
            f"token_count: {token_count}\n\nmax_unit_size: {max_unit}\n\nIncrease unit sizes and run again.",
            f"Độ dài token của mẫu vượt quá unit lớn nhất.\n\nMẫu: {at_vi}\n\n"
            f"token_count: {token_count}\n\nmax_unit_size: {max_unit}\n\nHãy tăng unit sizes rồi chạy lại.",
            file=path,
            line=line,
            **kw,
        )

    @classmethod
    def counted(
        cls,
        samples: list[tuple[str, int, int]],
        count: int,
        max_unit: int,
        packed: bool = False,
        longest: int | None = None,
        **kw,
    ):
        """The spec's text for the first over-long sample, then how many there are in the output, the first
        OVERFLOW_SHOWN by file:line, and what to do. samples: (path, line, token_count), in input order.
        packed (units.pack): the row length is `max_unit`; `longest`, the longest sample's token count,
        is the row length that holds them all."""
        path, line, token_count = samples[0]
        err = cls.make(path, line, token_count, max_unit, **kw)
        shown_en = "\n".join(f"• {p}:{n} ({c} tokens)" for p, n, c in samples[:OVERFLOW_SHOWN])
        shown_vi = "\n".join(f"• {p}:{n} ({c} token)" for p, n, c in samples[:OVERFLOW_SHOWN])
        what = "the row length" if packed else "the largest unit size"
        what_vi = "độ dài hàng" if packed else "unit lớn nhất"
        many = "1 sample is" if count == 1 else f"{count} samples are"
        first = f"; the first {OVERFLOW_SHOWN}" if count > OVERFLOW_SHOWN else ""
        first_vi = f"; {OVERFLOW_SHOWN} mẫu đầu tiên" if count > OVERFLOW_SHOWN else ""
        longest = max(c for _p, _n, c in samples) if longest is None else longest
        most = f" (the longest has {longest} tokens)" if packed else ""
        most_vi = f" (mẫu dài nhất có {longest} token)" if packed else ""
        if packed:
            fit_en = f"Rows that hold every sample: units: {{pack: [{longest}]}} or longer."
            fit_vi = f"Hàng chứa được mọi mẫu: units: {{pack: [{longest}]}} hoặc dài hơn."
        else:
            fit_en = (
                "Sizes that fit every sample: run `mintdim suggest-units CONFIG -k K`, or plan them "
                "from the data with units: {sizes: auto, k: K}."
            )
            fit_vi = (
                "Unit sizes vừa mọi mẫu: chạy `mintdim suggest-units CONFIG -k K`, hoặc lập từ dữ liệu "
                "với units: {sizes: auto, k: K}."
            )
        err.en += (
            f"\n\n{many} longer than {what} {max_unit}{most}{first}:\n\n{shown_en}\n\n{fit_en} "
            "To build without them: units: {overflow: [drop]} leaves them "
            f"out, units: {{overflow: [truncate]}} keeps their first {max_unit} tokens."
        )
        err.vi += (
            f"\n\n{count} mẫu dài hơn {what_vi} {max_unit}{most_vi}{first_vi}:\n\n{shown_vi}\n\n"
            f"{fit_vi} Để build không có chúng: units: {{overflow: [drop]}} bỏ các mẫu này, "
            f"units: {{overflow: [truncate]}} giữ {max_unit} token đầu của chúng."
        )
        return err.with_lang(err.lang)


class OutputValidationError(MintDimError):
    @classmethod
    def not_empty(cls, directory: str, **kw):
        return cls(
            f"Output directory already exists and is not empty.\n\nDirectory: {directory}\n\n"
            "Use a new output directory.",
            f"Thư mục output đã tồn tại và không rỗng.\n\nThư mục: {directory}\n\n"
            "Hãy dùng thư mục output mới.",
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
        return cls.invalid(
            "output.dir must be a path (string) or a list of paths",
            "output.dir phải là đường dẫn (string) hoặc list đường dẫn",
            **kw,
        )

    @classmethod
    def nested(cls, directory: str, other: str, **kw):
        return cls.invalid(
            f"output {directory} contains another output {other}",
            f"output {directory} chứa một output khác {other}",
            **kw,
        )

    @classmethod
    def overlaps_work(cls, directory: str, work_dir: str, **kw):
        return cls.invalid(
            f"output {directory} overlaps the work directory {work_dir}",
            f"output {directory} trùng với thư mục làm việc {work_dir}",
            **kw,
        )

    @classmethod
    def is_input(cls, directory: str, **kw):
        return cls.invalid(
            f"output {directory} is an input file", f"output {directory} là một file đầu vào", **kw
        )

    # tokenizer.train_bpe's out (mintdim/tokenizers/training.py): never overwritten, like an output directory
    @classmethod
    def train_out_taken(cls, directory: str, record: str, **kw):
        err = cls.not_empty(directory, **kw)
        err.en += (
            "\n\nIt holds a tokenizer MintDim trained from other files, templates or options "
            f"(tokenizer.train_bpe.out; see {record} there). Delete it to train again, or choose a new out."
        )
        err.vi += (
            "\n\nThư mục chứa tokenizer MintDim đã train từ file, template hoặc tuỳ chọn khác "
            f"(tokenizer.train_bpe.out; xem {record}). Hãy xoá nó để train lại, hoặc chọn out mới."
        )
        return err.with_lang(err.lang)

    @classmethod
    def train_out_not_empty(cls, directory: str, **kw):
        err = cls.not_empty(directory, **kw)
        err.en += (
            "\n\ntokenizer.train_bpe.out is where the trained tokenizer is saved; MintDim never overwrites "
            "it."
        )
        err.vi += (
            "\n\ntokenizer.train_bpe.out là nơi lưu tokenizer được train; MintDim không bao giờ ghi đè nó."
        )
        return err.with_lang(err.lang)

    @classmethod
    def busy(cls, directory: str, pids: str, **kw):
        """Another live build is filling this output directory."""
        return cls.invalid(
            f"{directory} is being built right now by another MintDim build (process {pids}). "
            "Wait for it to finish, or choose another output directory.",
            f"{directory} đang được một build MintDim khác tạo (tiến trình {pids}). "
            "Hãy đợi nó xong hoặc chọn thư mục output khác.",
            **kw,
        )

    # --- a finished output met again (docs/reliability.md) --------------------------------------

    @classmethod
    def inputs_changed(cls, directory: str, changed: list[str], how: str | None = None, **kw):
        what = _bullets(changed)
        en_how, vi_how = _rebuild_how(how)
        return cls(
            f"Output directory holds this config's finished output, built from inputs that have changed "
            f"since.\n\nDirectory: {directory}\n\nChanged (content):\n\n{what}\n\n"
            f"Nothing was built. To rebuild it from the current inputs, run {en_how} (replaces only this "
            "output, which MintDim wrote, once the new one is complete), or delete the directory first.",
            f"Thư mục output chứa output đã hoàn tất của config này, nhưng dữ liệu đầu vào đã thay đổi "
            f"từ đó.\n\nThư mục: {directory}\n\nĐã thay đổi (nội dung):\n\n{what}\n\n"
            f"Chưa build gì. Để build lại từ dữ liệu hiện tại, hãy chạy {vi_how} (chỉ thay output này, do "
            "MintDim ghi, khi output mới đã hoàn tất), hoặc xoá thư mục trước.",
            **kw,
        )

    @classmethod
    def other_config(cls, directory: str, build_id: str, changes: list[str], how: str | None = None, **kw):
        en_how, vi_how = _rebuild_how(how)
        en_what = f"\n\nChanged in the config since that build:\n\n{_bullets(changes)}" if changes else ""
        vi_what = f"\n\nThay đổi trong config từ lần build đó:\n\n{_bullets(changes)}" if changes else ""
        return cls(
            f"Output directory holds the finished output of another MintDim config (build {build_id}).\n\n"
            f"Directory: {directory}{en_what}\n\nNothing was built. Use a new output directory; or, to "
            f"replace that output, run {en_how} (replaces only what MintDim wrote there, once the new output "
            "is complete), or delete it.",
            f"Thư mục output chứa output đã hoàn tất của một config MintDim khác (build {build_id}).\n\n"
            f"Thư mục: {directory}{vi_what}\n\nChưa build gì. Hãy dùng thư mục output mới; hoặc, để thay "
            f"output đó, chạy {vi_how} (chỉ thay những gì MintDim đã ghi, khi output mới đã hoàn tất), hoặc "
            "xoá nó.",
            **kw,
        )

    @classmethod
    def unrecorded(cls, directory: str, how: str | None = None, **kw):
        """A finished MintDim output (its manifest.json) that this work directory has no record of."""
        en_how, vi_how = _rebuild_how(how)
        err = cls.not_empty(directory, **kw)
        err.en += (
            f"\n\nIt holds a MintDim output that this work directory has no record of (its work directory "
            f"was deleted, or it was built elsewhere). To replace it, run {en_how}: it replaces the "
            "directory only if `mintdim verify` finds it a complete MintDim output with nothing else in it, "
            "once the new output is complete. Or delete it yourself."
        )
        err.vi += (
            "\n\nThư mục chứa một output MintDim mà thư mục làm việc này không có ghi chép (thư mục làm "
            f"việc đã bị xoá, hoặc nó được build ở nơi khác). Để thay nó, hãy chạy {vi_how}: chỉ thay khi "
            "`mintdim verify` thấy đó là output MintDim hoàn chỉnh và không có gì khác, khi output mới đã "
            "hoàn tất. Hoặc tự xoá nó."
        )
        return err.with_lang(err.lang)

    @classmethod
    def not_a_directory(cls, directory: str, **kw):
        return cls(
            f"Output path exists and is not a directory.\n\nPath: {directory}\n\n"
            "Use a new output directory (or move that file away).",
            f"Đường dẫn output đã tồn tại và không phải thư mục.\n\nĐường dẫn: {directory}\n\n"
            "Hãy dùng thư mục output mới (hoặc chuyển file đó đi chỗ khác).",
            **kw,
        )

    @classmethod
    def not_only_ours(cls, directory: str, files: list[str], **kw):
        shown = "\n".join(f"• {f}" for f in files) or "• ?"
        return cls(
            f"--rebuild replaces only a finished output exactly as MintDim wrote it; this directory holds "
            f"files MintDim did not write, or changed ones.\n\nDirectory: {directory}\n\n{shown}\n\n"
            "Nothing was deleted. Move those files away, or delete the directory yourself.",
            f"--rebuild chỉ thay một output đã hoàn tất đúng như MintDim đã ghi; thư mục này có file MintDim "
            f"không ghi, hoặc file đã bị sửa.\n\nThư mục: {directory}\n\n{shown}\n\n"
            "Không xoá gì. Hãy chuyển các file đó đi, hoặc tự xoá thư mục.",
            **kw,
        )

    @classmethod
    def rebuilt_differs(cls, directory: str, first: str, how: str | None = None, **kw):
        en_how, vi_how = _rebuild_how(how)
        return cls(
            f"The stages run again produced other bytes than the finished output in the directory.\n\n"
            f"Directory: {directory}\n\nFirst difference: {first}\n\nThe finished output was kept. "
            f"To replace it, run {en_how}.",
            f"Các giai đoạn chạy lại tạo ra bytes khác với output đã hoàn tất trong thư mục.\n\n"
            f"Thư mục: {directory}\n\nKhác biệt đầu tiên: {first}\n\nOutput đã hoàn tất được giữ nguyên. "
            f"Để thay nó, hãy chạy {vi_how}.",
            **kw,
        )

    # --- a directory the reader cannot read as a finished output --------------------------------------------
    # (mintdim/reading/reader.py, packed_reader.py)

    @classmethod
    def not_finished(cls, path: str, en_problem: str, vi_problem: str, **kw):
        return cls.invalid(
            f"{path} is not a finished MintDim output: {en_problem}",
            f"{path} không phải output MintDim đã hoàn tất: {vi_problem}",
            **kw,
        )

    @classmethod
    def build_failed(cls, path: str, marker: str, **kw):
        return cls.not_finished(
            path,
            f"its build failed (see {marker} in its unit directories)",
            f"lần build đã thất bại (xem {marker} trong các thư mục unit)",
            **kw,
        )

    @classmethod
    def shard_count(cls, path: str, unit: str, expected: int, found: int, **kw):
        """unit: the unit directory's name (unit_256)."""
        return cls.not_finished(
            path,
            f"{unit} should hold {expected} shards, found {found}",
            f"{unit} phải có {expected} shard, thấy {found}",
            **kw,
        )

    @classmethod
    def unit_missing(cls, path: str, unit: str, **kw):
        return cls.not_finished(path, f"{unit} is missing", f"thiếu {unit}", **kw)

    @classmethod
    def partial_records(cls, path: str, shard: str, size: int, **kw):
        return cls.not_finished(
            path,
            f"{shard} is not a whole number of {size}-token records",
            f"{shard} không phải số nguyên lần bản ghi {size} token",
            **kw,
        )

    @classmethod
    def index_order(cls, path: str, line: int, sample_id, **kw):
        return cls.not_finished(
            path,
            f"sample_index.jsonl line {line} holds sample_id {sample_id}",
            f"sample_index.jsonl dòng {line} có sample_id {sample_id}",
            **kw,
        )

    @classmethod
    def index_count(cls, path: str, listed: int, total: int, **kw):
        return cls.not_finished(
            path,
            f"sample_index.jsonl lists {listed} samples, stats.json {total}",
            f"sample_index.jsonl có {listed} sample, stats.json {total}",
            **kw,
        )

    @classmethod
    def index_unit_size(cls, path: str, **kw):
        return cls.not_finished(
            path,
            "sample_index.jsonl names a unit size the manifest does not declare",
            "sample_index.jsonl có unit size không khai báo trong manifest",
            **kw,
        )

    @classmethod
    def index_shard_row(cls, path: str, **kw):
        return cls.not_finished(
            path,
            "sample_index.jsonl shard_row disagrees with the shard layout",
            "shard_row trong sample_index.jsonl không khớp bố cục shard",
            **kw,
        )

    @classmethod
    def not_packed(cls, path: str, **kw):
        return cls.not_finished(
            path,
            "its manifest does not declare packed rows (open it with mintdim.open)",
            "manifest không khai báo hàng đóng gói (mở bằng mintdim.open)",
            **kw,
        )

    @classmethod
    def row_boundaries(cls, path: str, row: int, **kw):
        return cls.not_finished(
            path,
            f"row {row}: its boundaries disagree with sample_index.jsonl",
            f"hàng {row}: ranh giới không khớp sample_index.jsonl",
            **kw,
        )

    @classmethod
    def failed_verification(cls, path: str, count: int, first: str, **kw):
        """`mintdim export` verifies its output first (mintdim/reading/export.py)."""
        s = "" if count == 1 else "s"
        return cls.not_finished(
            path,
            f"mintdim verify found {count} problem{s}, the first: {first}. Nothing was exported; "
            f"`mintdim verify {path}` lists them",
            f"mintdim verify thấy {count} vấn đề, đầu tiên: {first}. Không export gì; "
            f"`mintdim verify {path}` liệt kê chúng",
            **kw,
        )

    @classmethod
    def checksums_differ(cls, path: str, differ: list[str], missing: list[str], extra: list[str], **kw):
        """The files of a finished output are not the ones its checksums.sha256 records (`mintdim export`
        verifies first; mintdim/formats/checksums.py)."""
        en, vi = _checksum_sections(differ, missing, extra, path)
        return cls(
            f"The output's files differ from its checksums.sha256: they changed after the build.\n\n"
            f"Directory: {path}\n\n{en}\n\nNothing was exported. Build the output again (or restore "
            "these files from a copy); `sha256sum -c checksums.sha256` in the directory checks the bytes.",
            f"Các file của output khác với checksums.sha256 của nó: chúng đã bị thay đổi sau khi build.\n\n"
            f"Thư mục: {path}\n\n{vi}\n\nKhông export gì. Hãy build lại output (hoặc khôi phục các file "
            "này từ bản sao); `sha256sum -c checksums.sha256` trong thư mục kiểm tra các bytes.",
            **kw,
        )


CHECKSUM_FILES_SHOWN = 20  # files named per kind in OutputValidationError.checksums_differ


def _files_shown(files: list[str], en_more: str, vi_more: str) -> tuple[str, str]:
    """Bullets of the first CHECKSUM_FILES_SHOWN files, and how many more (English, Vietnamese)."""
    shown = _bullets(files[:CHECKSUM_FILES_SHOWN])
    rest = len(files) - CHECKSUM_FILES_SHOWN
    if rest <= 0:
        return shown, shown
    return shown + f"\n• ... {en_more.format(n=rest)}", shown + f"\n• ... {vi_more.format(n=rest)}"


def _checksum_sections(differ, missing, extra, path: str) -> tuple[str, str]:
    en, vi = [], []
    for files, head_en, head_vi in (
        (differ, "Changed (bytes differ from their SHA-256)", "Đã thay đổi (bytes khác SHA-256 đã ghi)"),
        (missing, "Missing", "Bị thiếu"),
        (extra, "Not listed (not written by the build)", "Không có trong danh sách (không do lần build ghi)"),
    ):
        if files:
            body_en, body_vi = _files_shown(
                files,
                f"and {{n}} more (`mintdim verify {path}` lists them all)",
                f"và {{n}} file khác (`mintdim verify {path}` liệt kê đủ)",
            )
            en.append(f"{head_en}:\n\n{body_en}")
            vi.append(f"{head_vi}:\n\n{body_vi}")
    return "\n\n".join(en), "\n\n".join(vi)


class TokenDTypeValidationError(MintDimError):
    @classmethod
    def make(cls, vocab_size: int | None = None, **kw):
        en = (
            "Tokenizer vocabulary is too large for supported token dtypes.\n\nSupported dtypes:\n\n• uint16\n"
            "• uint32"
        )
        vi = (
            "Vocab của tokenizer quá lớn so với dtype token được hỗ trợ.\n\nCác dtype hiện hỗ trợ:\n\n"
            "• uint16\n• uint32"
        )
        if vocab_size is not None:
            en += f"\n\nvocab_size: {vocab_size}"
            vi += f"\n\nvocab_size: {vocab_size}"
        return cls(en, vi, **kw)


_SPS_RULES_EN = [
    "each samples_per_shard[i] is a positive int",
    "len(samples_per_shard) == 1 or len(samples_per_shard) == file_count",
]
_SPS_RULES_VI = [
    "mỗi samples_per_shard[i] phải là số nguyên dương",
    "len(samples_per_shard) == 1 hoặc len(samples_per_shard) == số file",
]


class SamplesPerShardError(MintDimError):
    @classmethod
    def make(cls, en_problem: str, vi_problem: str, **kw):
        return cls(
            f"Invalid samples_per_shard.\n\nProblem: {en_problem}\n\nRules:\n\n{_bullets(_SPS_RULES_EN)}",
            f"samples_per_shard không hợp lệ.\n\nVấn đề: {vi_problem}\n\nQuy tắc:\n\n"
            f"{_bullets(_SPS_RULES_VI)}",
            **kw,
        )

    @classmethod
    def value(cls, index: int, got, **kw):
        return cls.make(
            f"samples_per_shard[{index}] must be a positive int, got {got!r}",
            f"samples_per_shard[{index}] phải là số nguyên dương, hiện tại là {got!r}",
            **kw,
        )

    @classmethod
    def arity(cls, n_files: int, n_items: int, **kw):
        return cls.make(
            f"Received {n_files} input files but {n_items} samples_per_shard entries",
            f"Nhận {n_files} file đầu vào nhưng chỉ có {n_items} samples_per_shard",
            **kw,
        )

    @classmethod
    def not_list(cls, got: str, **kw):
        return cls.make(
            f"samples_per_shard must be a list of positive ints, got {got}",
            f"samples_per_shard phải là list số nguyên dương, hiện tại là {got}",
            **kw,
        )

    @classmethod
    def shared(cls, output: str, values: str, **kw):
        return cls.make(
            f"files that share output {output} must share samples_per_shard ({values})",
            f"các file dùng chung output {output} phải dùng chung samples_per_shard ({values})",
            **kw,
        )


class BuildError(MintDimError):
    """A stage failed without a spec error (killed job, disk full, a bug): says where to look."""

    @classmethod
    def make(cls, en_detail: str, vi_detail: str | None = None, **kw):
        return cls(f"The build failed.\n\n{en_detail}", f"Build thất bại.\n\n{vi_detail or en_detail}", **kw)

    # --- the run machinery's messages (runner, guard, jobs) -------------------------------------

    @classmethod
    def stopped(cls, signal_name: str, log: str, **kw):
        """`mintdim build` got SIGTERM/SIGHUP: Snakemake and its jobs were stopped with it."""
        return cls.make(
            f"The build was stopped ({signal_name}); Snakemake and its jobs were stopped with it.\n\n"
            f"Log: {log}\n\nRun the same command again: the build resumes from the finished jobs, and its "
            "output is the same as an uninterrupted build's.",
            f"Build đã bị dừng ({signal_name}); Snakemake và các job của nó cũng đã dừng.\n\n"
            f"Log: {log}\n\nHãy chạy lại đúng lệnh này: build tiếp tục từ các job đã xong, và output giống "
            "hệt output của một build không bị gián đoạn.",
            **kw,
        )

    @classmethod
    def interrupted(cls, stage: str, **kw):
        """A job stopped by Ctrl-C (SIGINT to the process group)."""
        return cls.make(
            f"The build was interrupted (Ctrl-C) during {stage}.\n\n"
            "Run the same command again: the build resumes from the finished jobs.",
            f"Build đã bị ngắt (Ctrl-C) trong lúc chạy {stage}.\n\n"
            "Hãy chạy lại đúng lệnh này: build tiếp tục từ các job đã xong.",
            **kw,
        )

    @classmethod
    def killed(cls, signum: int, log: str, **kw):
        return cls.make(
            f"Snakemake was killed (signal {signum}).\n\nLog: {log}\n\n"
            "Run the same command again: the build resumes from the finished jobs, and its output "
            "is the same as an uninterrupted build's.",
            f"Snakemake đã bị kill (tín hiệu {signum}).\n\nLog: {log}\n\n"
            "Hãy chạy lại đúng lệnh này: build tiếp tục từ các job đã xong, và output giống hệt output của "
            "một build không bị gián đoạn.",
            **kw,
        )

    @classmethod
    def already_running(cls, root: str, pid: str, **kw):
        who_en = f"process {pid}" if pid else "another process"
        who_vi = f"tiến trình {pid}" if pid else "một tiến trình khác"
        return cls.make(
            f"This build is already running ({who_en}), with the same work directory.\n\n"
            f"Work directory: {root}\n\n"
            "Wait for it to finish, or stop it, then run the same command again.",
            f"Build này đang chạy ({who_vi}), cùng thư mục làm việc.\n\n"
            f"Thư mục làm việc: {root}\n\n"
            "Hãy đợi nó chạy xong hoặc dừng nó, rồi chạy lại đúng lệnh này.",
            **kw,
        )

    @classmethod
    def job_failed(
        cls, stage: str, cause: str, paths: str | None = None, named: bool = True, space: bool = False, **kw
    ):
        """A job failed without a MintDim error (an OSError, a bug): its cause, the path where there
        is one (named: the system named it; else where the job writes), advice when a disk is full."""
        en = f"Stage: {stage}\n\nCause: {cause}"
        vi = f"Giai đoạn: {stage}\n\nNguyên nhân: {cause}"
        if paths:
            en += f"\n\n{'Path' if named else 'Writing to'}: {paths}"
            vi += f"\n\n{'Đường dẫn' if named else 'Đang ghi vào'}: {paths}"
        if space:
            en += (
                "\n\nThe file system is full, or a file size or quota limit was reached. Free space "
                "(or set work_dir / output.dir on a larger disk), then run the same command again."
            )
            vi += (
                "\n\nHệ thống file đã đầy, hoặc đã chạm giới hạn kích thước file hay quota. Hãy giải phóng "
                "dung lượng (hoặc đặt work_dir / output.dir trên ổ lớn hơn), rồi chạy lại đúng lệnh này."
            )
        return cls.make(en, vi, **kw)

    @classmethod
    def unexpected(cls, stage: str, exc: BaseException, writes=None, **kw):
        """A failure that is not a MintDim error (disk full, an unreadable file, a bug), in one clear message.
        An OSError names its path: the one the system reported, else where the job writes (`writes`)."""
        import errno
        import os

        cause = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, OSError) and exc.strerror:  # the path goes on a line of its own
            cause = f"{type(exc).__name__}: " + (f"[Errno {exc.errno}] " if exc.errno else "") + exc.strerror
        if not isinstance(exc, OSError):
            return cls.job_failed(stage, cause, **kw)
        paths = [p for p in (exc.filename, exc.filename2) if p] or [p for p in (writes or []) if p]
        # numpy: a short write
        space = exc.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT) or (
            exc.errno is None and "written" in str(exc)
        )
        return cls.job_failed(
            stage,
            cause,
            ", ".join(os.fsdecode(p) for p in paths) or None,
            named=bool(exc.filename),
            space=space,
            **kw,
        )

    @classmethod
    def disk_full_seen(cls, log: str, tail: str, **kw):
        """Snakemake's output said `No space left on device`; no job recorded where."""
        return cls.make(
            f"A file system the build writes to is full (No space left on device).\n\nLog: {log}\n\n{tail}",
            f"Hệ thống file mà build ghi vào đã đầy (No space left on device).\n\nLog: {log}\n\n{tail}",
            **kw,
        )

    @classmethod
    def disk_full(cls, where: str, logs: str, **kw):
        return cls.make(
            f"A file system the build writes to is full.\n\nPath: {where}\n\n"
            "Free space (or set work_dir / output.dir on a larger disk), then run the same command again.\n\n"
            f"Logs: {logs}",
            f"Hệ thống file mà build ghi vào đã đầy.\n\nĐường dẫn: {where}\n\n"
            "Hãy giải phóng dung lượng (hoặc đặt work_dir / output.dir trên ổ lớn hơn), rồi chạy lại đúng "
            f"lệnh này.\n\nLogs: {logs}",
            **kw,
        )

    @classmethod
    def snakemake_failed(cls, status: int, log: str, tail: str, **kw):
        return cls.make(
            f"Snakemake exited with status {status}.\n\nLog: {log}\n\n{tail}",
            f"Snakemake kết thúc với mã {status}.\n\nLog: {log}\n\n{tail}",
            **kw,
        )

    @classmethod
    def no_completion_record(cls, directory: str, reason: str, log: str, **kw):
        return cls.make(
            f"Snakemake ended without the completion record of {directory} ({reason}).\n\nLog: {log}\n\n"
            "Run the same command again.",
            f"Snakemake kết thúc mà không có bản ghi hoàn tất của {directory} ({reason}).\n\nLog: {log}\n\n"
            "Hãy chạy lại đúng lệnh này.",
            **kw,
        )

    @classmethod
    def no_mintdim_error(cls, logs: str, **kw):
        return cls.make(
            f"A job stopped without a MintDim error (killed, out of memory, or an executor failure).\n\n"
            f"Logs: {logs}",
            f"Một job đã dừng mà không có lỗi MintDim (bị kill, hết bộ nhớ, hoặc executor gặp lỗi).\n\n"
            f"Logs: {logs}",
            **kw,
        )

    @classmethod
    def orphans_alive(cls, root: str, pids: str, waited: float, **kw):
        return cls.make(
            f"Jobs of an earlier, killed run of this build are still running after {waited:.0f} s "
            f"(process {pids}).\n\nWork directory: {root}\n\n"
            "Stop them (kill PID) or wait for them to end, then run the same command again.",
            f"Các job của một lần chạy trước (đã bị dừng) của build này vẫn đang chạy sau {waited:.0f} s "
            f"(tiến trình {pids}).\n\nThư mục làm việc: {root}\n\n"
            "Hãy dừng chúng (kill PID) hoặc đợi chúng kết thúc, rồi chạy lại đúng lệnh này.",
            **kw,
        )


class MissingExtraError(MintDimError, ImportError):
    """An optional part of MintDim used without its package (an ImportError: `except ImportError` works)."""

    @classmethod
    def make(cls, what: str, extra: str | None, package: str, **kw):
        how = f"pip install 'mintdim[{extra}]'" + (f" (or pip install {package})" if package else "")
        if extra is None:
            how = f"pip install {package}"
        return cls(
            f"{what} needs a package that is not installed: {package}.\n\nInstall it with: {how}",
            f"{what} cần một package chưa được cài: {package}.\n\nHãy cài bằng: {how}",
            **kw,
        )


class ClusterError(MintDimError):
    """A Slurm cluster that the build cannot ask what it needs (mintdim/run/slurm.py): the command, its
    answer, and the profile key (or cluster setting) that makes it work. Nothing was submitted."""

    @classmethod
    def unreachable(cls, command: str, answer: str, **kw):
        return cls(
            "Slurm does not answer on this host; no job was submitted.\n\n"
            f"Command: {command}\nAnswer: {answer}"
            "\n\nRun the build where the Slurm commands work (a login node: sinfo lists the partitions; "
            "SLURM_CONF names the cluster's slurm.conf, and munged runs).",
            "Slurm không trả lời trên máy này; chưa có job nào được gửi.\n\n"
            f"Lệnh: {command}\nTrả lời: {answer}"
            "\n\nHãy chạy build ở nơi các lệnh Slurm hoạt động (một login node: sinfo liệt kê các partition; "
            "SLURM_CONF trỏ tới slurm.conf của cluster, và munged đang chạy).",
            **kw,
        )

    @classmethod
    def no_partition(cls, partition: str, known: list[str], **kw):
        names = ", ".join(known) or "(none)"
        return cls(
            f"The profile asks for the partition {partition}, which this cluster does not have; no job was "
            f"submitted.\n\nCommand: sinfo --noheader --format=%R\nAnswer: {names}\n\n"
            "Set slurm_partition (the profile's default-resources, or set-resources of a rule) "
            "to one of them.",
            f"Profile yêu cầu partition {partition}, nhưng cluster này không có; "
            "chưa có job nào được gửi.\n\n"
            f"Lệnh: sinfo --noheader --format=%R\nTrả lời: {names}\n\n"
            "Hãy đặt slurm_partition (default-resources của profile, hoặc set-resources của một rule) "
            "thành một trong số đó.",
            **kw,
        )

    @classmethod
    def no_status(cls, command: str, answer: str, other: str | None, **kw):
        """The job-status command cannot tell when a job ends: the build would wait for ever."""
        en = (
            f"Set slurm-status-command: {other} in the profile."
            if other
            else ("Set slurm-status-command in the profile to a command that answers here (sacct or squeue).")
        )
        vi = (
            f"Hãy đặt slurm-status-command: {other} trong profile."
            if other
            else (
                "Hãy đặt slurm-status-command trong profile thành một lệnh trả lời được ở đây "
                "(sacct hoặc squeue)."
            )
        )
        return cls(
            "Slurm cannot tell this build when its jobs end: the job-status command fails, and the build "
            f"would wait for ever. No job was submitted.\n\nCommand: {command}\nAnswer: {answer}\n\n{en}",
            "Slurm không thể cho build biết khi nào các job kết thúc: lệnh kiểm tra trạng thái job thất bại, "
            f"và build sẽ chờ mãi. Chưa có job nào được gửi.\n\nLệnh: {command}\nTrả lời: {answer}\n\n{vi}",
            **kw,
        )

    @classmethod
    def short_min_job_age(cls, age: int | None, needed: int, sacct: str | None, **kw):
        """Accounting disabled (or absent) and squeue forgets finished jobs before the next status check."""
        seen = f"{age} s" if age is not None else "unknown (scontrol show config does not say)"
        seen_vi = f"{age} s" if age is not None else "không rõ (scontrol show config không cho biết)"
        why = f"\nsacct: {sacct.strip().splitlines()[0] if sacct.strip() else 'no answer'}" if sacct else ""
        return cls(
            "Slurm cannot tell this build when its jobs end: squeue forgets a finished job after MinJobAge "
            f"= {seen}, before the next status check may come, and sacct does not answer. No job was "
            f"submitted.\n\nCommand: scontrol show config{why}\n\nSet MinJobAge of slurm.conf to "
            f"{needed} s or more, or enable accounting and set slurm-status-command: sacct in the profile.",
            "Slurm không thể cho build biết khi nào các job kết thúc: squeue quên một job đã xong sau "
            f"MinJobAge = {seen_vi}, trước khi lần kiểm tra trạng thái tiếp theo có thể đến, và sacct không "
            f"trả lời. Chưa có job nào được gửi.\n\nLệnh: scontrol show config{why}\n\nHãy đặt MinJobAge "
            f"trong slurm.conf từ {needed} s trở lên, hoặc bật accounting và đặt slurm-status-command: sacct "
            "trong profile.",
            **kw,
        )


class UsageError(MintDimError):
    """A command-line value that cannot be right (exit code 2)."""

    @classmethod
    def sample_range(cls, sample: int, count: int, out: str, **kw):
        return cls(
            f"--sample {sample} is not a sample of {out}: its ids are 0 to {count - 1} ({count} samples).",
            f"--sample {sample} không phải mẫu của {out}: id hợp lệ từ 0 đến {count - 1} ({count} mẫu).",
            **kw,
        )

    @classmethod
    def fraction(cls, option: str, value: str, **kw):
        return cls(
            f"{option} takes a fraction below 1 (0.05) or a percentage (5%), got {value!r}.",
            f"{option} nhận một phân số nhỏ hơn 1 (0.05) hoặc phần trăm (5%), hiện tại là {value!r}.",
            **kw,
        )

    @classmethod
    def positive(cls, option: str, value: str, **kw):
        return cls(
            f"{option} takes a positive integer, got {value!r}.",
            f"{option} nhận một số nguyên dương, hiện tại là {value!r}.",
            **kw,
        )

    # suggest-units (mintdim/reading/suggest.py)
    @classmethod
    def no_samples(cls, output: str, **kw):
        return cls(
            f"{output} holds no samples: there are no token lengths to suggest unit sizes from.",
            f"{output} không có mẫu nào: không có độ dài token nào để đề xuất unit sizes.",
            **kw,
        )

    @classmethod
    def above_max(cls, max_size: int, longest: int, needed: int, **kw):
        return cls(
            f"--max {max_size} is below the unit the longest sample needs ({longest} tokens need a unit "
            f"of {needed}).",
            f"--max {max_size} nhỏ hơn unit mà mẫu dài nhất cần ({longest} token cần unit {needed}).",
            **kw,
        )


class ExportError(MintDimError):
    """`mintdim export` could not write DEST (mintdim/reading/export.py); nothing is left there."""

    @classmethod
    def exists(cls, path: str, **kw):
        return cls(
            f"{path} already exists; mintdim export never overwrites a file. Choose a new --to, or move it "
            "away.",
            f"{path} đã tồn tại; mintdim export không bao giờ ghi đè file. Hãy chọn --to mới, hoặc chuyển nó "
            "đi chỗ khác.",
            **kw,
        )

    @classmethod
    def inside_output(cls, dest: str, out: str, **kw):
        return cls(
            f"{dest} is inside the output {out}, which holds only what its build wrote (mintdim verify "
            "would then fail). Choose a path outside it.",
            f"{dest} nằm trong output {out}, nơi chỉ chứa những gì build đã ghi (mintdim verify sẽ báo "
            "lỗi). Hãy chọn đường dẫn bên ngoài.",
            **kw,
        )

    @classmethod
    def write_failed(cls, dest: str, reason, **kw):
        return cls(
            f"Writing {dest} failed: {reason}. Nothing was left at {dest} (no half-written file).",
            f"Ghi {dest} thất bại: {reason}. Tại {dest} không còn gì (không có file ghi dở).",
            **kw,
        )


class TokenizerToolError(MintDimError):
    """A `mintdim tokenizer` command could not do what was asked (nothing was written)."""

    def __init__(self, en: str, vi: str | None = None, **kw):
        super().__init__(en, vi or en, **kw)

    # add-specials (mintdim/tokenizers/specials.py)
    @classmethod
    def exists(cls, out: str, **kw):
        return cls(
            f"{out} already exists; MintDim never overwrites a file. Choose a new OUT.",
            f"{out} đã tồn tại; MintDim không bao giờ ghi đè file. Hãy chọn OUT mới.",
            **kw,
        )

    @classmethod
    def same_path(cls, **kw):
        return cls(
            "OUT must differ from IN: IN is never touched", "OUT phải khác IN: IN không bao giờ bị sửa", **kw
        )

    @classmethod
    def out_extension(cls, ext: str, kind: str, **kw):
        return cls(
            f"OUT must end with {ext} (the extension MintDim expects for {kind})",
            f"OUT phải có đuôi {ext} (đuôi MintDim dùng cho {kind})",
            **kw,
        )

    @classmethod
    def unknown_kind(cls, path: str, **kw):
        return cls(
            f"{path}: not a SentencePiece .model, a tokenizer.json (.json) or a unitoken model directory",
            f"{path}: không phải SentencePiece .model, tokenizer.json (.json) hay thư mục model unitoken",
            **kw,
        )

    @classmethod
    def nothing_to_add(cls, unk_id: int, pad_id: int, **kw):
        return cls(
            f"the tokenizer already exposes unk_id {unk_id} and pad_id {pad_id}: nothing to add",
            f"tokenizer đã có unk_id {unk_id} và pad_id {pad_id}: không cần thêm gì",
            **kw,
        )

    @classmethod
    def already_has(cls, name: str, token_id: int, **kw):
        return cls(
            f"the tokenizer already has {name}_id {token_id}; --{name} adds only a missing one",
            f"tokenizer đã có {name}_id {token_id}; --{name} chỉ thêm token còn thiếu",
            **kw,
        )

    @classmethod
    def empty_token(cls, name: str, **kw):
        return cls(
            f"--{name} needs a non-empty token string", f"--{name} cần một chuỗi token không rỗng", **kw
        )

    @classmethod
    def same_tokens(cls, **kw):
        return cls(
            "--pad and --unk must be different strings", "--pad và --unk phải là chuỗi khác nhau", **kw
        )

    @classmethod
    def taken(cls, token: str, old_id, **kw):
        return cls(
            f"{token!r} is already in the vocabulary (id {old_id}); choose a string that is not, e.g. "
            "<|pad|>",
            f"{token!r} đã có trong vocab (id {old_id}); hãy chọn chuỗi chưa có, ví dụ <|pad|>",
            **kw,
        )

    @classmethod
    def needs_protobuf(cls, reason, **kw):
        return cls(
            f"editing a SentencePiece model needs protobuf ({reason}): pip install protobuf",
            f"sửa model SentencePiece cần protobuf ({reason}): pip install protobuf",
            **kw,
        )

    @classmethod
    def sentencepiece_unk(cls, **kw):
        return cls(
            "a SentencePiece model always has an unk piece; only --pad applies",
            "model SentencePiece luôn có unk piece; chỉ dùng được --pad",
            **kw,
        )

    @classmethod
    def not_appended(cls, token: str, **kw):
        return cls(f"could not append {token!r} as a new id", f"không thêm được {token!r} làm id mới", **kw)

    @classmethod
    def no_unk_slot(cls, kind: str, **kw):
        return cls(
            f"cannot set an unk token on a {kind} model here",
            f"không đặt được unk token cho model {kind}",
            **kw,
        )

    @classmethod
    def unitoken_token(cls, **kw):
        return cls(
            "a unitoken special token must be printable ASCII without spaces, e.g. <pad>",
            "special token của unitoken phải là ASCII in được, không có dấu cách, vd <pad>",
            **kw,
        )

    # the written tokenizer failed its check (nothing written)
    @classmethod
    def _unchecked(cls, en: str, vi: str, **kw):
        return cls(f"{en}; nothing written", f"{vi}; không ghi gì", **kw)

    @classmethod
    def not_exposed(cls, name: str, token_id: int, **kw):
        return cls._unchecked(
            f"the new tokenizer does not expose {name}_id {token_id}",
            f"tokenizer mới không có {name}_id {token_id}",
            **kw,
        )

    @classmethod
    def ids_change(cls, count: int, example: str, **kw):
        return cls._unchecked(
            f"{count} existing ids would change (e.g. {example!r})",
            f"{count} id hiện có sẽ bị đổi (vd {example!r})",
            **kw,
        )

    @classmethod
    def vocab_growth(cls, **kw):
        return cls._unchecked(
            "the vocabulary would not grow by exactly the added tokens",
            "vocab không tăng đúng số token thêm",
            **kw,
        )

    @classmethod
    def encodes_differently(cls, **kw):
        return cls._unchecked(
            "a text encodes differently with the new tokenizer",
            "một văn bản được mã hoá khác với tokenizer mới",
            **kw,
        )

    # export (mintdim/tokenizers/export.py)
    @classmethod
    def merges_line(cls, path: str, line: str, **kw):
        return cls(
            f"unexpected line in {path}: {line[:80]!r}",
            f"dòng không đúng dạng trong {path}: {line[:80]!r}",
            **kw,
        )

    @classmethod
    def not_model_dir(cls, model_dir: str, reason, **kw):
        return cls(
            f"{model_dir} is not a unitoken model directory: {reason}",
            f"{model_dir} không phải thư mục model unitoken: {reason}",
            **kw,
        )

    @classmethod
    def not_byte_unit(cls, model_dir: str, unit: str, **kw):
        return cls(
            f"{model_dir} is a {unit}-unit model; only byte-unit models have a tokenizer.json "
            "with the same ids (train with unit: byte)",
            f"{model_dir} là model unit {unit}; chỉ model unit byte mới có tokenizer.json cùng id "
            "(hãy train với unit: byte)",
            **kw,
        )

    @classmethod
    def unicode_bigrams(cls, model_dir: str, **kw):
        return cls(
            f"{model_dir} uses Unicode bigram boundaries, which tokenizer.json cannot express",
            f"{model_dir} dùng ranh giới Unicode bigram, tokenizer.json không biểu diễn được",
            **kw,
        )

    @classmethod
    def special_moved(cls, token: str, **kw):
        return cls(
            f"special token {token!r} would not keep its id", f"special token {token!r} bị đổi id", **kw
        )

    @classmethod
    def export_differs(cls, index: int, **kw):
        return cls(
            f"the exported tokenizer encodes text {index} differently; nothing written",
            f"tokenizer đã export mã hoá văn bản {index} khác đi; không ghi gì",
            **kw,
        )


def schema_violation(path: list, message: str) -> MintDimError:
    """A JSON Schema violation no named problem words (jsonschema's own English, in both texts), with the
    error class of the block it is in."""
    where = ".".join(str(p) for p in path) or "config"
    text = f"{where}: {message}"
    block, sub = (list(path) + [None, None])[:2]
    if block == "tokenizer":
        return TokenizerValidationError.config(text, text)
    if block == "units":
        return UnitValidationError.make(text, text, keys=[sub] if sub in _UNIT_KEY_RULES else ())
    if block == "output" and sub == "samples_per_shard":
        return SamplesPerShardError.make(text, text)
    if block == "output":
        return OutputValidationError.invalid(text, text)
    if block == "source" and sub == "fields":
        return FieldMappingError.invalid(text, text)
    if block == "source" and sub == "templates":
        return TemplateMappingError.invalid(text, text)
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

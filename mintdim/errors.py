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
from mintdim.catalogue.tokenizer import DIR_NAMES
from mintdim.catalogue.tokenizer import RULES as TOK_RULES

LANGS = ("en", "vi", "both")


class Row(int):
    """A 1-based row of a Parquet file or of a `datasets` directory (counted across its row groups or
    Arrow files). Given as the `line` of a constructor below, the text says Row (and Column) where a
    JSONL line's says Line (and Field): one constructor serves every input kind."""

    kind = "JSONL"

    def __new__(cls, number: int, kind: str = "Parquet"):
        row = super().__new__(cls, number)
        row.kind = kind
        return row


class _Formatter(string.Formatter):
    """str.format with the catalogue's specs: {x:bullets} (a line "• item" each), {x:comma} and
    {x:space} (items joined), {x:json} (in double quotes, with \\n escapes, as the spec shows a template
    or path), {x:?key} (an optional part: the entry `key` with the same fields, when x has a value). A
    Both value is its word in the language being rendered."""

    def __init__(self, lang: str, part):
        self.lang, self.part = lang, part

    def convert_field(self, value, conversion):
        return super().convert_field(self._word(value), conversion)

    def format_field(self, value, spec):
        value = self._word(value)
        if spec.startswith("?"):
            return self._word(self.part(spec[1:])) if _given(value) else ""
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


def _given(value) -> bool:
    """A field has a value (not None, False or empty): the condition of an optional part and of a variant."""
    return value is not None and value is not False and not (hasattr(value, "__len__") and len(value) == 0)


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

    path_is_file = False  # True: a `path` field is the error's file even without a `line` field

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
        and `at`); an entry with a base is put in its base's `{problem}`, the base's other fields
        being the entry's. A variant of the entry when the table has one: `key@row` for a Row (the
        words of a Parquet or `datasets` row), else `key@name` when field `name` has a value."""
        if isinstance(fields.get("line"), Row) and _entry(cls, key + "@row"):
            key += "@row"
        else:
            key = next(
                (f"{key}@{n}" for n, v in fields.items() if _given(v) and _entry(cls, f"{key}@{n}")), key
            )
        entry = _entry(cls, key)
        if "line" in fields:
            fields = _place(fields["line"]) | fields
        # an optional part {x:?key} is the entry as it stands, not as a subclass's texts() frames it
        part = functools.partial(MintDimError.texts.__func__, cls, **fields)
        text = Both(
            *(_Formatter(lang, part).vformat(getattr(entry, lang), (), fields) for lang in ("en", "vi"))
        )
        if entry.base:
            return cls.texts(entry.base, **fields | {"problem": text})
        return text

    @classmethod
    def message(cls, key: str, *args, lang: str = "en", file: str | None = None, line=None, **fields):
        """The error of catalogue entry `key`, its fields given by position (the entry's order) or by
        name; a field not given is None (`line`: the keyword's). Fields `path` and `line` are also the
        error's file and line."""
        names = _entry(cls, key).fields.split()
        if len(args) > len(names):
            raise TypeError(f"{cls.__name__}.{key} takes {len(names)} fields, got {len(args)}")
        fields = {name: line if name == "line" else None for name in names} | fields | dict(zip(names, args))
        if file is None and "path" in fields and ("line" in fields or cls.path_is_file):
            file, line = fields["path"], fields.get("line", line)
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
        return cls(data["en"], data["vi"], lang=lang, file=data.get("file"), line=data.get("line"))


# mintdim/config.py (the config check), mintdim/stages/preflight.py and the plan stage (source.take of
# an empty file), mintdim/api.py (an unknown pipeline): texts in mintdim/catalogue/config.py
class PipelineValidationError(MintDimError): ...


# a file a build, a reader or a command needs: texts in mintdim/catalogue/data.py
class MintDimFileNotFoundError(MintDimError): ...


# an input that cannot be read (mintdim/sources/): every text names the file, the error's file
class SourceParseError(MintDimError):
    path_is_file = True


class SampleSchemaError(MintDimError): ...


class ChatTemplateError(MintDimError):
    @classmethod
    def unlocated(cls, path: str, line: int, message: int, role: str, **kw):
        err = cls.message("unlocated", path, line, message, role, **kw)
        err.not_a_record = True  # the template rewrites the text: a fault of the template, not of the record
        return err


class TokenizerValidationError(MintDimError):
    @classmethod
    def texts(cls, key: str, **fields) -> Both:
        """A component as the key (the base of the config check's problems: "path", "train_bpe.out", ...;
        "config": its `component` field, else the whole config): the text `config`, listing that
        component's rules only (the spec)."""
        if key in TOK_RULES:
            component = fields.get("component", key) if key == "config" else key
            rules = TOK_RULES.get(component, TOK_RULES["config"])
            key, fields = "config", fields | {"component": component, "rules": rules}
        return super().texts(key, **fields)

    @classmethod
    def dir_expected(cls, kind: str, path: str, parent: str, missing: list[str] | None = None, **kw):
        """`missing`: the files the directory lacks (none: the fix names the directory)."""
        return extended(
            cls.message("dir_expected", kind, path, **kw),
            "dir_fix",
            kind=kind,
            parent=parent,
            what=DIR_NAMES[kind],
            missing=missing and Both(", no ".join(missing), ", ".join(missing)),
            holds=cls.texts("dir_holds_" + kind),
            json_file=kind == "hf_dir" and path.endswith(".json"),
            path=path,
        )


class TokenizerSpecialTokenError(MintDimError):
    @classmethod
    def make(cls, token: str, path: str | None = None, **kw):
        """After the spec's text, the command that writes a usable copy (`mintdim tokenizer add-specials`)."""
        shown = path or "IN"
        ext = next((x for x in (".model", ".json") if shown.endswith(x)), "")
        root = shown[: len(shown) - len(ext)].rstrip("/")
        return cls.message("make", token, path, shown, root, "pad" if token == "pad_id" else "unk", ext, **kw)

    @classmethod
    def dir_pad(cls, path: str, candidates: list[str], total: int, declared: str | None = None, **kw):
        """`candidates`: the special tokens it could pad with, the first few of `total`."""
        problem = cls.texts("no_pad_token" if declared is None else "pad_not_a_token", declared=declared)
        shown = ", ".join(json.dumps(c, ensure_ascii=False) for c in candidates) or cls.texts("no_tokens")
        more = total - len(candidates) if total > len(candidates) else None
        return cls.message("dir_pad", path, problem, shown, more, (candidates or ["<string>"])[0], **kw)


class _MappingError(MintDimError):
    """A config list per file (`arity`: one shared, or one per file) and what the files of one output share
    (`collision`): one shape each, in every subclass's words."""

    @classmethod
    def collision(cls, block: str, output: str, files: list[str], values: list, **kw):
        return cls.message("collision", block, output, [f"{f}: {v}" for f, v in zip(files, values)], **kw)


class TokenizerMappingError(_MappingError): ...


class FieldMappingError(_MappingError): ...


class TemplateMappingError(_MappingError): ...


class UnitMappingError(_MappingError): ...


class OutputMappingError(_MappingError): ...


class TemplateFieldMismatchError(MintDimError): ...


class TemplateTokenizerError(MintDimError): ...


def extended(err: MintDimError, key: str, **fields) -> MintDimError:
    """err with the catalogue entry `key` (of its class or a base) after its texts."""
    more = err.texts(key, **fields)
    err.en += more.en
    err.vi += more.vi
    return err.with_lang(err.lang)


class UnitValidationError(MintDimError):
    @classmethod
    def texts(cls, key: str, **fields) -> Both:
        """A problem under the rules of the unit keys it is about (its `keys` or `option`, else those
        UNIT_PROBLEM_KEYS names), then that each planning key applies only with sizes: auto; the spec's
        list when there is no key, or one without rules of its own."""
        keys = fields.get("keys") or fields.get("option") or UNIT_PROBLEM_KEYS.get(key, ())
        keys = [keys] if isinstance(keys, str) else list(keys)
        if not keys or any(k not in UNIT_RULES for k in keys):
            keys = [""]
        rules = [r for k in keys for r in UNIT_RULES[k]] + [AUTO_ONLY[k] for k in keys if k in AUTO_ONLY]
        return super().texts("rules", problem=super().texts(key, **fields), rules=rules)


# a sample longer than the largest unit size (or the row length): the plan stage counts them
# (mintdim/stages/plan.py overflow_counted)
class UnitOverflowError(MintDimError): ...


class OutputValidationError(MintDimError):
    @classmethod
    def texts(cls, key: str, how: str | None = None, **fields) -> Both:
        """{how}: the command that rebuilds, in the words of the run that refused (`mintdim build my.yaml
        --rebuild`, `job.run(rebuild=True)`); unknown: the same command with --rebuild."""
        how = f"`{how}`" if how else super().texts("rebuild_how")
        return super().texts(key, how=how, **fields)

    @classmethod
    def index_file(cls, key: str, file: str, *fields, **kw):
        """sample_index.idx's problems (index_file_damaged, _cut, _version): the file is its path."""
        out, name = os.path.split(file)
        return cls.message(key, out, name, *fields, file=file, **kw)

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


class TokenDTypeValidationError(MintDimError): ...


class SamplesPerShardError(MintDimError): ...


class BuildError(MintDimError): ...


class MissingExtraError(MintDimError, ImportError): ...


class ClusterError(MintDimError):
    @classmethod
    def no_partition(cls, partition: str, known: list[str], **kw):
        return cls.message("no_partition", partition, known or ["(none)"], **kw)

    @classmethod
    def short_min_job_age(cls, age: int | None, needed: int, sacct: str | None, **kw):
        seen = f"{age} s" if age is not None else cls.texts("age_unknown")
        said = sacct.strip().splitlines()[0] if sacct and sacct.strip() else "no answer"
        why = cls.texts("sacct_said", said=said) if sacct else ""
        return cls.message("short_min_job_age", seen, needed, why, **kw)


class UsageError(MintDimError): ...


class ExportError(MintDimError): ...


class TokenizerToolError(MintDimError): ...


# every error class by its spec name (from_dict, mintdim's public names)
ERROR_CLASSES = {
    name: value
    for name, value in list(globals().items())
    if isinstance(value, type) and issubclass(value, MintDimError) and not name.startswith("_")
}

__all__ = list(ERROR_CLASSES) + ["LANGS"]

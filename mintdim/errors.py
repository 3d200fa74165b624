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

    @classmethod
    def unknown_keys(cls, unknown: list[str], known, block: str | None = None, **kw):
        """Unknown keys, each with the closest known key when there is one (difflib)."""
        import difflib

        hints = []
        for key in unknown:
            close = difflib.get_close_matches(str(key), sorted(known), n=1, cutoff=0.6)
            if close:
                hints.append((key, close[0]))
        where_en = f"unknown keys in {block}" if block else "unknown config keys"
        where_vi = f"key không hợp lệ trong {block}" if block else "key cấu hình không hợp lệ"
        en = f"{where_en}: {unknown!r}" + "".join(f"\n\nDid you mean {b!r} instead of {a!r}?" for a, b in hints)
        vi = f"{where_vi}: {unknown!r}" + "".join(f"\n\nCó phải ý bạn là {b!r} thay vì {a!r}?" for a, b in hints)
        return cls.invalid(en, vi, **kw)


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


    @classmethod
    def chat(cls, path: str, line: int, message: int | None, problem_en: str, problem_vi: str, **kw):
        """A conversation record (source.chat) MintDim cannot render: message is its 0-based index."""
        where_en = f"\n\nMessage: {message}" if message is not None else ""
        where_vi = f"\n\nTin nhắn: {message}" if message is not None else ""
        return cls(
            f"JSONL conversation is not valid.\n\nFile: {path}\n\nLine: {line}{where_en}\n\nProblem: {problem_en}",
            f"Hội thoại JSONL không hợp lệ.\n\nFile: {path}\n\nDòng: {line}{where_vi}\n\nVấn đề: {problem_vi}",
            file=path, line=line, **kw,
        )


class ChatTemplateError(MintDimError):
    """The chat template raised on a conversation, or a trained span could not be located exactly."""

    @classmethod
    def raised(cls, path: str, line: int, message: str, **kw):
        return cls(
            f"The chat template raised an error on this conversation.\n\nFile: {path}\n\nLine: {line}\n\n"
            f"Template message: {message}",
            f"Chat template báo lỗi với hội thoại này.\n\nFile: {path}\n\nDòng: {line}\n\n"
            f"Thông báo của template: {message}",
            file=path, line=line, **kw,
        )

    @classmethod
    def unlocated(cls, path: str, line: int, message: int, role: str, **kw):
        return cls(
            f"The loss mask of a trained message cannot be located exactly in the rendered conversation.\n\n"
            f"File: {path}\n\nLine: {line}\n\nMessage: {message} (role {role})\n\n"
            "Problem: the chat template does not render this message's content as a part of it (it rewrites "
            "the text), so MintDim cannot tell which tokens to train; no mask is guessed\n\n"
            "Fix: use a template that renders the content verbatim (or with {% generation %} tags), or do not "
            "train this message",
            f"Không xác định chính xác được loss mask của một tin nhắn được train trong hội thoại đã render.\n\n"
            f"File: {path}\n\nDòng: {line}\n\nTin nhắn: {message} (role {role})\n\n"
            "Vấn đề: chat template không render nội dung tin nhắn này thành một phần của nó (template viết lại "
            "văn bản), nên MintDim không biết token nào cần train; MintDim không đoán mask\n\n"
            "Cách sửa: dùng template render nguyên văn nội dung (hoặc có thẻ {% generation %}), hoặc không train "
            "tin nhắn này",
            file=path, line=line, **kw,
        )

    @classmethod
    def missing(cls, tokenizer: str, **kw):
        return cls(
            f"No chat template was found for source.chat.\n\nTokenizer: {tokenizer}\n\n"
            "Looked for: chat_template.jinja beside tokenizer.json, chat_template in tokenizer_config.json\n\n"
            "Fix: name a Jinja template file: tokenizer: {hf_dir: {path: ..., chat_template: FILE}}",
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
               "merges.txt), train_bpe (trains one from the data), and hf_dir (a model's tokenizer directory: "
               "tokenizer.json + tokenizer_config.json).")
        vi += ("\n\nCũng được hỗ trợ: unitoken (thư mục model do ffbpe lưu: ffbpe.json, vocab.json, "
               "merges.txt), train_bpe (train từ dữ liệu), và hf_dir (thư mục tokenizer của model: "
               "tokenizer.json + tokenizer_config.json).")
        return cls(en, vi, **kw)


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
        en = f"Tokenizer library did not expose a required special token.\n\nSpecial token: pad_id\n\nTokenizer: {path}"
        vi = f"Thư viện tokenizer không cung cấp special token bắt buộc.\n\nSpecial token: pad_id\n\nTokenizer: {path}"
        if declared is not None:
            en += f"\n\nProblem: pad_token {_quoted(declared)} is not a token of this tokenizer (no new id is added)"
            vi += f"\n\nVấn đề: pad_token {_quoted(declared)} không phải token của tokenizer này (không thêm id mới)"
        else:
            en += "\n\nProblem: the directory declares no pad_token (tokenizer_config.json, special_tokens_map.json)"
            vi += "\n\nVấn đề: thư mục không khai báo pad_token (tokenizer_config.json, special_tokens_map.json)"
        shown = ", ".join(_quoted(c) for c in candidates)
        more = f" (and {total - len(candidates)} more)" if total > len(candidates) else ""
        more_vi = f" (và {total - len(candidates)} token khác)" if total > len(candidates) else ""
        example = _quoted(candidates[0]) if candidates else '"<string>"'
        en += (f"\n\nExisting special tokens it could pad with: {shown or 'none'}{more}\n\n"
               f"Fix: name one in the tokenizer block: hf_dir: {{path: {path}, pad_token: {example}}}")
        vi += (f"\n\nCác special token hiện có có thể dùng để pad: {shown or 'không có'}{more_vi}\n\n"
               f"Cách sửa: chỉ định một token trong khối tokenizer: hf_dir: {{path: {path}, pad_token: {example}}}")
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

    @classmethod
    def pack(cls, problem: str, value=None, **kw):
        """units.pack / units.overflow (packed rows): one of the problems below."""
        texts = {
            "both": ("declare either sizes or pack, not both (pack replaces sizes)",
                     "chỉ khai báo sizes hoặc pack, không cả hai (pack thay cho sizes)"),
            "overflow_alone": ("overflow applies only with pack (packed rows)",
                               "overflow chỉ dùng được với pack (hàng đóng gói)"),
            "pack": (f"pack must be a list of positive row lengths, e.g. [4096], got {value!r}",
                     f"pack phải là list độ dài hàng dương, ví dụ [4096], hiện tại là {value!r}"),
            "overflow": (f"overflow must be a list of error | drop | truncate, e.g. [drop], got {value!r}",
                         f"overflow phải là list gồm error | drop | truncate, ví dụ [drop], hiện tại là {value!r}"),
        }
        return cls.make(*texts[problem], **kw)


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

    @classmethod
    def busy(cls, directory: str, pids: str, **kw):
        """Another live build is filling this output directory."""
        return cls.invalid(
            f"{directory} is being built right now by another MintDim build (process {pids}). "
            "Wait for it to finish, or choose another output directory.",
            f"{directory} đang được một build MintDim khác tạo (tiến trình {pids}). "
            "Hãy đợi nó xong hoặc chọn thư mục output khác.", **kw)

    # --- a finished output met again (docs/reliability.md) --------------------------------------

    @classmethod
    def inputs_changed(cls, directory: str, changed: list[str], **kw):
        what = "\n".join(f"• {c}" for c in changed)
        return cls(
            f"Output directory holds this config's finished output, built from inputs that have changed "
            f"since.\n\nDirectory: {directory}\n\nChanged (size or modification time):\n\n{what}\n\n"
            "Nothing was built. To rebuild it from the current inputs, run `mintdim build CONFIG --rebuild` "
            "(replaces only this output, which MintDim wrote), or delete the directory first.",
            f"Thư mục output chứa output đã hoàn tất của config này, nhưng dữ liệu đầu vào đã thay đổi "
            f"từ đó.\n\nThư mục: {directory}\n\nĐã thay đổi (kích thước hoặc thời gian sửa):\n\n{what}\n\n"
            "Chưa build gì. Để build lại từ dữ liệu hiện tại, hãy chạy `mintdim build CONFIG --rebuild` "
            "(chỉ thay output này, do MintDim ghi), hoặc xoá thư mục trước.", **kw)

    @classmethod
    def other_config(cls, directory: str, build_id: str, **kw):
        return cls(
            f"Output directory holds the finished output of another MintDim config (build {build_id}).\n\n"
            f"Directory: {directory}\n\nNothing was built. Use a new output directory; or, to replace that "
            "output, run `mintdim build CONFIG --rebuild` (replaces only what MintDim wrote there), or delete it.",
            f"Thư mục output chứa output đã hoàn tất của một config MintDim khác (build {build_id}).\n\n"
            f"Thư mục: {directory}\n\nChưa build gì. Hãy dùng thư mục output mới; hoặc, để thay output đó, "
            "chạy `mintdim build CONFIG --rebuild` (chỉ thay những gì MintDim đã ghi), hoặc xoá nó.", **kw)

    @classmethod
    def not_a_directory(cls, directory: str, **kw):
        return cls(
            f"Output path exists and is not a directory.\n\nPath: {directory}\n\n"
            "Use a new output directory (or move that file away).",
            f"Đường dẫn output đã tồn tại và không phải thư mục.\n\nĐường dẫn: {directory}\n\n"
            "Hãy dùng thư mục output mới (hoặc chuyển file đó đi chỗ khác).", **kw)

    @classmethod
    def not_only_ours(cls, directory: str, files: list[str], **kw):
        shown = "\n".join(f"• {f}" for f in files) or "• ?"
        return cls(
            f"--rebuild replaces only a finished output exactly as MintDim wrote it; this directory holds "
            f"files MintDim did not write, or changed ones.\n\nDirectory: {directory}\n\n{shown}\n\n"
            "Nothing was deleted. Move those files away, or delete the directory yourself.",
            f"--rebuild chỉ thay một output đã hoàn tất đúng như MintDim đã ghi; thư mục này có file MintDim "
            f"không ghi, hoặc file đã bị sửa.\n\nThư mục: {directory}\n\n{shown}\n\n"
            "Không xoá gì. Hãy chuyển các file đó đi, hoặc tự xoá thư mục.", **kw)

    @classmethod
    def rebuilt_differs(cls, directory: str, first: str, **kw):
        return cls(
            f"The stages run again produced other bytes than the finished output in the directory.\n\n"
            f"Directory: {directory}\n\nFirst difference: {first}\n\nThe finished output was kept. "
            "To replace it, run `mintdim build CONFIG --rebuild`.",
            f"Các giai đoạn chạy lại tạo ra bytes khác với output đã hoàn tất trong thư mục.\n\n"
            f"Thư mục: {directory}\n\nKhác biệt đầu tiên: {first}\n\nOutput đã hoàn tất được giữ nguyên. "
            "Để thay nó, hãy chạy `mintdim build CONFIG --rebuild`.", **kw)


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
            "hệt output của một build không bị gián đoạn.", **kw)

    @classmethod
    def interrupted(cls, stage: str, **kw):
        """A job stopped by Ctrl-C (SIGINT to the process group)."""
        return cls.make(
            f"The build was interrupted (Ctrl-C) during {stage}.\n\n"
            "Run the same command again: the build resumes from the finished jobs.",
            f"Build đã bị ngắt (Ctrl-C) trong lúc chạy {stage}.\n\n"
            "Hãy chạy lại đúng lệnh này: build tiếp tục từ các job đã xong.", **kw)

    @classmethod
    def killed(cls, signum: int, log: str, **kw):
        return cls.make(
            f"Snakemake was killed (signal {signum}).\n\nLog: {log}\n\n"
            "Run the same command again: the build resumes from the finished jobs, and its output "
            "is the same as an uninterrupted build's.",
            f"Snakemake đã bị kill (tín hiệu {signum}).\n\nLog: {log}\n\n"
            "Hãy chạy lại đúng lệnh này: build tiếp tục từ các job đã xong, và output giống hệt output của "
            "một build không bị gián đoạn.", **kw)

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
            "Hãy đợi nó chạy xong hoặc dừng nó, rồi chạy lại đúng lệnh này.", **kw)

    @classmethod
    def job_failed(cls, stage: str, cause: str, paths: str | None = None, named: bool = True,
                   space: bool = False, **kw):
        """A job failed without a MintDim error (an OSError, a bug): its cause, the path where there
        is one (named: the system named it; else where the job writes), advice when a disk is full."""
        en = f"Stage: {stage}\n\nCause: {cause}"
        vi = f"Giai đoạn: {stage}\n\nNguyên nhân: {cause}"
        if paths:
            en += f"\n\n{'Path' if named else 'Writing to'}: {paths}"
            vi += f"\n\n{'Đường dẫn' if named else 'Đang ghi vào'}: {paths}"
        if space:
            en += ("\n\nThe file system is full, or a file size or quota limit was reached. Free space "
                   "(or set work_dir / output.dir on a larger disk), then run the same command again.")
            vi += ("\n\nHệ thống file đã đầy, hoặc đã chạm giới hạn kích thước file hay quota. Hãy giải phóng "
                   "dung lượng (hoặc đặt work_dir / output.dir trên ổ lớn hơn), rồi chạy lại đúng lệnh này.")
        return cls.make(en, vi, **kw)

    @classmethod
    def snakemake_locked(cls, snakefile: str, config: str, **kw):
        return cls.make(
            "The working directory is locked by another Snakemake run, or by a killed one.\n\n"
            "If no other build is running here, remove the stale lock with:\n\n"
            f"    snakemake --unlock --snakefile {snakefile} --configfile {config}\n\n"
            "then run the same command again.",
            "Thư mục làm việc đang bị khoá bởi một lần chạy Snakemake khác, hoặc bởi một lần đã bị dừng.\n\n"
            "Nếu không có build nào khác đang chạy ở đây, hãy gỡ khoá cũ bằng:\n\n"
            f"    snakemake --unlock --snakefile {snakefile} --configfile {config}\n\n"
            "rồi chạy lại đúng lệnh này.", **kw)

    @classmethod
    def disk_full_seen(cls, log: str, tail: str, **kw):
        """Snakemake's output said `No space left on device`; no job recorded where."""
        return cls.make(
            f"A file system the build writes to is full (No space left on device).\n\nLog: {log}\n\n{tail}",
            f"Hệ thống file mà build ghi vào đã đầy (No space left on device).\n\nLog: {log}\n\n{tail}", **kw)

    @classmethod
    def disk_full(cls, where: str, logs: str, **kw):
        return cls.make(
            f"A file system the build writes to is full.\n\nPath: {where}\n\n"
            "Free space (or set work_dir / output.dir on a larger disk), then run the same command again.\n\n"
            f"Logs: {logs}",
            f"Hệ thống file mà build ghi vào đã đầy.\n\nĐường dẫn: {where}\n\n"
            "Hãy giải phóng dung lượng (hoặc đặt work_dir / output.dir trên ổ lớn hơn), rồi chạy lại đúng lệnh này."
            f"\n\nLogs: {logs}", **kw)

    @classmethod
    def snakemake_failed(cls, status: int, log: str, tail: str, **kw):
        return cls.make(f"Snakemake exited with status {status}.\n\nLog: {log}\n\n{tail}",
                        f"Snakemake kết thúc với mã {status}.\n\nLog: {log}\n\n{tail}", **kw)

    @classmethod
    def no_completion_record(cls, directory: str, reason: str, log: str, **kw):
        return cls.make(
            f"Snakemake ended without the completion record of {directory} ({reason}).\n\nLog: {log}\n\n"
            "Run the same command again.",
            f"Snakemake kết thúc mà không có bản ghi hoàn tất của {directory} ({reason}).\n\nLog: {log}\n\n"
            "Hãy chạy lại đúng lệnh này.", **kw)

    @classmethod
    def no_mintdim_error(cls, logs: str, **kw):
        return cls.make(
            f"A job stopped without a MintDim error (killed, out of memory, or an executor failure).\n\n"
            f"Logs: {logs}",
            f"Một job đã dừng mà không có lỗi MintDim (bị kill, hết bộ nhớ, hoặc executor gặp lỗi).\n\n"
            f"Logs: {logs}", **kw)

    @classmethod
    def orphans_alive(cls, root: str, pids: str, waited: float, **kw):
        return cls.make(
            f"Jobs of an earlier, killed run of this build are still running after {waited:.0f} s "
            f"(process {pids}).\n\nWork directory: {root}\n\n"
            "Stop them (kill PID) or wait for them to end, then run the same command again.",
            f"Các job của một lần chạy trước (đã bị dừng) của build này vẫn đang chạy sau {waited:.0f} s "
            f"(tiến trình {pids}).\n\nThư mục làm việc: {root}\n\n"
            "Hãy dừng chúng (kill PID) hoặc đợi chúng kết thúc, rồi chạy lại đúng lệnh này.", **kw)


class MissingExtraError(MintDimError, ImportError):
    """An optional part of MintDim used without its package (an ImportError: `except ImportError` works)."""

    @classmethod
    def make(cls, what: str, extra: str | None, package: str, **kw):
        how = f"pip install 'mintdim[{extra}]'" + (f" (or pip install {package})" if package else "")
        if extra is None:
            how = f"pip install {package}"
        return cls(f"{what} needs a package that is not installed: {package}.\n\nInstall it with: {how}",
                   f"{what} cần một package chưa được cài: {package}.\n\nHãy cài bằng: {how}", **kw)


class UsageError(MintDimError):
    """A command-line value that cannot be right (exit code 2)."""

    @classmethod
    def sample_range(cls, sample: int, count: int, out: str, **kw):
        return cls(f"--sample {sample} is not a sample of {out}: its ids are 0 to {count - 1} ({count} samples).",
                   f"--sample {sample} không phải mẫu của {out}: id hợp lệ từ 0 đến {count - 1} ({count} mẫu).",
                   **kw)

    @classmethod
    def fraction(cls, option: str, value: str, **kw):
        return cls(f"{option} takes a fraction below 1 (0.05) or a percentage (5%), got {value!r}.",
                   f"{option} nhận một phân số nhỏ hơn 1 (0.05) hoặc phần trăm (5%), hiện tại là {value!r}.", **kw)

    @classmethod
    def positive(cls, option: str, value: str, **kw):
        return cls(f"{option} takes a positive integer, got {value!r}.",
                   f"{option} nhận một số nguyên dương, hiện tại là {value!r}.", **kw)


ERROR_CLASSES = {
    cls.__name__: cls
    for cls in [
        MintDimError, PipelineValidationError, MintDimFileNotFoundError, SourceParseError, SampleSchemaError,
        TokenizerValidationError, TokenizerSpecialTokenError, TokenizerMappingError, FieldMappingError,
        TemplateMappingError, TemplateFieldMismatchError, TemplateTokenizerError, UnitMappingError,
        OutputMappingError, UnitValidationError, UnitOverflowError, OutputValidationError,
        TokenDTypeValidationError, SamplesPerShardError, BuildError, ChatTemplateError,
        MissingExtraError, UsageError,
    ]
}

__all__ = list(ERROR_CLASSES) + ["LANGS"]

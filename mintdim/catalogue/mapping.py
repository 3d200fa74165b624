"""The mapping messages: a config list per file (one shared, or one per file) and what the files of one
output share (mintdim/config.py); a template against its fields (mintdim/config.py) and against the
tokenizer (mintdim/stages/preflight.py, mintdim/tokenizers/training.py)."""

from mintdim.catalogue.entry import Msg


def _arity(what: str, shared: str, mapped: str, what_vi: str, shared_vi: str, mapped_vi: str) -> Msg:
    """A list of `what` whose length is neither 1 (shared) nor the number of files (mapped)."""
    return Msg(
        "n_files n_items",
        f"Received {{n_files}} input files but {{n_items}} {what}.\n\nMintDim supports:\n\n"
        f"• {shared}\n• {mapped}",
        f"Nhận {{n_files}} file đầu vào nhưng chỉ có {{n_items}} {what_vi}.\n\nMintDim hỗ trợ:\n\n"
        f"• {shared_vi}\n• {mapped_vi}",
    )


_TRAIN_ON = (
    "Invalid train_on config.\n\nProblem: {problem}\n\nRules:\n\n",
    "Cấu hình train_on không hợp lệ.\n\nVấn đề: {problem}\n\nQuy tắc:\n\n",
)
# source.train_on's rules: of its shape, of field names, of roles (a conversation file, source.chat)
_TRAIN_ON_SHAPE = (
    "• train_on is a list of lists: one list shared by every file, or one per file",
    "• train_on là list các list: một list cho mọi file, hoặc mỗi file một list",
)
_TRAIN_ON_FIELDS = (
    '• train_on[i] names fields that files[i] declares (fields[i]), e.g. [["output"]]',
    '• train_on[i] gồm các field mà files[i] khai báo (fields[i]), ví dụ [["output"]]',
)
_TRAIN_ON_ROLES = (
    "• train_on[i] of a conversation file (source.chat) names roles, as the chat template sees them "
    '(after source.chat.roles when it maps them), e.g. [["assistant"]]',
    "• train_on[i] của file hội thoại (source.chat) gồm các role, như chat template thấy chúng "
    '(sau source.chat.roles nếu có ánh xạ), ví dụ [["assistant"]]',
)
# a field template against its fields (a record's own error when a record's file has its own template)
_MISMATCH = (
    "Source file: {source_file}\n\nAPI declaration for this file: fields = {fields!r} "
    "template = {template:json}\n\nField causing template mismatch: {field} Reason: ",
    "File nguồn: {source_file}\n\nKhai báo API cho file này: fields = {fields!r} "
    "template = {template:json}\n\nField gây lệch template: {field} Lý do: ",
)
_UNK = (
    "Template static parts produce UNK when encoded by the tokenizer.\n\n"
    "File index: {file_index}\n\nTemplate: {template:json}\n\n"
    "Problem: template literal characters are not fully covered by tokenizer vocabulary\n\n"
    "Fix: adjust template literal characters or use a tokenizer that covers them",
    "Phần literal của template tạo UNK khi tokenize.\n\nVị trí file: {file_index}\n\n"
    "Template: {template:json}\n\n"
    "Vấn đề: ký tự literal trong template không được tokenizer bao phủ\n\n"
    "Cách sửa: chỉnh ký tự literal hoặc dùng tokenizer bao phủ được",
)

MESSAGES = {
    # a base of the five below: files that share an output must share this block (collision)
    "_MappingError": {
        "collision": Msg(
            "block output pairs",
            "Files that share one output directory must share its {block}.\n\n"
            "Output directory: {output}\n\nFiles and their {block}:\n\n{pairs:bullets}",
            "Các file dùng chung một thư mục output phải dùng chung {block}.\n\n"
            "Thư mục output: {output}\n\nCác file và {block} của chúng:\n\n{pairs:bullets}",
        ),
    },
    "TokenizerMappingError": {
        "arity": _arity(
            "tokenizers",
            "1 tokenizer shared across all files",
            "N tokenizers for N files",
            "tokenizer",
            "1 tokenizer dùng chung cho tất cả file",
            "N tokenizer cho N file",
        ),
    },
    "FieldMappingError": {
        "arity": _arity(
            "field configs",
            "1 field config shared across all files",
            "N field configs for N files",
            "cấu hình fields",
            "1 fields dùng chung cho tất cả file",
            "N fields cho N file",
        ),
        "invalid": Msg(
            "problem",
            "Invalid fields config.\n\nProblem: {problem}\n\nRules:\n\n"
            "• fields is a list of lists of field names (strings)\n"
            "• len(fields) == 1 or len(fields) == file_count",
            "Cấu hình fields không hợp lệ.\n\nVấn đề: {problem}\n\nQuy tắc:\n\n"
            "• fields là list các list tên field (string)\n"
            "• len(fields) == 1 hoặc len(fields) == số file",
        ),
        "not_lists": Msg(
            "",
            'fields must be a list of lists, e.g. [["prompt", "response"]]',
            'fields phải là list các list, ví dụ [["prompt", "response"]]',
            base="invalid",
        ),
        "names": Msg(
            "index",
            "fields[{index}] must be a non-empty list of field names (strings)",
            "fields[{index}] phải là list tên field (string) không rỗng",
            base="invalid",
        ),
        "twice": Msg(
            "index names",
            "fields[{index}] names a field twice: {names!r}",
            "fields[{index}] khai báo một field hai lần: {names!r}",
            base="invalid",
        ),
        # `mintdim tokenizer train --jsonl` (mintdim/commands/tokenizer.py)
        "jsonl_needs_fields": Msg(
            "",
            "--jsonl needs --fields (the keys to render)",
            "--jsonl cần --fields (các key để render)",
            base="invalid",
        ),
        # source.train_on: its own rules (of field names, or of roles for a conversation file)
        "train_on_invalid": Msg(
            "problem",
            _TRAIN_ON[0] + _TRAIN_ON_SHAPE[0] + "\n" + _TRAIN_ON_FIELDS[0] + "\n" + _TRAIN_ON_ROLES[0],
            _TRAIN_ON[1] + _TRAIN_ON_SHAPE[1] + "\n" + _TRAIN_ON_FIELDS[1] + "\n" + _TRAIN_ON_ROLES[1],
        ),
        "train_on_fields": Msg(
            "problem", _TRAIN_ON[0] + _TRAIN_ON_FIELDS[0], _TRAIN_ON[1] + _TRAIN_ON_FIELDS[1]
        ),
        "train_on_roles": Msg(
            "problem", _TRAIN_ON[0] + _TRAIN_ON_ROLES[0], _TRAIN_ON[1] + _TRAIN_ON_ROLES[1]
        ),
        "train_on": Msg(
            "",
            'train_on must be a list of lists of field names, e.g. [["output"]]',
            'train_on phải là list các list tên field, ví dụ [["output"]]',
            base="train_on_invalid",
        ),
        "train_on_arity": Msg(
            "n_files n_items",
            "Received {n_files} input files but {n_items} train_on entries",
            "Nhận {n_files} file đầu vào nhưng chỉ có {n_items} train_on",
            base="train_on_invalid",
        ),
        "train_on_name": Msg(
            "index name declared",
            "train_on[{index}] names {name!r}, which is not one of the file's fields {declared!r}",
            "train_on[{index}] có {name!r}, không thuộc fields của file {declared!r}",
            base="train_on_fields",
        ),
        # a conversation file (source.chat) trains roles
        "train_on_role_name": Msg(
            "index name",
            "train_on[{index}] names {name!r}: a conversation file trains roles (strings), "
            'e.g. [["assistant"]]',
            'train_on[{index}] có {name!r}: file hội thoại train theo role (string), ví dụ [["assistant"]]',
            base="train_on_roles",
        ),
        "train_on_role": Msg(
            "index name produced",
            "train_on[{index}] names role {name!r}, which source.chat.roles never produces {produced!r}",
            "train_on[{index}] có role {name!r}, không thuộc các role mà source.chat.roles tạo ra "
            "{produced!r}",
            base="train_on_roles",
        ),
    },
    "TemplateMappingError": {
        "arity": _arity(
            "templates",
            "1 template shared across all files",
            "N templates for N files",
            "template",
            "1 template dùng chung cho tất cả file",
            "N template cho N file",
        ),
        "invalid": Msg(
            "problem",
            "Invalid templates config.\n\nProblem: {problem}\n\nRules:\n\n"
            "• templates is a list of strings\n• len(templates) == 1 or len(templates) == file_count",
            "Cấu hình templates không hợp lệ.\n\nVấn đề: {problem}\n\nQuy tắc:\n\n"
            "• templates là list các string\n• len(templates) == 1 hoặc len(templates) == số file",
        ),
        "not_strings": Msg(
            "", "templates must be a list of strings", "templates phải là list các string", base="invalid"
        ),
    },
    "UnitMappingError": {
        "arity": _arity(
            "unit configs",
            "1 unit config shared across all files",
            "N unit configs for N input files",
            "unit config",
            "1 unit config dùng chung cho tất cả file",
            "N unit config cho N file",
        ),
    },
    "OutputMappingError": {
        "arity": _arity(
            "output directories",
            "1 shared output directory",
            "N output directories for N input files",
            "thư mục output",
            "1 output dùng chung",
            "N output cho N file",
        ),
        "same_file": Msg(
            "output path first second",
            "A file is declared twice for one output directory.\n\nOutput directory: {output}\n"
            "File: {path} (source.files items {first} and {second}, counting from 0)\n\n"
            "The indexes name a sample's file by its path as declared, so the two could not be told apart: "
            "mintdim verify and mintdim export would refuse the output. To use the samples twice: "
            "source.take (2.0 takes every sample twice), a copy or a link of the file under another name, or "
            "another output directory.",
            "Một file được khai báo hai lần cho cùng một thư mục output.\n\nThư mục output: {output}\n"
            "File: {path} (phần tử {first} và {second} của source.files, đếm từ 0)\n\n"
            "Các index ghi file của mỗi sample bằng đường dẫn như đã khai báo, nên không thể phân biệt hai "
            "lần khai báo: mintdim verify và mintdim export sẽ từ chối output. Để dùng các sample hai lần: "
            "source.take (2.0 lấy mỗi sample hai lần), một bản sao hoặc link của file với tên khác, hoặc một "
            "thư mục output khác.",
        ),
    },
    "TemplateFieldMismatchError": {
        "placeholder": Msg(
            "source_file fields template field reason",
            _MISMATCH[0] + "invalid placeholder ({reason}); use {{name}}, and {{{{ }}}} for literal braces",
            _MISMATCH[1]
            + "placeholder không hợp lệ ({reason}); dùng {{name}}, và {{{{ }}}} cho dấu ngoặc literal",
        ),
        "undeclared": Msg(
            "source_file fields template field",
            _MISMATCH[0] + "template uses {{{field}}}, but fields does not declare it",
            _MISMATCH[1] + "template dùng {{{field}}}, nhưng fields không khai báo field này",
        ),
        "unused": Msg(
            "source_file fields template field",
            _MISMATCH[0] + "fields declares {field}, but template does not use {{{field}}}",
            _MISMATCH[1] + "fields khai báo {field}, nhưng template không dùng {{{field}}}",
        ),
    },
    # make: make@literal when the static part that encodes to UNK is known
    "TemplateTokenizerError": {
        "make": Msg("file_index template literal", *_UNK),
        "make@literal": Msg(
            "file_index template literal",
            _UNK[0] + "\n\nLiteral: {literal:json}",
            _UNK[1] + "\n\nLiteral: {literal:json}",
        ),
    },
}

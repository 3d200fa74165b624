"""The inputs' and records' messages: files not found, inputs that cannot be read, samples that do not
fit the config, conversations the chat template cannot render (mintdim/sources/, mintdim/stages/)."""

from mintdim.catalogue.entry import Msg

# a file not found: the context (English, then Vietnamese), and the file after it
_MISSING = (
    "Required file was not found.\n\nContext: ",
    "\n\nMissing file: {path}",
    "Không tìm thấy file cần dùng.\n\nContext: ",
    "\n\nFile thiếu: {path}",
)
# a chat template dropped a message: what is missing (its content, one of its tool calls), then the fix
_DROPPED = (
    "A message is missing from the rendered conversation: the chat template dropped it.\n\n"
    "File: {path}\n\nLine: {line}\n\nMessage: {where} (role {role})\n\nProblem: ",
    " is not in the rendered conversation{roles:?dropped_named}; MintDim never drops a message silently"
    "\n\nFix: ",
    "Một tin nhắn bị thiếu trong hội thoại đã render: chat template đã bỏ nó.\n\nFile: {path}\n\n"
    "Dòng: {line}\n\nTin nhắn: {where} (role {role})\n\nVấn đề: ",
    " không có trong hội thoại đã render{roles:?dropped_named}; MintDim không bao giờ âm thầm bỏ một tin "
    "nhắn\n\nCách sửa: ",
)

MESSAGES = {
    # a file a build, a reader or a command needs; resolved (pre-flight): a relative path, then the
    # directory it was resolved from (`base`), then what the directory that lacks it holds (`holds`)
    "MintDimFileNotFoundError": {
        "make": Msg(
            "context path", _MISSING[0] + "{context}" + _MISSING[1], _MISSING[2] + "{context}" + _MISSING[3]
        ),
        "resolved": Msg(
            "context path base holds",
            _MISSING[0] + "{context}" + _MISSING[1] + "{base:?resolved_from}{holds:?holds}",
            _MISSING[2] + "{context}" + _MISSING[3] + "{base:?resolved_from}{holds:?holds}",
        ),
        "holds": Msg("holds", "\n\n{holds}", "\n\n{holds}"),
        "resolved_from": Msg(
            "base",
            "\n\nResolved from: {base} (relative paths start from the directory you run in)",
            "\n\nTính từ thư mục: {base} (đường dẫn tương đối tính từ thư mục bạn chạy lệnh)",
        ),
        # a directory given as a source that is not a `datasets` directory (no state.json: `path`); `split`:
        # a split's directory, when it holds a DatasetDict
        "datasets_state": Msg(
            "path split",
            _MISSING[0] + "source (a datasets directory)" + _MISSING[1] + "\n\nA datasets directory is what "
            "Dataset.save_to_disk writes: its Arrow files, dataset_info.json and state.json (which lists the "
            "Arrow files in order).{split:?dataset_dict}",
            _MISSING[2] + "source (a datasets directory)" + _MISSING[3] + "\n\nThư mục datasets là thứ "
            "Dataset.save_to_disk ghi ra: các file Arrow, dataset_info.json và state.json (liệt kê các file "
            "Arrow theo thứ tự).{split:?dataset_dict}",
        ),
        "dataset_dict": Msg(
            "split",
            "\n\nThis directory holds a DatasetDict (dataset_dict.json): give one split's directory, "
            "e.g. {split}.",
            "\n\nThư mục này chứa một DatasetDict (dataset_dict.json): hãy chỉ định thư mục của một "
            "split, ví dụ {split}.",
        ),
    },
    # an input that cannot be read (mintdim/sources/): every text names the file, the error's file
    "SourceParseError": {
        # a JSONL line: the entry line_<reason> says why (json, utf8, object, surrogate, compressed,
        # unreadable)
        "parse": Msg(
            "path line problem",
            "JSONL line could not be parsed.\n\nFile: {path}\n\nLine: {line}\n\nReason: {problem}",
            "Không đọc được dòng JSONL.\n\nFile: {path}\n\nDòng: {line}\n\nLý do: {problem}",
        ),
        "line_json": Msg("path line", "invalid JSON syntax", "JSON không hợp lệ", base="parse"),
        "line_utf8": Msg("path line", "invalid UTF-8", "UTF-8 không hợp lệ", base="parse"),
        "line_object": Msg(
            "path line", "line is not a JSON object", "dòng không phải JSON object", base="parse"
        ),
        "line_surrogate": Msg(
            "path line",
            "a declared field holds a lone surrogate escape (not encodable as UTF-8)",
            "một field đã khai báo chứa surrogate đơn lẻ (không mã hoá được UTF-8)",
            base="parse",
        ),
        "line_compressed": Msg(
            "path line",
            "the compressed file could not be decompressed",
            "không giải nén được file",
            base="parse",
        ),
        "line_unreadable": Msg(
            "path line", "the file could not be read", "không đọc được file", base="parse"
        ),
        # an input whose name is none MintDim reads (sources/inputs.py ACCEPTED), then the fix for
        # what the file seems to hold (sources/inputs.py shape_of): a JSON array, or JSON objects
        "unknown_kind": Msg(
            "path array lines stem",
            "Input file is not of a kind MintDim reads.\n\nFile: {path}\n\nReason: MintDim reads JSON "
            "Lines (.jsonl, .jsonl.gz, .jsonl.zst), Parquet (.parquet) and datasets directories (what "
            "Dataset.save_to_disk writes), told apart by their names{array:?shape_array}{lines:?shape_lines}",
            "File đầu vào không thuộc loại MintDim đọc được.\n\nFile: {path}\n\nLý do: MintDim đọc JSON "
            "Lines (.jsonl, .jsonl.gz, .jsonl.zst), Parquet (.parquet) và thư mục datasets (do "
            "Dataset.save_to_disk ghi ra), phân biệt theo tên{array:?shape_array}{lines:?shape_lines}",
        ),
        "shape_array": Msg(
            "path stem",
            "\n\nThe file holds a JSON array. Fix: write its records as JSON Lines, a line each: "
            'python -c "import json, sys; [print(json.dumps(r, ensure_ascii=False)) for r in '
            "json.load(open(sys.argv[1], encoding='utf-8'))]\" {path} > {stem}.jsonl",
            "\n\nFile chứa một mảng JSON. Cách sửa: ghi các bản ghi thành JSON Lines, mỗi dòng một: "
            'python -c "import json, sys; [print(json.dumps(r, ensure_ascii=False)) for r in '
            "json.load(open(sys.argv[1], encoding='utf-8'))]\" {path} > {stem}.jsonl",
        ),
        "shape_lines": Msg(
            "",
            "\n\nThe file starts with a JSON object: if it is JSON Lines, rename it to .jsonl",
            "\n\nFile bắt đầu bằng một JSON object: nếu nó là JSON Lines, hãy đổi tên thành .jsonl",
        ),
        # an input with no sample at all (source.allow_empty: true makes it
        # a warning); kind: JSONL, Parquet, datasets (sources/inputs.py label); empty_<reason> says why
        "no_samples": Msg(
            "path kind problem",
            "{kind} file holds no samples.\n\nFile: {path}\n\nReason: {problem}\n\n"
            "Fix: remove it from source.files, or set source.allow_empty: true to build without it "
            "(a warning in the console and stats.json)",
            "File {kind} không có mẫu nào.\n\nFile: {path}\n\nLý do: {problem}\n\n"
            "Cách sửa: bỏ nó khỏi source.files, hoặc đặt source.allow_empty: true để build không có nó "
            "(kèm cảnh báo trên console và trong stats.json)",
        ),
        "empty_empty": Msg(
            "path kind", "the file is empty (0 bytes)", "file rỗng (0 byte)", base="no_samples"
        ),
        "empty_blank": Msg(
            "path kind",
            "the file holds no line with data (only white space or blank lines)",
            "file không có dòng nào chứa dữ liệu (chỉ có khoảng trắng hoặc dòng trống)",
            base="no_samples",
        ),
        "empty_no_rows": Msg("path kind", "it has no row", "không có hàng nào", base="no_samples"),
        # Parquet files and datasets directories (mintdim/sources/arrow.py): a Row
        "row": Msg(
            "path line problem",
            "{kind} row could not be read.\n\nFile: {path}\n\nRow: {line}\n\nReason: {problem}",
            "Không đọc được hàng {kind}.\n\nFile: {path}\n\nHàng: {line}\n\nLý do: {problem}",
        ),
        # footer: a damaged or missing footer, so no row can be read, from the first one on (line: Row 1)
        "footer": Msg(
            "path line detail",
            "the file's footer (the index of its row groups) is damaged or missing, so no row can be "
            "read: {detail}",
            "footer của file (chỉ mục các row group) bị hỏng hoặc thiếu, nên không đọc được hàng nào: "
            "{detail}",
            base="row",
        ),
        "empty_row_group": Msg(
            "path line group",
            "row group {group} is empty (0 rows) in a file that has rows; rewrite the file without it "
            "(e.g. pyarrow.parquet.write_table(pyarrow.parquet.read_table(f), new_path))",
            "row group {group} rỗng (0 hàng) trong một file có dữ liệu; hãy ghi lại file không có "
            "row group đó (ví dụ pyarrow.parquet.write_table(pyarrow.parquet.read_table(f), new_path))",
            base="row",
        ),
        # data pages (Parquet) or record batches (Arrow) that pyarrow cannot decode, from this row on
        "unreadable_rows": Msg(
            "path line detail",
            "the data from this row on cannot be decoded: {detail}",
            "không giải mã được dữ liệu từ hàng này trở đi: {detail}",
            base="row",
        ),
        # a `datasets` directory (Dataset.save_to_disk) whose state.json or Arrow files cannot be used
        "datasets_dir": Msg(
            "path problem",
            "datasets directory could not be read.\n\nFile: {path}\n\nReason: {problem}",
            "Không đọc được thư mục datasets.\n\nFile: {path}\n\nLý do: {problem}",
        ),
        "datasets_state_json": Msg(
            "path detail",
            "not the state.json save_to_disk writes (_data_files: [{{filename}}]): {detail}",
            "không phải state.json mà save_to_disk ghi ra (_data_files: [{{filename}}]): {detail}",
            base="datasets_dir",
        ),
        "datasets_no_files": Msg(
            "path",
            "state.json lists no Arrow file",
            "state.json không liệt kê file Arrow nào",
            base="datasets_dir",
        ),
        "datasets_not_stream": Msg(
            "path detail",
            "not an Arrow stream file: {detail}",
            "không phải file Arrow stream: {detail}",
            base="datasets_dir",
        ),
        "datasets_columns_differ": Msg(
            "path",
            "its columns differ from the first Arrow file's",
            "các cột khác với file Arrow đầu tiên",
            base="datasets_dir",
        ),
    },
    # a sample that does not fit the config: JSONL fields, or (key@row) Parquet / datasets columns
    "SampleSchemaError": {
        "missing": Msg(
            "path line declared missing available",
            "JSONL sample is missing declared fields.\n\nFile: {path}\n\nLine: {line}\n\n"
            "Declared fields: {declared:space}\n\nMissing fields: {missing:space}\n\n"
            "Available keys: {available:space}",
            "Sample JSONL thiếu fields đã khai báo.\n\nFile: {path}\n\nDòng: {line}\n\n"
            "Fields đã khai báo: {declared:space}\n\nFields bị thiếu: {missing:space}\n\n"
            "Keys hiện có: {available:space}",
        ),
        "missing@row": Msg(
            "path line declared missing available",
            "{kind} sample is missing declared fields.\n\nFile: {path}\n\nRow: {line}\n\n"
            "Declared fields: {declared:space}\n\nMissing columns: {missing:space}\n\n"
            "Available columns: {available:space}",
            "Sample {kind} thiếu fields đã khai báo.\n\nFile: {path}\n\nHàng: {line}\n\n"
            "Fields đã khai báo: {declared:space}\n\nCột bị thiếu: {missing:space}\n\n"
            "Cột hiện có: {available:space}",
        ),
        # found: a JSON type; for a Row, an Arrow type (the column's) or null
        "not_string": Msg(
            "path line field found",
            "JSONL sample field is not a string.\n\nFile: {path}\n\nLine: {line}\n\n"
            "Field: {field}\n\nFound JSON type: {found}",
            "Field của sample JSONL không phải string.\n\nFile: {path}\n\nDòng: {line}\n\n"
            "Field: {field}\n\nKiểu JSON hiện có: {found}",
        ),
        "not_string@row": Msg(
            "path line field found",
            "{kind} sample field is not a string.\n\nFile: {path}\n\nRow: {line}\n\n"
            "Column: {field}\n\nFound type: {found}",
            "Field của sample {kind} không phải string.\n\nFile: {path}\n\nHàng: {line}\n\n"
            "Cột: {field}\n\nKiểu hiện có: {found}",
        ),
        # A conversation record (source.chat) MintDim cannot render (mintdim/sources/chat.py
        # read_messages): the base `chat`, or `chat_message` naming the message (its 0-based index in
        # the record's list). name: the record or message key at fault; found: the JSON type found there
        "chat": Msg(
            "path line problem",
            "{kind} conversation is not valid.\n\nFile: {path}\n\n{at}: {line}\n\nProblem: {problem}",
            "Hội thoại {kind} không hợp lệ.\n\nFile: {path}\n\n{at}: {line}\n\nVấn đề: {problem}",
        ),
        "chat_message": Msg(
            "path line message problem",
            "{kind} conversation is not valid.\n\nFile: {path}\n\n{at}: {line}\n\nMessage: {message}\n\n"
            "Problem: {problem}",
            "Hội thoại {kind} không hợp lệ.\n\nFile: {path}\n\n{at}: {line}\n\nTin nhắn: {message}\n\n"
            "Vấn đề: {problem}",
        ),
        "chat_no_messages": Msg(
            "path line name keys",
            "the record has no key {name!r} (keys: {keys:comma})",
            "bản ghi không có key {name!r} (các key: {keys:comma})",
            base="chat",
        ),
        "chat_not_list": Msg(
            "path line name found",
            "{name!r} must be a list of messages, found JSON type {found}",
            "{name!r} phải là list tin nhắn, kiểu JSON hiện có: {found}",
            base="chat",
        ),
        "chat_empty": Msg(
            "path line name",
            "{name!r} is an empty list: a conversation needs at least one message",
            "{name!r} là list rỗng: hội thoại cần ít nhất một tin nhắn",
            base="chat",
        ),
        "chat_system_not_string": Msg(
            "path line name found",
            "the system prompt {name!r} must be a string, found JSON type {found}",
            "system prompt {name!r} phải là string, kiểu JSON hiện có: {found}",
            base="chat",
        ),
        "chat_message_not_object": Msg(
            "path line message found",
            "a message must be a JSON object, found JSON type {found}",
            "tin nhắn phải là JSON object, kiểu JSON hiện có: {found}",
            base="chat_message",
        ),
        "chat_no_role": Msg(
            "path line message name",
            "the message has no role (key {name!r})",
            "tin nhắn không có role (key {name!r})",
            base="chat_message",
        ),
        "chat_role_not_string": Msg(
            "path line message name found",
            "the role (key {name!r}) must be a string, found JSON type {found}",
            "role (key {name!r}) phải là string, kiểu JSON hiện có: {found}",
            base="chat_message",
        ),
        "chat_unknown_role": Msg(
            "path line message role roles",
            "unknown role {role!r} (source.chat.roles maps {roles:comma})",
            "role {role!r} không xác định (source.chat.roles ánh xạ {roles:comma})",
            base="chat_message",
        ),
        # found: a JSON type, or "missing"
        "chat_content": Msg(
            "path line message name found",
            "content (key {name!r}) must be a string or a list of text parts, found {found}",
            "content (key {name!r}) phải là string hoặc list các phần text, hiện có: {found}",
            base="chat_message",
        ),
        "chat_train_flag": Msg(
            "path line message name found",
            "the train flag (key {name!r}) must be true or false, found {found}",
            "cờ train (key {name!r}) phải là true hoặc false, hiện có: {found}",
            base="chat_message",
        ),
        "chat_two_systems": Msg(
            "path line message name",
            "the record has both a system prompt {name!r} and a system message",
            "bản ghi có cả system prompt {name!r} lẫn tin nhắn system",
            base="chat_message",
        ),
        "chat_extra_not_objects": Msg(
            "path line name",
            "{name!r} must be a list of JSON objects (schemas)",
            "{name!r} phải là list JSON object (schema)",
            base="chat",
        ),
        "chat_tool_calls_not_list": Msg(
            "path line message found",
            "'tool_calls' must be a list of tool calls, found JSON type {found}",
            "'tool_calls' phải là list các tool call, kiểu JSON hiện có: {found}",
            base="chat_message",
        ),
        "chat_tool_call": Msg(
            "path line message found",
            "a tool call must be a JSON object with a function {{name, arguments}}, found JSON type {found}",
            "tool call phải là JSON object có function {{name, arguments}}, kiểu JSON hiện có: {found}",
            base="chat_message",
        ),
        "chat_tool_call_name": Msg(
            "path line message",
            "a tool call's function has no name (a string)",
            "function của tool call không có name (string)",
            base="chat_message",
        ),
        # found: what the arguments are: "missing" (in both texts), or one of the three found_* below
        # (mintdim/sources/chat.py picks it)
        "chat_tool_call_arguments": Msg(
            "path line message name found",
            "arguments of tool call {name!r} must be a JSON object or a string holding one, found {found}",
            "arguments của tool call {name!r} phải là JSON object hoặc string chứa JSON object, "
            "hiện có: {found}",
            base="chat_message",
        ),
        "found_not_json": Msg("", "a string that is not JSON", "string không phải JSON"),
        "found_string": Msg("type", "a string holding JSON type {type}", "string chứa kiểu JSON {type}"),
        "found_type": Msg("type", "JSON type {type}", "kiểu JSON {type}"),
        "chat_kwargs_not_object": Msg(
            "path line name found",
            "{name!r} must be a JSON object (template variables), found JSON type {found}",
            "{name!r} phải là JSON object (các biến của template), kiểu JSON hiện có: {found}",
            base="chat",
        ),
        "chat_kwargs_reserved": Msg(
            "path line name names",
            "{name!r} may not set {names:comma}: MintDim passes messages, tools, documents and "
            "add_generation_prompt itself",
            "{name!r} không được đặt {names:comma}: MintDim tự truyền messages, tools, documents "
            "và add_generation_prompt",
            base="chat",
        ),
        "chat_no_parts": Msg(
            "path line message name",
            "content (key {name!r}) is an empty list of parts",
            "content (key {name!r}) là list rỗng",
            base="chat_message",
        ),
        # part: the part's "type" value, or the JSON type of a part that is no object
        "chat_part_type": Msg(
            "path line message part",
            'content part of type {part!r}: only text parts ({{"type": "text", "text": ...}}) can be '
            "rendered",
            'phần content kiểu {part!r}: chỉ render được phần text ({{"type": "text", "text": ...}})',
            base="chat_message",
        ),
    },
    # the chat template raised on a conversation, dropped a message, or a trained span could not be
    # located exactly (mintdim/sources/chat.py); no chat template; a template that does not compile
    "ChatTemplateError": {
        "raised": Msg(
            "path line message",
            "The chat template raised an error on this conversation.\n\nFile: {path}\n\n{at}: {line}\n\n"
            "Template message: {message}",
            "Chat template báo lỗi với hội thoại này.\n\nFile: {path}\n\n{at}: {line}\n\n"
            "Thông báo của template: {message}",
        ),
        "unlocated": Msg(
            "path line message role",
            "The loss mask of a trained message cannot be located exactly in the rendered conversation.\n\n"
            "File: {path}\n\n{at}: {line}\n\nMessage: {message} (role {role})\n\n"
            "Problem: the chat template does not render this message's content as a part of it (it rewrites "
            "the text), so MintDim cannot tell which tokens to train; no mask is guessed\n\n"
            "Fix: use a template that renders the content verbatim (or with {{% generation %}} tags), or do "
            "not train this message",
            "Không xác định chính xác được loss mask của một tin nhắn được train trong hội thoại đã "
            "render.\n\nFile: {path}\n\n{at}: {line}\n\nTin nhắn: {message} (role {role})\n\n"
            "Vấn đề: chat template không render nội dung tin nhắn này thành một phần của nó (template viết "
            "lại văn bản), nên MintDim không biết token nào cần train; MintDim không đoán mask\n\n"
            "Cách sửa: dùng template render nguyên văn nội dung (hoặc có thẻ {{% generation %}}), hoặc không "
            "train tin nhắn này",
        ),
        # dropped: a message the template did not render: its content, or (dropped@call) one of its tool
        # calls; `where`: its index, or the record's system prompt key (source.chat.system, dropped_system);
        # `roles`: the roles the template names, when it names some
        "dropped": Msg(
            "path line where role call roles",
            _DROPPED[0] + "its content" + _DROPPED[1] + "map the role to one the template renders "
            "(source.chat.roles), or, to let the template drop this role's messages, list it: "
            "source.chat.drop_roles: [{role}]",
            _DROPPED[2] + "nội dung của tin nhắn" + _DROPPED[3] + "ánh xạ role sang một role mà template "
            "render (source.chat.roles), hoặc, để template bỏ các tin nhắn của role này, liệt kê nó: "
            "source.chat.drop_roles: [{role}]",
        ),
        "dropped@call": Msg(
            "path line where role call roles",
            _DROPPED[0] + "its tool call {call!r}" + _DROPPED[1] + "use a chat template that writes tool "
            "calls: tokenizer: {{hf_dir: {{path: ..., chat_template: FILE}}}}",
            _DROPPED[2] + "tool call {call!r} của tin nhắn" + _DROPPED[3] + "dùng chat template có viết tool "
            "call: tokenizer: {{hf_dir: {{path: ..., chat_template: FILE}}}}",
        ),
        "dropped_system": Msg("name", "system prompt {name!r}", "system prompt {name!r}"),
        "dropped_named": Msg(
            "roles", " (the template names the roles {roles:comma})", " (template có các role {roles:comma})"
        ),
        "missing": Msg(
            "tokenizer",
            "No chat template was found for source.chat.\n\nTokenizer: {tokenizer}\n\n"
            "Looked for: chat_template.jinja beside tokenizer.json, chat_template in "
            "tokenizer_config.json\n\nFix: name a Jinja template file: tokenizer: {{hf_dir: {{path: ..., "
            "chat_template: FILE}}}}",
            "Không tìm thấy chat template cho source.chat.\n\nTokenizer: {tokenizer}\n\n"
            "Đã tìm: chat_template.jinja cạnh tokenizer.json, chat_template trong tokenizer_config.json\n\n"
            "Cách sửa: chỉ định file template Jinja: tokenizer: {{hf_dir: {{path: ..., "
            "chat_template: FILE}}}}",
        ),
        "invalid": Msg(
            "template problem",
            "The chat template cannot be compiled.\n\nTemplate: {template}\n\nProblem: {problem}",
            "Không biên dịch được chat template.\n\nTemplate: {template}\n\nVấn đề: {problem}",
        ),
    },
}

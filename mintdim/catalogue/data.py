"""The inputs' and records' messages: files not found, inputs that cannot be read, samples that do not
fit the config, conversations the chat template cannot render (mintdim/sources/, mintdim/stages/)."""

from mintdim.catalogue.entry import Msg

MESSAGES = {
    # a file a build, a reader or a command needs; resolved(): a relative path, then the directory it
    # was resolved from; tokenizer_dir_file(): then what the directory kind's directory holds
    "MintDimFileNotFoundError": {
        "make": Msg(
            "context path",
            "Required file was not found.\n\nContext: {context}\n\nMissing file: {path}",
            "Không tìm thấy file cần dùng.\n\nContext: {context}\n\nFile thiếu: {path}",
        ),
        "resolved_from": Msg(
            "base",
            "\n\nResolved from: {base} (relative paths start from the directory you run in)",
            "\n\nTính từ thư mục: {base} (đường dẫn tương đối tính từ thư mục bạn chạy lệnh)",
        ),
        # datasets_state(): a directory given as a source that is not a `datasets` directory
        "datasets_state": Msg(
            "",
            "\n\nA datasets directory is what Dataset.save_to_disk writes: its Arrow files, "
            "dataset_info.json and state.json (which lists the Arrow files in order).",
            "\n\nThư mục datasets là thứ Dataset.save_to_disk ghi ra: các file Arrow, dataset_info.json "
            "và state.json (liệt kê các file Arrow theo thứ tự).",
        ),
        "dataset_dict": Msg(
            "d",
            "\n\nThis directory holds a DatasetDict (dataset_dict.json): give one split's directory, "
            "e.g. {d}/train.",
            "\n\nThư mục này chứa một DatasetDict (dataset_dict.json): hãy chỉ định thư mục của một "
            "split, ví dụ {d}/train.",
        ),
    },
    # an input that cannot be read (mintdim/sources/): every text names the file, the error's file
    "SourceParseError": {
        # make(path, line, reason): a JSONL line; the entry line_<reason> says why
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
        # what the file seems to hold (shape_<shape>: a JSON array, JSON objects)
        "unknown_kind": Msg(
            "path",
            "Input file is not of a kind MintDim reads.\n\nFile: {path}\n\nReason: MintDim reads JSON "
            "Lines (.jsonl, .jsonl.gz, .jsonl.zst), Parquet (.parquet) and datasets directories (what "
            "Dataset.save_to_disk writes), told apart by their names",
            "File đầu vào không thuộc loại MintDim đọc được.\n\nFile: {path}\n\nLý do: MintDim đọc JSON "
            "Lines (.jsonl, .jsonl.gz, .jsonl.zst), Parquet (.parquet) và thư mục datasets (do "
            "Dataset.save_to_disk ghi ra), phân biệt theo tên",
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
        # empty(path, reason, kind): an input with no sample at all (source.allow_empty: true makes it
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
        # footer(path, detail): a damaged or missing footer, so no row can be read, from the first one on
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
}

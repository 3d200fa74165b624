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
}

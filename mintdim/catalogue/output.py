"""The units' and the output's messages: the units and output blocks of the config (mintdim/config.py),
what the plan stage counts (over-long samples, bad records: mintdim/stages/plan.py,
mintdim/stages/bad_records.py), an output directory met again (mintdim/stages/to_build.py,
finalize.py, mintdim/run/guard.py) or read (mintdim/reading/), the token dtype (pre-flight)."""

from mintdim.catalogue.entry import Both, Msg

# units: the spec's rules (""), and the rules of each key beyond the spec's: an error about one of them
# lists only its own, each planning key (sizes: auto) followed by AUTO_ONLY
UNIT_RULES = {
    "": [
        Both("sizes must be positive integers", "sizes phải là các số nguyên dương"),
        Both("sizes must be sorted ascending", "sizes phải tăng dần"),
        Both("build_batch must be a positive integer", "build_batch phải là số nguyên dương"),
    ],
    "k": [
        Both("k is a positive int: how many unit sizes to plan", "k là số nguyên dương: số unit size cần lập")
    ],
    "multiple_of": [
        Both(
            "multiple_of is a positive int: every planned size is a multiple of it (default 1)",
            "multiple_of là số nguyên dương: mọi size được lập là bội của nó (mặc định 1)",
        )
    ],
    "min_size": [
        Both(
            "min_size is a positive int, at most max_size: no planned size is below it",
            "min_size là số nguyên dương, không lớn hơn max_size: không size nào được lập nhỏ hơn nó",
        )
    ],
    "max_size": [
        Both(
            "max_size is a positive int, at least min_size: no planned size is above it; a longer sample "
            "overflows (units.overflow)",
            "max_size là số nguyên dương, không nhỏ hơn min_size: không size nào được lập lớn hơn nó; mẫu "
            "dài hơn bị tràn (units.overflow)",
        )
    ],
    "cost": [
        Both(
            "cost is linear (fewest token slots) or attention (smallest sum of size^2)",
            "cost là linear (ít ô token nhất) hoặc attention (tổng size^2 nhỏ nhất)",
        )
    ],
    "pack": [
        Both(
            "pack is a list of positive row lengths: one shared by every file, or one per file",
            "pack là list độ dài hàng dương: một cho mọi file, hoặc mỗi file một giá trị",
        ),
        Both(
            "pack replaces sizes: declare one of them, not both",
            "pack thay cho sizes: chỉ khai báo một trong hai",
        ),
    ],
    "overflow": [
        Both(
            "overflow is a list of error | drop | truncate: one shared by every file, or one per file "
            "(default error)",
            "overflow là list gồm error | drop | truncate: một cho mọi file, hoặc mỗi file một giá trị "
            "(mặc định error)",
        ),
        Both(
            "overflow decides a sample longer than the largest unit size (the row length with pack): error "
            "stops the build, drop leaves it out, truncate keeps its first tokens",
            "overflow quyết định mẫu dài hơn unit lớn nhất (độ dài hàng khi dùng pack): error dừng build, "
            "drop bỏ mẫu, truncate giữ các token đầu",
        ),
    ],
}
AUTO_ONLY = {
    key: Both(
        f"{key} applies only with sizes: auto (planning the sizes from the data)",
        f"{key} chỉ dùng được với sizes: auto (lập unit sizes từ dữ liệu)",
    )
    for key in ("k", "multiple_of", "min_size", "max_size", "cost")
}
# the unit keys a UnitValidationError is about when its entry names none (a `keys` or `option` field)
UNIT_PROBLEM_KEYS = {
    "needs_k": ["k"],
    "cost": ["cost"],
    "min_above_max": ["min_size", "max_size"],
    "pack_both": ["pack"],
    "pack_pack": ["pack"],
    "pack_overflow": ["overflow"],
}

# the labels of a place in a source in the texts of a record's error, English and Vietnamese: its Line
# (JSONL) or Row (Parquet, `datasets`) paragraph (stages/bad_records.py relocated)
LINE_LABELS = {"en": ("Line", "Row"), "vi": ("Dòng", "Hàng")}

_SAMPLE = (
    "Sample token length exceeds max unit size.\n\nSample: ",
    "\n\ntoken_count: {token_count}\n\nmax_unit_size: {max_unit}\n\nIncrease unit sizes and run again.",
    "Độ dài token của mẫu vượt quá unit lớn nhất.\n\nMẫu: ",
    "\n\ntoken_count: {token_count}\n\nmax_unit_size: {max_unit}\n\nHãy tăng unit sizes rồi chạy lại.",
)
_OVERFLOW = (
    " To build without them: units: {{overflow: [drop]}} leaves them out, units: {{overflow: [truncate]}} "
    "keeps their first {max_unit} tokens.",
    " Để build không có chúng: units: {{overflow: [drop]}} bỏ các mẫu này, units: {{overflow: [truncate]}} "
    "giữ {max_unit} token đầu của chúng.",
)
_NOT_EMPTY = (
    "Output directory already exists and is not empty.\n\nDirectory: {directory}\n\n"
    "Use a new output directory.",
    "Thư mục output đã tồn tại và không rỗng.\n\nThư mục: {directory}\n\nHãy dùng thư mục output mới.",
)
_NOT_FINISHED = (
    "{path} is not a finished MintDim output: ",
    "{path} không phải output MintDim đã hoàn tất: ",
)
_TOO_LARGE = (
    "Tokenizer vocabulary is too large for supported token dtypes.\n\nSupported dtypes:\n\n"
    "• uint16\n• uint32",
    "Vocab của tokenizer quá lớn so với dtype token được hỗ trợ.\n\nCác dtype hiện hỗ trợ:\n\n"
    "• uint16\n• uint32",
)

# UNIT_BUILD_FAILED.md in each unit directory of a failed build (mintdim/formats/records.py): the error in
# both languages as two Markdown sections, English first (one text: the file is the same in both)
_MARKER = (
    "# Unit build failed\n\n"
    "This unit of the MintDim build was not finalized because the build failed.\n"
    "Nothing here is a usable shard. Fix the cause and rerun the same command;\n"
    "MintDim replaces this marker with the finished output.\n\n"
    "## Error\n\n```\n{en}\n```\n\n## Lỗi\n\n```\n{vi}\n```\n"
)

MESSAGES = {
    "MintDimError": {
        "failure_marker": Msg("en vi", _MARKER, _MARKER),
        # source.on_bad_record (mintdim/stages/bad_records.py): after the first bad record's own error
        "bad_record": Msg("count", "1 bad record", "1 bản ghi lỗi"),
        "bad_records": Msg("count", "{count} bad records", "{count} bản ghi lỗi"),
        "bad_first": Msg("n", "; the first {n}", "; {n} bản ghi đầu tiên"),
        "bad_counted": Msg(
            "path many first bad",
            "\n\n{path} holds {many} (records that cannot become a sample){first}:\n\n{bad:bullets}\n\n"
            "To build without them: source: {{on_bad_record: [skip]}} leaves them out and lists them in "
            "skipped_index.jsonl, up to source.max_skipped of a file's records (default [0.01])",
            "\n\n{path} có {many} (bản ghi không thành sample được){first}:\n\n{bad:bullets}\n\n"
            "Để build không có chúng: source: {{on_bad_record: [skip]}} bỏ chúng và liệt kê trong "
            "skipped_index.jsonl, tối đa source.max_skipped số bản ghi của một file (mặc định [0.01])",
        ),
        "bad_all": Msg(
            "path records reasons",
            "\n\nEvery record of {path} ({records}) is bad: that is a config mistake, not dirty data "
            "(on_bad_record: skip never skips a whole file). Reasons:\n\n{reasons:bullets}\n\nFix: check "
            "source.fields and source.templates, or source.chat (messages, role, content, roles) and the "
            "chat template",
            "\n\nMọi bản ghi của {path} ({records}) đều lỗi: đó là lỗi cấu hình, không phải dữ liệu bẩn "
            "(on_bad_record: skip không bao giờ bỏ cả một file). Lý do:\n\n{reasons:bullets}\n\nCách sửa: "
            "kiểm tra source.fields và source.templates, hoặc source.chat (messages, role, content, roles) "
            "và chat template",
        ),
        "bad_fraction": Msg(
            "limit records", "{limit} of its {records} records", "{limit} số bản ghi ({records})"
        ),
        "bad_count": Msg("limit", "{limit} records", "{limit} bản ghi"),
        "bad_too_many": Msg(
            "path count records allowed reasons shown bad",
            "\n\n{count} of the {records} records of {path} are bad, more than source.max_skipped allows "
            "({allowed}). Most frequent reasons:\n\n{reasons:bullets}\n\nThe first {shown}:\n\n"
            "{bad:bullets}\n\nFix: correct the records or the config (source.chat.roles, the chat template), "
            "or raise source.max_skipped: a fraction of each file's records (e.g. [0.05]) or a count (e.g. "
            "[{count}])",
            "\n\n{count} trên {records} bản ghi của {path} bị lỗi, nhiều hơn source.max_skipped cho phép "
            "({allowed}). Lý do thường gặp nhất:\n\n{reasons:bullets}\n\n{shown} bản ghi đầu tiên:\n\n"
            "{bad:bullets}\n\nCách sửa: sửa các bản ghi hoặc cấu hình (source.chat.roles, chat template), "
            "hoặc tăng source.max_skipped: tỉ lệ số bản ghi của mỗi file (ví dụ [0.05]) hoặc số lượng (ví dụ "
            "[{count}])",
        ),
    },
    # units (mintdim/config.py): each problem after the rules of the keys it is about (UnitValidationError)
    "UnitValidationError": {
        "rules": Msg(
            "problem rules",
            "Invalid unit config.\n\nRules:\n\n{rules:bullets}\n\nProblem: {problem}",
            "Unit config không hợp lệ.\n\nQuy tắc:\n\n{rules:bullets}\n\nVấn đề: {problem}",
        ),
        "invalid": Msg("problem keys", "{problem}", "{problem}"),
        "auto_only": Msg(
            "keys", "{keys} apply only with sizes: auto", "{keys} chỉ dùng được với sizes: auto"
        ),
        "needs_k": Msg(
            "got",
            "sizes: auto needs k, a positive int (got {got!r})",
            "sizes: auto cần k là số nguyên dương (hiện tại là {got!r})",
        ),
        "not_positive": Msg(
            "option got",
            "{option} must be a positive int, got {got!r}",
            "{option} phải là số nguyên dương, hiện tại là {got!r}",
        ),
        "cost": Msg(
            "costs got",
            "cost must be one of {costs}, got {got!r}",
            "cost phải là một trong {costs}, hiện tại là {got!r}",
        ),
        "min_above_max": Msg("", "min_size is above max_size", "min_size lớn hơn max_size"),
        "sizes_not_lists": Msg(
            "",
            "sizes must be a list of lists, e.g. [[128, 256]]",
            "sizes phải là list các list, ví dụ [[128, 256]]",
        ),
        "build_batch_not_list": Msg(
            "", "build_batch must be a list, e.g. [4096]", "build_batch phải là list, ví dụ [4096]"
        ),
        "sizes": Msg("index got", "sizes[{index}] = {got!r}", "sizes[{index}] = {got!r}"),
        "unsorted": Msg(
            "index got",
            "sizes[{index}] = {got!r} is not sorted ascending",
            "sizes[{index}] = {got!r} không tăng dần",
        ),
        "build_batch": Msg("index got", "build_batch[{index}] = {got!r}", "build_batch[{index}] = {got!r}"),
        # units.pack / units.overflow
        "pack_both": Msg(
            "value",
            "declare either sizes or pack, not both (pack replaces sizes)",
            "chỉ khai báo sizes hoặc pack, không cả hai (pack thay cho sizes)",
        ),
        "pack_pack": Msg(
            "value",
            "pack must be a list of positive row lengths, e.g. [4096], got {value!r}",
            "pack phải là list độ dài hàng dương, ví dụ [4096], hiện tại là {value!r}",
        ),
        "pack_overflow": Msg(
            "value",
            "overflow must be a list of error | drop | truncate, e.g. [drop], got {value!r}",
            "overflow phải là list gồm error | drop | truncate, ví dụ [drop], hiện tại là {value!r}",
        ),
    },
    # a sample longer than the largest unit size (or the row length), counted by the plan stage
    "UnitOverflowError": {
        "make": Msg(
            "path line token_count max_unit",
            _SAMPLE[0] + "{path}:{line}" + _SAMPLE[1],
            _SAMPLE[2] + "{path}:{line}" + _SAMPLE[3],
        ),
        "make@row": Msg(
            "path line token_count max_unit",
            _SAMPLE[0] + "{path} row {line}" + _SAMPLE[1],
            _SAMPLE[2] + "{path} hàng {line}" + _SAMPLE[3],
        ),
        "one": Msg("count", "1 sample is", "1 mẫu"),
        "many": Msg("count", "{count} samples are", "{count} mẫu"),
        "first": Msg("n", "; the first {n}", "; {n} mẫu đầu tiên"),
        "listed": Msg("path n tokens", "{path}:{n} ({tokens} tokens)", "{path}:{n} ({tokens} token)"),
        "counted": Msg(
            "many max_unit first samples",
            "\n\n{many} longer than the largest unit size {max_unit}{first}:\n\n{samples:bullets}\n\n"
            "Sizes that fit every sample: run `mintdim suggest-units CONFIG -k K`, or plan them from the "
            "data with units: {{sizes: auto, k: K}}." + _OVERFLOW[0],
            "\n\n{many} dài hơn unit lớn nhất {max_unit}{first}:\n\n{samples:bullets}\n\n"
            "Unit sizes vừa mọi mẫu: chạy `mintdim suggest-units CONFIG -k K`, hoặc lập từ dữ liệu với "
            "units: {{sizes: auto, k: K}}." + _OVERFLOW[1],
        ),
        "counted_packed": Msg(
            "many max_unit first samples longest",
            "\n\n{many} longer than the row length {max_unit} (the longest has {longest} tokens){first}:\n\n"
            "{samples:bullets}\n\nRows that hold every sample: units: {{pack: [{longest}]}} or longer."
            + _OVERFLOW[0],
            "\n\n{many} dài hơn độ dài hàng {max_unit} (mẫu dài nhất có {longest} token){first}:\n\n"
            "{samples:bullets}\n\nHàng chứa được mọi mẫu: units: {{pack: [{longest}]}} hoặc dài hơn."
            + _OVERFLOW[1],
        ),
    },
    "OutputValidationError": {
        "not_empty": Msg("directory", *_NOT_EMPTY),
        "invalid": Msg(
            "problem",
            "Invalid output directory.\n\nProblem: {problem}",
            "Thư mục output không hợp lệ.\n\nVấn đề: {problem}",
        ),
        # the config check's problems (mintdim/config.py)
        "not_paths": Msg(
            "",
            "output.dir must be a path (string) or a list of paths",
            "output.dir phải là đường dẫn (string) hoặc list đường dẫn",
            base="invalid",
        ),
        "nested": Msg(
            "directory other",
            "output {directory} contains another output {other}",
            "output {directory} chứa một output khác {other}",
            base="invalid",
        ),
        "overlaps_work": Msg(
            "directory work_dir",
            "output {directory} overlaps the work directory {work_dir}",
            "output {directory} trùng với thư mục làm việc {work_dir}",
            base="invalid",
        ),
        "is_input": Msg(
            "directory",
            "output {directory} is an input file",
            "output {directory} là một file đầu vào",
            base="invalid",
        ),
        # tokenizer.train_bpe's out (mintdim/tokenizers/training.py): never overwritten, like an output
        "train_out_taken": Msg(
            "directory record",
            _NOT_EMPTY[0] + "\n\nIt holds a tokenizer MintDim trained from other files, templates or options "
            "(tokenizer.train_bpe.out; see {record} there). Delete it to train again, or choose a new out.",
            _NOT_EMPTY[1]
            + "\n\nThư mục chứa tokenizer MintDim đã train từ file, template hoặc tuỳ chọn khác "
            "(tokenizer.train_bpe.out; xem {record}). Hãy xoá nó để train lại, hoặc chọn out mới.",
        ),
        "train_out_not_empty": Msg(
            "directory",
            _NOT_EMPTY[0]
            + "\n\ntokenizer.train_bpe.out is where the trained tokenizer is saved; MintDim never "
            "overwrites it.",
            _NOT_EMPTY[1]
            + "\n\ntokenizer.train_bpe.out là nơi lưu tokenizer được train; MintDim không bao giờ "
            "ghi đè nó.",
        ),
        # another live build is filling this output directory (mintdim/run/guard.py)
        "busy": Msg(
            "directory pids",
            "{directory} is being built right now by another MintDim build (process {pids}). "
            "Wait for it to finish, or choose another output directory.",
            "{directory} đang được một build MintDim khác tạo (tiến trình {pids}). "
            "Hãy đợi nó xong hoặc chọn thư mục output khác.",
            base="invalid",
        ),
        # a finished output met again (docs/reliability.md); {how}: the command that rebuilds
        "rebuild_how": Msg(
            "", "the same `mintdim build` command with --rebuild", "lại lệnh `mintdim build` đó với --rebuild"
        ),
        "inputs_changed": Msg(
            "directory changed how",
            "Output directory holds this config's finished output, built from inputs that have changed "
            "since.\n\nDirectory: {directory}\n\nChanged (content):\n\n{changed:bullets}\n\n"
            "Nothing was built. To rebuild it from the current inputs, run {how} (replaces only this "
            "output, which MintDim wrote, once the new one is complete), or delete the directory first.",
            "Thư mục output chứa output đã hoàn tất của config này, nhưng dữ liệu đầu vào đã thay đổi "
            "từ đó.\n\nThư mục: {directory}\n\nĐã thay đổi (nội dung):\n\n{changed:bullets}\n\n"
            "Chưa build gì. Để build lại từ dữ liệu hiện tại, hãy chạy {how} (chỉ thay output này, do "
            "MintDim ghi, khi output mới đã hoàn tất), hoặc xoá thư mục trước.",
        ),
        # other_config: the config's changes (a list), when it has some
        "config_changes": Msg(
            "changes",
            "\n\nChanged in the config since that build:\n\n{changes:bullets}",
            "\n\nThay đổi trong config từ lần build đó:\n\n{changes:bullets}",
        ),
        "other_config": Msg(
            "directory build_id changes how",
            "Output directory holds the finished output of another MintDim config (build {build_id}).\n\n"
            "Directory: {directory}{changes:?config_changes}\n\nNothing was built. Use a new output "
            "directory; or, to replace that output, run {how} (replaces only what MintDim wrote there, once "
            "the new output is complete), or delete it.",
            "Thư mục output chứa output đã hoàn tất của một config MintDim khác (build {build_id}).\n\n"
            "Thư mục: {directory}{changes:?config_changes}\n\nChưa build gì. Hãy dùng thư mục output mới; "
            "hoặc, để thay output đó, chạy {how} (chỉ thay những gì MintDim đã ghi, khi output mới đã hoàn "
            "tất), hoặc xoá nó.",
        ),
        # a finished MintDim output (its manifest.json) that this work directory has no record of
        "unrecorded": Msg(
            "directory how",
            _NOT_EMPTY[0]
            + "\n\nIt holds a MintDim output that this work directory has no record of (its work "
            "directory was deleted, or it was built elsewhere). To replace it, run {how}: it replaces the "
            "directory only if `mintdim verify` finds it a complete MintDim output with nothing else in it, "
            "once the new output is complete. Or delete it yourself.",
            _NOT_EMPTY[1]
            + "\n\nThư mục chứa một output MintDim mà thư mục làm việc này không có ghi chép (thư "
            "mục làm việc đã bị xoá, hoặc nó được build ở nơi khác). Để thay nó, hãy chạy {how}: chỉ thay "
            "khi `mintdim verify` thấy đó là output MintDim hoàn chỉnh và không có gì khác, khi output mới "
            "đã hoàn tất. Hoặc tự xoá nó.",
        ),
        "not_a_directory": Msg(
            "directory",
            "Output path exists and is not a directory.\n\nPath: {directory}\n\n"
            "Use a new output directory (or move that file away).",
            "Đường dẫn output đã tồn tại và không phải thư mục.\n\nĐường dẫn: {directory}\n\n"
            "Hãy dùng thư mục output mới (hoặc chuyển file đó đi chỗ khác).",
        ),
        "not_only_ours": Msg(
            "directory files",
            "--rebuild replaces only a finished output exactly as MintDim wrote it; this directory holds "
            "files MintDim did not write, or changed ones.\n\nDirectory: {directory}\n\n{files:bullets}\n\n"
            "Nothing was deleted. Move those files away, or delete the directory yourself.",
            "--rebuild chỉ thay một output đã hoàn tất đúng như MintDim đã ghi; thư mục này có file MintDim "
            "không ghi, hoặc file đã bị sửa.\n\nThư mục: {directory}\n\n{files:bullets}\n\n"
            "Không xoá gì. Hãy chuyển các file đó đi, hoặc tự xoá thư mục.",
        ),
        "rebuilt_differs": Msg(
            "directory first how",
            "The stages run again produced other bytes than the finished output in the directory.\n\n"
            "Directory: {directory}\n\nFirst difference: {first}\n\nThe finished output was kept. "
            "To replace it, run {how}.",
            "Các giai đoạn chạy lại tạo ra bytes khác với output đã hoàn tất trong thư mục.\n\n"
            "Thư mục: {directory}\n\nKhác biệt đầu tiên: {first}\n\nOutput đã hoàn tất được giữ nguyên. "
            "Để thay nó, hãy chạy {how}.",
        ),
        # a directory the reader cannot read as a finished output (mintdim/reading/reader.py,
        # packed_reader.py)
        "build_failed": Msg(
            "path marker",
            _NOT_FINISHED[0] + "its build failed (see {marker} in its unit directories)",
            _NOT_FINISHED[1] + "lần build đã thất bại (xem {marker} trong các thư mục unit)",
            base="invalid",
        ),
        "shard_count": Msg(
            "path unit expected found",
            _NOT_FINISHED[0] + "{unit} should hold {expected} shards, found {found}",
            _NOT_FINISHED[1] + "{unit} phải có {expected} shard, thấy {found}",
            base="invalid",
        ),
        "unit_missing": Msg(
            "path unit",
            _NOT_FINISHED[0] + "{unit} is missing",
            _NOT_FINISHED[1] + "thiếu {unit}",
            base="invalid",
        ),
        "partial_records": Msg(
            "path shard size",
            _NOT_FINISHED[0] + "{shard} is not a whole number of {size}-token records",
            _NOT_FINISHED[1] + "{shard} không phải số nguyên lần bản ghi {size} token",
            base="invalid",
        ),
        "index_order": Msg(
            "path index_line sample_id",
            _NOT_FINISHED[0] + "sample_index.jsonl line {index_line} holds sample_id {sample_id}",
            _NOT_FINISHED[1] + "sample_index.jsonl dòng {index_line} có sample_id {sample_id}",
            base="invalid",
        ),
        "index_count": Msg(
            "path listed total name",
            _NOT_FINISHED[0] + "{name} lists {listed} samples, stats.json {total}",
            _NOT_FINISHED[1] + "{name} có {listed} sample, stats.json {total}",
            base="invalid",
        ),
        # sample_index.idx (mintdim/formats/sample_columns.py): path is the output, name the file's name
        "index_file_damaged": Msg(
            "path name why",
            _NOT_FINISHED[0] + "{name} is damaged: {why}. Rebuild the output (`mintdim verify` names every "
            "file that changed since the build)",
            _NOT_FINISHED[1] + "{name} bị hỏng: {why}. Hãy build lại output (`mintdim verify` chỉ ra mọi "
            "file đã thay đổi từ lúc build)",
            base="invalid",
        ),
        "index_file_cut": Msg(
            "path name size needed",
            _NOT_FINISHED[0] + "{name} is cut short: {size} bytes, its header and columns take {needed}. "
            "Rebuild the output, or copy the file again if it was copied",
            _NOT_FINISHED[1] + "{name} bị cắt cụt: {size} byte, header và các cột của nó cần {needed}. "
            "Hãy build lại output, hoặc chép lại file nếu nó được chép từ nơi khác",
            base="invalid",
        ),
        "index_file_version": Msg(
            "path name version known",
            _NOT_FINISHED[0] + "{name} has format version {version}, this MintDim reads version {known}. "
            "Read the output with the MintDim that built it, or rebuild it with this one",
            _NOT_FINISHED[1] + "{name} có phiên bản định dạng {version}, MintDim này đọc phiên bản {known}. "
            "Hãy đọc output bằng MintDim đã build nó, hoặc build lại bằng MintDim này",
            base="invalid",
        ),
        # what is damaged in a sample_index.idx (the {why} of index_file_damaged)
        "idx_no_mark": Msg(
            "",
            "it does not start with the mark of a MintDim sample index",
            "nó không bắt đầu bằng dấu của chỉ mục sample MintDim",
        ),
        "idx_header_size": Msg(
            "size count",
            "its header size {size} does not fit {count} columns",
            "kích thước header {size} không khớp {count} cột",
        ),
        "idx_crc": Msg(
            "",
            "its header's CRC-32 does not match the header's bytes",
            "CRC-32 của header không khớp các byte của header",
        ),
        "idx_layout": Msg(
            "layout",
            "layout {layout} is none of 0 (unit sizes) and 1 (packed rows)",
            "layout {layout} không phải 0 (unit sizes) hay 1 (hàng đóng gói)",
        ),
        "idx_no_column": Msg("name", "it has no column {name}", "nó không có cột {name}"),
        "idx_dtype": Msg("name dtype", "column {name} has dtype {dtype!r}", "cột {name} có dtype {dtype!r}"),
        "idx_dtype_not": Msg(
            "name dtype want",
            "column {name} has dtype {dtype!r}, not {want}",
            "cột {name} có dtype {dtype!r}, không phải {want}",
        ),
        "idx_items": Msg(
            "name items at",
            "column {name}: {items} items at byte {at}",
            "cột {name}: {items} mục tại byte {at}",
        ),
        "idx_not_manifest_layout": Msg(
            "layout",
            "its layout {layout} is not the manifest's",
            "layout {layout} của nó không phải layout của manifest",
        ),
        "idx_rows": Msg(
            "rows total",
            "it places the samples in {rows} rows, stats.json counts {total}",
            "nó xếp các sample vào {rows} hàng, stats.json đếm {total}",
        ),
        # not raised: the warning of a reader that opens an output built before sample_index.idx
        "index_file_older": Msg(
            "path",
            "{path} has no sample_index.idx (it was built before MintDim wrote one): its sample index is "
            "read from sample_index.jsonl, in a time that grows with its samples. Rebuild the output to "
            "open it in constant time.",
            "{path} không có sample_index.idx (nó được build trước khi MintDim ghi file này): chỉ mục "
            "sample được đọc từ sample_index.jsonl, mất thời gian tăng theo số sample. Hãy build lại "
            "output để mở nó trong thời gian không đổi.",
        ),
        "index_unit_size": Msg(
            "path",
            _NOT_FINISHED[0] + "sample_index.jsonl names a unit size the manifest does not declare",
            _NOT_FINISHED[1] + "sample_index.jsonl có unit size không khai báo trong manifest",
            base="invalid",
        ),
        "index_shard_row": Msg(
            "path",
            _NOT_FINISHED[0] + "sample_index.jsonl shard_row disagrees with the shard layout",
            _NOT_FINISHED[1] + "shard_row trong sample_index.jsonl không khớp bố cục shard",
            base="invalid",
        ),
        "not_packed": Msg(
            "path",
            _NOT_FINISHED[0] + "its manifest does not declare packed rows (open it with mintdim.open)",
            _NOT_FINISHED[1] + "manifest không khai báo hàng đóng gói (mở bằng mintdim.open)",
            base="invalid",
        ),
        "row_boundaries": Msg(
            "path row",
            _NOT_FINISHED[0] + "row {row}: its boundaries disagree with sample_index.jsonl",
            _NOT_FINISHED[1] + "hàng {row}: ranh giới không khớp sample_index.jsonl",
            base="invalid",
        ),
        # `mintdim export` verifies its output first (mintdim/reading/export.py, mintdim/formats/checksums.py)
        "failed_verification": Msg(
            "path count first s",
            _NOT_FINISHED[0]
            + "mintdim verify found {count} problem{s}, the first: {first}. Nothing was exported; "
            "`mintdim verify {path}` lists them",
            _NOT_FINISHED[1] + "mintdim verify thấy {count} vấn đề, đầu tiên: {first}. Không export gì; "
            "`mintdim verify {path}` liệt kê chúng",
            base="invalid",
        ),
        "checksums_differ": Msg(
            "path sections",
            "The output's files differ from its checksums.sha256: they changed after the build.\n\n"
            "Directory: {path}\n\n{sections}\n\nNothing was exported. Build the output again (or restore "
            "these files from a copy); `sha256sum -c checksums.sha256` in the directory checks the bytes.",
            "Các file của output khác với checksums.sha256 của nó: chúng đã bị thay đổi sau khi build.\n\n"
            "Thư mục: {path}\n\n{sections}\n\nKhông export gì. Hãy build lại output (hoặc khôi phục các file "
            "này từ bản sao); `sha256sum -c checksums.sha256` trong thư mục kiểm tra các bytes.",
        ),
        "checksums_changed": Msg(
            "files",
            "Changed (bytes differ from their SHA-256):\n\n{files:bullets}",
            "Đã thay đổi (bytes khác SHA-256 đã ghi):\n\n{files:bullets}",
        ),
        "checksums_missing": Msg("files", "Missing:\n\n{files:bullets}", "Bị thiếu:\n\n{files:bullets}"),
        "checksums_extra": Msg(
            "files",
            "Not listed (not written by the build):\n\n{files:bullets}",
            "Không có trong danh sách (không do lần build ghi):\n\n{files:bullets}",
        ),
        "checksums_more": Msg(
            "n path",
            "... and {n} more (`mintdim verify {path}` lists them all)",
            "... và {n} file khác (`mintdim verify {path}` liệt kê đủ)",
        ),
    },
    # make: make@vocab_size when the vocabulary's size is known
    "TokenDTypeValidationError": {
        "make": Msg("vocab_size", *_TOO_LARGE),
        "make@vocab_size": Msg(
            "vocab_size",
            _TOO_LARGE[0] + "\n\nvocab_size: {vocab_size}",
            _TOO_LARGE[1] + "\n\nvocab_size: {vocab_size}",
        ),
    },
    "SamplesPerShardError": {
        "invalid": Msg(
            "problem",
            "Invalid samples_per_shard.\n\nProblem: {problem}\n\nRules:\n\n"
            "• each samples_per_shard[i] is a positive int\n"
            "• len(samples_per_shard) == 1 or len(samples_per_shard) == file_count",
            "samples_per_shard không hợp lệ.\n\nVấn đề: {problem}\n\nQuy tắc:\n\n"
            "• mỗi samples_per_shard[i] phải là số nguyên dương\n"
            "• len(samples_per_shard) == 1 hoặc len(samples_per_shard) == số file",
        ),
        "value": Msg(
            "index got",
            "samples_per_shard[{index}] must be a positive int, got {got!r}",
            "samples_per_shard[{index}] phải là số nguyên dương, hiện tại là {got!r}",
            base="invalid",
        ),
        "arity": Msg(
            "n_files n_items",
            "Received {n_files} input files but {n_items} samples_per_shard entries",
            "Nhận {n_files} file đầu vào nhưng chỉ có {n_items} samples_per_shard",
            base="invalid",
        ),
        "not_list": Msg(
            "got",
            "samples_per_shard must be a list of positive ints, got {got}",
            "samples_per_shard phải là list số nguyên dương, hiện tại là {got}",
            base="invalid",
        ),
        "shared": Msg(
            "output values",
            "files that share output {output} must share samples_per_shard ({values})",
            "các file dùng chung output {output} phải dùng chung samples_per_shard ({values})",
            base="invalid",
        ),
    },
}

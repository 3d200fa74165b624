"""The run's and the tools' messages: a build that failed without a spec error (mintdim/run/), a missing
optional package, a Slurm cluster that cannot run the build (mintdim/run/slurm.py), a command-line value
(mintdim/commands/), `mintdim export` (mintdim/reading/export.py) and `mintdim tokenizer`
(mintdim/tokenizers/specials.py, export.py)."""

from mintdim.catalogue.entry import Msg

_DISK = (
    "Free space (or set work_dir / output.dir on a larger disk), then run the same command again.",
    "Hãy giải phóng dung lượng (hoặc đặt work_dir / output.dir trên ổ lớn hơn), rồi chạy lại đúng lệnh này.",
)
_RUNNING = (
    "This build is already running (",
    "), with the same work directory.\n\n"
    "Work directory: {root}\n\nWait for it to finish, or stop it, then run the same command again.",
    "Build này đang chạy (",
    "), cùng thư mục làm việc.\n\n"
    "Thư mục làm việc: {root}\n\nHãy đợi nó chạy xong hoặc dừng nó, rồi chạy lại đúng lệnh này.",
)
_NEEDS = (
    "{what} needs a package that is not installed: {package}.\n\nInstall it with: ",
    "{what} cần một package chưa được cài: {package}.\n\nHãy cài bằng: ",
)
_NO_STATUS = (
    "Slurm cannot tell this build when its jobs end: the job-status command fails, and the build "
    "would wait for ever. No job was submitted.\n\nCommand: {command}\nAnswer: {answer}\n\n",
    "Slurm không thể cho build biết khi nào các job kết thúc: lệnh kiểm tra trạng thái job thất bại, "
    "và build sẽ chờ mãi. Chưa có job nào được gửi.\n\nLệnh: {command}\nTrả lời: {answer}\n\n",
)
_RESUME = (
    "Run the same command again: the build resumes from the finished jobs, and its output is the same as "
    "an uninterrupted build's.",
    "Hãy chạy lại đúng lệnh này: build tiếp tục từ các job đã xong, và output giống hệt output của một "
    "build không bị gián đoạn.",
)

MESSAGES = {
    # a stage failed without a spec error (killed job, disk full, a bug): says where to look; the run
    # machinery's messages (runner, guard, jobs)
    "BuildError": {
        "make": Msg("problem", "The build failed.\n\n{problem}", "Build thất bại.\n\n{problem}"),
        # `mintdim build` got SIGTERM/SIGHUP: Snakemake and its jobs were stopped with it
        "stopped": Msg(
            "signal_name log",
            "The build was stopped ({signal_name}); Snakemake and its jobs were stopped with it.\n\n"
            "Log: {log}\n\n" + _RESUME[0],
            "Build đã bị dừng ({signal_name}); Snakemake và các job của nó cũng đã dừng.\n\n"
            "Log: {log}\n\n" + _RESUME[1],
            base="make",
        ),
        # a job stopped by Ctrl-C (SIGINT to the process group)
        "interrupted": Msg(
            "stage",
            "The build was interrupted (Ctrl-C) during {stage}.\n\n"
            "Run the same command again: the build resumes from the finished jobs.",
            "Build đã bị ngắt (Ctrl-C) trong lúc chạy {stage}.\n\n"
            "Hãy chạy lại đúng lệnh này: build tiếp tục từ các job đã xong.",
            base="make",
        ),
        "killed": Msg(
            "signum log",
            "Snakemake was killed (signal {signum}).\n\nLog: {log}\n\n" + _RESUME[0],
            "Snakemake đã bị kill (tín hiệu {signum}).\n\nLog: {log}\n\n" + _RESUME[1],
            base="make",
        ),
        # another run holds the work directory: the process (already_running@pid) when its pid is known
        "already_running": Msg(
            "root pid",
            _RUNNING[0] + "another process" + _RUNNING[1],
            _RUNNING[2] + "một tiến trình khác" + _RUNNING[3],
            base="make",
        ),
        "already_running@pid": Msg(
            "root pid",
            _RUNNING[0] + "process {pid}" + _RUNNING[1],
            _RUNNING[2] + "tiến trình {pid}" + _RUNNING[3],
            base="make",
        ),
        # a job failed without a MintDim error (an OSError, a bug): its cause, the path where there is one
        # (paths@named: the system named it, else where the job writes), advice when a disk is full (space)
        "job_failed": Msg(
            "stage cause paths named space",
            "Stage: {stage}\n\nCause: {cause}{paths:?paths}{space:?full}",
            "Giai đoạn: {stage}\n\nNguyên nhân: {cause}{paths:?paths}{space:?full}",
            base="make",
        ),
        "paths@named": Msg("paths", "\n\nPath: {paths}", "\n\nĐường dẫn: {paths}"),
        "paths": Msg("paths", "\n\nWriting to: {paths}", "\n\nĐang ghi vào: {paths}"),
        "full": Msg(
            "",
            "\n\nThe file system is full, or a file size or quota limit was reached. " + _DISK[0],
            "\n\nHệ thống file đã đầy, hoặc đã chạm giới hạn kích thước file hay quota. " + _DISK[1],
        ),
        # Snakemake's output said `No space left on device`; no job recorded where
        "disk_full_seen": Msg(
            "log tail",
            "A file system the build writes to is full (No space left on device).\n\nLog: {log}\n\n{tail}",
            "Hệ thống file mà build ghi vào đã đầy (No space left on device).\n\nLog: {log}\n\n{tail}",
            base="make",
        ),
        "disk_full": Msg(
            "where logs",
            "A file system the build writes to is full.\n\nPath: {where}\n\n" + _DISK[0] + "\n\nLogs: {logs}",
            "Hệ thống file mà build ghi vào đã đầy.\n\nĐường dẫn: {where}\n\n"
            + _DISK[1]
            + "\n\nLogs: {logs}",
            base="make",
        ),
        "snakemake_failed": Msg(
            "status log tail",
            "Snakemake exited with status {status}.\n\nLog: {log}\n\n{tail}",
            "Snakemake kết thúc với mã {status}.\n\nLog: {log}\n\n{tail}",
            base="make",
        ),
        "no_completion_record": Msg(
            "directory reason log",
            "Snakemake ended without the completion record of {directory} ({reason}).\n\nLog: {log}\n\n"
            "Run the same command again.",
            "Snakemake kết thúc mà không có bản ghi hoàn tất của {directory} ({reason}).\n\nLog: {log}\n\n"
            "Hãy chạy lại đúng lệnh này.",
            base="make",
        ),
        "no_mintdim_error": Msg(
            "logs",
            "A job stopped without a MintDim error (killed, out of memory, or an executor failure).\n\n"
            "Logs: {logs}",
            "Một job đã dừng mà không có lỗi MintDim (bị kill, hết bộ nhớ, hoặc executor gặp lỗi).\n\n"
            "Logs: {logs}",
            base="make",
        ),
        "orphans_alive": Msg(
            "root pids waited",
            "Jobs of an earlier, killed run of this build are still running after {waited:.0f} s "
            "(process {pids}).\n\nWork directory: {root}\n\n"
            "Stop them (kill PID) or wait for them to end, then run the same command again.",
            "Các job của một lần chạy trước (đã bị dừng) của build này vẫn đang chạy sau {waited:.0f} s "
            "(tiến trình {pids}).\n\nThư mục làm việc: {root}\n\n"
            "Hãy dừng chúng (kill PID) hoặc đợi chúng kết thúc, rồi chạy lại đúng lệnh này.",
            base="make",
        ),
    },
    # an optional part of MintDim used without its package (an ImportError: `except ImportError` works)
    # make: the package alone; make@extra: MintDim's extra that installs it (or the package itself)
    "MissingExtraError": {
        "make": Msg(
            "what extra package", _NEEDS[0] + "pip install {package}", _NEEDS[1] + "pip install {package}"
        ),
        "make@extra": Msg(
            "what extra package",
            _NEEDS[0] + "pip install 'mintdim[{extra}]'{package:?or_package}",
            _NEEDS[1] + "pip install 'mintdim[{extra}]'{package:?or_package}",
        ),
        "or_package": Msg("package", " (or pip install {package})", " (or pip install {package})"),
    },
    # a Slurm cluster that the build cannot ask what it needs (mintdim/run/slurm.py): the command, its
    # answer, and the profile key (or cluster setting) that makes it work. Nothing was submitted.
    "ClusterError": {
        "unreachable": Msg(
            "command answer",
            "Slurm does not answer on this host; no job was submitted.\n\n"
            "Command: {command}\nAnswer: {answer}\n\n"
            "Run the build where the Slurm commands work (a login node: sinfo lists the partitions; "
            "SLURM_CONF names the cluster's slurm.conf, and munged runs).",
            "Slurm không trả lời trên máy này; chưa có job nào được gửi.\n\n"
            "Lệnh: {command}\nTrả lời: {answer}\n\n"
            "Hãy chạy build ở nơi các lệnh Slurm hoạt động (một login node: sinfo liệt kê các partition; "
            "SLURM_CONF trỏ tới slurm.conf của cluster, và munged đang chạy).",
        ),
        "no_partition": Msg(
            "partition known",
            "The profile asks for the partition {partition}, which this cluster does not have; no job was "
            "submitted.\n\nCommand: sinfo --noheader --format=%R\nAnswer: {known:comma}\n\n"
            "Set slurm_partition (the profile's default-resources, or set-resources of a rule) to one of "
            "them.",
            "Profile yêu cầu partition {partition}, nhưng cluster này không có; chưa có job nào được gửi.\n\n"
            "Lệnh: sinfo --noheader --format=%R\nTrả lời: {known:comma}\n\n"
            "Hãy đặt slurm_partition (default-resources của profile, hoặc set-resources của một rule) "
            "thành một trong số đó.",
        ),
        # the job-status command cannot tell when a job ends: the build would wait for ever; no_status@other:
        # the other command answers
        "no_status": Msg(
            "command answer other",
            _NO_STATUS[0]
            + "Set slurm-status-command in the profile to a command that answers here (sacct or "
            "squeue).",
            _NO_STATUS[1] + "Hãy đặt slurm-status-command trong profile thành một lệnh trả lời được ở đây "
            "(sacct hoặc squeue).",
        ),
        "no_status@other": Msg(
            "command answer other",
            _NO_STATUS[0] + "Set slurm-status-command: {other} in the profile.",
            _NO_STATUS[1] + "Hãy đặt slurm-status-command: {other} trong profile.",
        ),
        # accounting disabled (or absent) and squeue forgets finished jobs before the next status check
        "short_min_job_age": Msg(
            "seen needed why",
            "Slurm cannot tell this build when its jobs end: squeue forgets a finished job after MinJobAge "
            "= {seen}, before the next status check may come, and sacct does not answer. No job was "
            "submitted.\n\nCommand: scontrol show config{why}\n\nSet MinJobAge of slurm.conf to "
            "{needed} s or more, or enable accounting and set slurm-status-command: sacct in the profile.",
            "Slurm không thể cho build biết khi nào các job kết thúc: squeue quên một job đã xong sau "
            "MinJobAge = {seen}, trước khi lần kiểm tra trạng thái tiếp theo có thể đến, và sacct không "
            "trả lời. Chưa có job nào được gửi.\n\nLệnh: scontrol show config{why}\n\nHãy đặt MinJobAge "
            "trong slurm.conf từ {needed} s trở lên, hoặc bật accounting và đặt slurm-status-command: sacct "
            "trong profile.",
        ),
        "age_unknown": Msg(
            "",
            "unknown (scontrol show config does not say)",
            "không rõ (scontrol show config không cho biết)",
        ),
        "sacct_said": Msg("said", "\nsacct: {said}", "\nsacct: {said}"),
    },
    # a command-line value that cannot be right (exit code 2)
    "UsageError": {
        "sample_range": Msg(
            "sample count out last",
            "--sample {sample} is not a sample of {out}: its ids are 0 to {last} ({count} samples).",
            "--sample {sample} không phải mẫu của {out}: id hợp lệ từ 0 đến {last} ({count} mẫu).",
        ),
        "fraction": Msg(
            "option value",
            "{option} takes a fraction below 1 (0.05) or a percentage (5%), got {value!r}.",
            "{option} nhận một phân số nhỏ hơn 1 (0.05) hoặc phần trăm (5%), hiện tại là {value!r}.",
        ),
        "positive": Msg(
            "option value",
            "{option} takes a positive integer, got {value!r}.",
            "{option} nhận một số nguyên dương, hiện tại là {value!r}.",
        ),
        # suggest-units (mintdim/reading/suggest.py)
        "no_samples": Msg(
            "output",
            "{output} holds no samples: there are no token lengths to suggest unit sizes from.",
            "{output} không có mẫu nào: không có độ dài token nào để đề xuất unit sizes.",
        ),
        "above_max": Msg(
            "max_size longest needed",
            "--max {max_size} is below the unit the longest sample needs ({longest} tokens need a unit "
            "of {needed}).",
            "--max {max_size} nhỏ hơn unit mà mẫu dài nhất cần ({longest} token cần unit {needed}).",
        ),
    },
    # `mintdim export` could not write DEST (mintdim/reading/export.py); nothing is left there
    "ExportError": {
        "exists": Msg(
            "path",
            "{path} already exists; mintdim export never overwrites a file. Choose a new --to, or move it "
            "away.",
            "{path} đã tồn tại; mintdim export không bao giờ ghi đè file. Hãy chọn --to mới, hoặc chuyển nó "
            "đi chỗ khác.",
        ),
        "inside_output": Msg(
            "dest out",
            "{dest} is inside the output {out}, which holds only what its build wrote (mintdim verify "
            "would then fail). Choose a path outside it.",
            "{dest} nằm trong output {out}, nơi chỉ chứa những gì build đã ghi (mintdim verify sẽ báo "
            "lỗi). Hãy chọn đường dẫn bên ngoài.",
        ),
        "write_failed": Msg(
            "dest reason",
            "Writing {dest} failed: {reason}. Nothing was left at {dest} (no half-written file).",
            "Ghi {dest} thất bại: {reason}. Tại {dest} không còn gì (không có file ghi dở).",
        ),
    },
    # a `mintdim tokenizer` command could not do what was asked (nothing was written)
    "TokenizerToolError": {
        # add-specials (mintdim/tokenizers/specials.py)
        "exists": Msg(
            "out",
            "{out} already exists; MintDim never overwrites a file. Choose a new OUT.",
            "{out} đã tồn tại; MintDim không bao giờ ghi đè file. Hãy chọn OUT mới.",
        ),
        "same_path": Msg(
            "", "OUT must differ from IN: IN is never touched", "OUT phải khác IN: IN không bao giờ bị sửa"
        ),
        "out_extension": Msg(
            "ext kind",
            "OUT must end with {ext} (the extension MintDim expects for {kind})",
            "OUT phải có đuôi {ext} (đuôi MintDim dùng cho {kind})",
        ),
        "unknown_kind": Msg(
            "path",
            "{path}: not a SentencePiece .model, a tokenizer.json (.json) or a unitoken model directory",
            "{path}: không phải SentencePiece .model, tokenizer.json (.json) hay thư mục model unitoken",
        ),
        "nothing_to_add": Msg(
            "unk_id pad_id",
            "the tokenizer already exposes unk_id {unk_id} and pad_id {pad_id}: nothing to add",
            "tokenizer đã có unk_id {unk_id} và pad_id {pad_id}: không cần thêm gì",
        ),
        "already_has": Msg(
            "name token_id",
            "the tokenizer already has {name}_id {token_id}; --{name} adds only a missing one",
            "tokenizer đã có {name}_id {token_id}; --{name} chỉ thêm token còn thiếu",
        ),
        "empty_token": Msg(
            "name", "--{name} needs a non-empty token string", "--{name} cần một chuỗi token không rỗng"
        ),
        "same_tokens": Msg(
            "", "--pad and --unk must be different strings", "--pad và --unk phải là chuỗi khác nhau"
        ),
        "taken": Msg(
            "token old_id",
            "{token!r} is already in the vocabulary (id {old_id}); choose a string that is not, e.g. <|pad|>",
            "{token!r} đã có trong vocab (id {old_id}); hãy chọn chuỗi chưa có, ví dụ <|pad|>",
        ),
        "needs_protobuf": Msg(
            "reason",
            "editing a SentencePiece model needs protobuf ({reason}): pip install protobuf",
            "sửa model SentencePiece cần protobuf ({reason}): pip install protobuf",
        ),
        "sentencepiece_unk": Msg(
            "",
            "a SentencePiece model always has an unk piece; only --pad applies",
            "model SentencePiece luôn có unk piece; chỉ dùng được --pad",
        ),
        "not_appended": Msg(
            "token", "could not append {token!r} as a new id", "không thêm được {token!r} làm id mới"
        ),
        "no_unk_slot": Msg(
            "kind",
            "cannot set an unk token on a {kind} model here",
            "không đặt được unk token cho model {kind}",
        ),
        "unitoken_token": Msg(
            "",
            "a unitoken special token must be printable ASCII without spaces, e.g. <pad>",
            "special token của unitoken phải là ASCII in được, không có dấu cách, vd <pad>",
        ),
        # the written tokenizer failed its check (nothing written)
        "unchecked": Msg("problem", "{problem}; nothing written", "{problem}; không ghi gì"),
        "not_exposed": Msg(
            "name token_id",
            "the new tokenizer does not expose {name}_id {token_id}",
            "tokenizer mới không có {name}_id {token_id}",
            base="unchecked",
        ),
        "ids_change": Msg(
            "count example",
            "{count} existing ids would change (e.g. {example!r})",
            "{count} id hiện có sẽ bị đổi (vd {example!r})",
            base="unchecked",
        ),
        "vocab_growth": Msg(
            "",
            "the vocabulary would not grow by exactly the added tokens",
            "vocab không tăng đúng số token thêm",
            base="unchecked",
        ),
        "encodes_differently": Msg(
            "",
            "a text encodes differently with the new tokenizer",
            "một văn bản được mã hoá khác với tokenizer mới",
            base="unchecked",
        ),
        # export (mintdim/tokenizers/export.py)
        "merges_line": Msg(
            "path text", "unexpected line in {path}: {text!r}", "dòng không đúng dạng trong {path}: {text!r}"
        ),
        "not_model_dir": Msg(
            "model_dir reason",
            "{model_dir} is not a unitoken model directory: {reason}",
            "{model_dir} không phải thư mục model unitoken: {reason}",
        ),
        "not_byte_unit": Msg(
            "model_dir unit",
            "{model_dir} is a {unit}-unit model; only byte-unit models have a tokenizer.json "
            "with the same ids (train with unit: byte)",
            "{model_dir} là model unit {unit}; chỉ model unit byte mới có tokenizer.json cùng id "
            "(hãy train với unit: byte)",
        ),
        "unicode_bigrams": Msg(
            "model_dir",
            "{model_dir} uses Unicode bigram boundaries, which tokenizer.json cannot express",
            "{model_dir} dùng ranh giới Unicode bigram, tokenizer.json không biểu diễn được",
        ),
        "special_moved": Msg(
            "token", "special token {token!r} would not keep its id", "special token {token!r} bị đổi id"
        ),
        "export_differs": Msg(
            "index",
            "the exported tokenizer encodes text {index} differently; nothing written",
            "tokenizer đã export mã hoá văn bản {index} khác đi; không ghi gì",
        ),
    },
}

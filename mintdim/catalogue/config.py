"""The config check's messages (mintdim/config.py, mintdim/stages/preflight.py)."""

from mintdim.catalogue.entry import Msg

MESSAGES = {
    "PipelineValidationError": {
        "missing": Msg(
            "keys",
            "Pipeline configuration is incomplete.\n\nMissing:\n\n{keys:bullets}",
            "Pipeline chưa được cấu hình đầy đủ.\n\nThiếu:\n\n{keys:bullets}",
        ),
        "invalid": Msg(
            "problem",
            "Invalid pipeline configuration.\n\nProblem: {problem}",
            "Cấu hình pipeline không hợp lệ.\n\nVấn đề: {problem}",
        ),
        "lang": Msg(
            "got",
            "lang must be one of en, vi, both, got {got!r}",
            "lang phải là en, vi hoặc both, hiện tại là {got!r}",
            base="invalid",
        ),
        "files": Msg(
            "",
            "source.files must be a list of file paths (strings)",
            "source.files phải là list đường dẫn file (string)",
            base="invalid",
        ),
        "work_dir": Msg(
            "",
            "work_dir must be a non-empty path (string)",
            "work_dir phải là đường dẫn (string) không rỗng",
            base="invalid",
        ),
        "allow_empty": Msg(
            "got",
            "source.allow_empty must be true or false, got {got!r}",
            "source.allow_empty phải là true hoặc false, hiện tại là {got!r}",
            base="invalid",
        ),
    },
}

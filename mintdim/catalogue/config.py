"""The config check's messages (mintdim/config.py, mintdim/stages/preflight.py)."""

from mintdim.catalogue.entry import Msg

# source.on_bad_record, source.max_skipped, source.train_eos, source.drop_untrained: shared or one per file
_ARITY = Msg(
    "name n_files n_items",
    "source.{name}: received {n_files} input files but {n_items} entries (1: shared, {n_files}: one per "
    "file)",
    "source.{name}: nhận {n_files} file đầu vào nhưng có {n_items} mục (1: dùng chung, {n_files}: mỗi file "
    "một mục)",
    base="invalid",
)

MESSAGES = {
    # a paragraph of an unknown key's or kind's hint: the closest known name (mintdim/schema.py)
    "MintDimError": {
        "did_you_mean": Msg(
            "name close",
            "\n\nDid you mean {close!r} instead of {name!r}?",
            "\n\nCó phải ý bạn là {close!r} thay vì {name!r}?",
        ),
    },
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
        "chunk_mb": Msg(
            "got",
            "chunk_mb must be a positive number, got {got!r}",
            "chunk_mb phải là số dương, hiện tại là {got!r}",
            base="invalid",
        ),
        "unknown_pipeline": Msg(
            "name supported",
            "unknown pipeline {name!r}; supported: {supported:comma}",
            "pipeline {name!r} không tồn tại; hỗ trợ: {supported:comma}",
            base="invalid",
        ),
        "not_yaml": Msg(
            "path exc",
            "{path} is not valid YAML: {exc}",
            "{path} không phải YAML hợp lệ: {exc}",
            base="invalid",
        ),
        # unknown keys (mintdim/config.py, from the schema's additionalProperties): of the config, or of
        # a block; `hint`: "Did you mean ...?" paragraphs (did_you_mean, mintdim/schema.py)
        "unknown_config_keys": Msg(
            "unknown hint",
            "unknown config keys: {unknown!r}{hint}",
            "key cấu hình không hợp lệ: {unknown!r}{hint}",
            base="invalid",
        ),
        "unknown_block_keys": Msg(
            "block unknown hint",
            "unknown keys in {block}: {unknown!r}{hint}",
            "key không hợp lệ trong {block}: {unknown!r}{hint}",
            base="invalid",
        ),
        # source.on_bad_record / source.max_skipped (mintdim/config.py)
        "on_bad_record": Msg(
            "got",
            "source.on_bad_record must be a list of error or skip (one shared by every file, or one per "
            "file), got {got!r}",
            "source.on_bad_record phải là list gồm error hoặc skip (một mục dùng chung, hoặc mỗi file một "
            "mục), hiện tại là {got!r}",
            base="invalid",
        ),
        "max_skipped": Msg(
            "got",
            "source.max_skipped must be a list of limits, each a fraction of the file's records (a number "
            "from 0 to 1 with a decimal point, e.g. 0.01) or a count (an int >= 0), got {got!r}",
            "source.max_skipped phải là list giới hạn, mỗi mục là tỉ lệ số bản ghi của file (số từ 0 đến 1 "
            "có dấu thập phân, ví dụ 0.01) hoặc số lượng (số nguyên >= 0), hiện tại là {got!r}",
            base="invalid",
        ),
        "bad_record_arity": _ARITY,
        "max_skipped_alone": Msg(
            "",
            "source.max_skipped applies only with source.on_bad_record: [skip] (it bounds the records "
            "skipped)",
            "source.max_skipped chỉ dùng cùng source.on_bad_record: [skip] (nó giới hạn số bản ghi bị bỏ "
            "qua)",
            base="invalid",
        ),
        # source.chat (conversations; mintdim/config.py checks the block, mintdim/sources/chat.py renders);
        # `where`: source.chat or source.chat[i]
        "chat_arity": Msg(
            "n_files n_items",
            "source.chat: received {n_files} input files but {n_items} chat entries (1: shared, {n_files}: "
            "one per file)",
            "source.chat: nhận {n_files} file đầu vào nhưng có {n_items} mục chat (1: dùng chung, {n_files}: "
            "mỗi file một mục)",
            base="invalid",
        ),
        "chat_not_mapping": Msg(
            "where got",
            "{where} must be a mapping (e.g. {{}} for OpenAI messages), got {got}",
            "{where} phải là mapping (ví dụ {{}} cho messages kiểu OpenAI), hiện tại là {got}",
            base="invalid",
        ),
        "chat_unknown_keys": Msg(
            "where keys known",
            "unknown keys in {where}: {keys!r} (known: {known:comma})",
            "key không hợp lệ trong {where}: {keys!r} (hợp lệ: {known:comma})",
            base="invalid",
        ),
        "chat_key": Msg(
            "where name got",
            "{where}.{name} must be a non-empty string (a JSON key), got {got!r}",
            "{where}.{name} phải là string không rỗng (một key JSON), hiện tại là {got!r}",
            base="invalid",
        ),
        "chat_same_key": Msg(
            "where name",
            "{where}: role and content name the same key {name!r}",
            "{where}: role và content cùng là key {name!r}",
            base="invalid",
        ),
        "chat_roles": Msg(
            "where",
            "{where}.roles must map source roles to template roles (strings), e.g. "
            "{{human: user, gpt: assistant}}",
            "{where}.roles phải ánh xạ role nguồn sang role của template (string), ví dụ "
            "{{human: user, gpt: assistant}}",
            base="invalid",
        ),
        "chat_extras": Msg(
            "where",
            "{where}.extras must be a list of record keys (strings), e.g. [tools]",
            "{where}.extras phải là list key của bản ghi (string), ví dụ [tools]",
            base="invalid",
        ),
        "chat_extras_reserved": Msg(
            "where names",
            "{where}.extras may not name {names}: the template receives them from MintDim",
            "{where}.extras không được có {names}: MintDim truyền các biến này cho template",
            base="invalid",
        ),
        "chat_last_turn": Msg(
            "where got",
            "{where}.last_turn must be true or false, got {got!r}",
            "{where}.last_turn phải là true hoặc false, hiện tại là {got!r}",
            base="invalid",
        ),
        "chat_drop_roles": Msg(
            "where",
            "{where}.drop_roles must be a list of roles (strings), e.g. [tool_user]",
            "{where}.drop_roles phải là list role (string), ví dụ [tool_user]",
            base="invalid",
        ),
        "chat_reasoning": Msg(
            "where got",
            "{where}.reasoning must be train or mask, got {got!r}",
            "{where}.reasoning phải là train hoặc mask, hiện tại là {got!r}",
            base="invalid",
        ),
        "chat_template_kwargs": Msg(
            "where",
            "{where}.chat_template_kwargs must be a mapping of template variables, e.g. "
            "{{enable_thinking: false}}",
            "{where}.chat_template_kwargs phải là mapping các biến của template, ví dụ "
            "{{enable_thinking: false}}",
            base="invalid",
        ),
        "chat_template_kwargs_reserved": Msg(
            "where names",
            "{where}.chat_template_kwargs may not set {names}: the template receives them from MintDim",
            "{where}.chat_template_kwargs không được đặt {names}: MintDim truyền các biến này cho template",
            base="invalid",
        ),
        # source.take / source.seed (mixing with exact counts; mintdim/sources/take.py)
        "take_not_list": Msg(
            "got",
            "source.take must be a list (one entry shared by every file, or one per file), got {got!r}",
            "source.take phải là list (một mục dùng chung, hoặc mỗi file một mục), hiện tại là {got!r}",
            base="invalid",
        ),
        "take": Msg(
            "index got",
            "source.take[{index}] must be a fraction of the file's samples (a number > 0 with a decimal "
            "point, e.g. 0.5; above 1 repeats) or a count (an int >= 1), got {got!r}",
            "source.take[{index}] phải là tỉ lệ số sample của file (số > 0 có dấu thập phân, ví dụ 0.5; "
            "lớn hơn 1 là lặp lại) hoặc số lượng (số nguyên >= 1), hiện tại là {got!r}",
            base="invalid",
        ),
        "take_arity": Msg(
            "n_files n_items",
            "source.take: received {n_files} input files but {n_items} take entries (1: shared, {n_files}: "
            "one per file)",
            "source.take: nhận {n_files} file đầu vào nhưng có {n_items} mục take (1: dùng chung, {n_files}: "
            "mỗi file một mục)",
            base="invalid",
        ),
        "seed": Msg(
            "got",
            "source.seed must be an int >= 0, got {got!r}",
            "source.seed phải là số nguyên >= 0, hiện tại là {got!r}",
            base="invalid",
        ),
        "seed_alone": Msg(
            "",
            "source.seed applies only with source.take (it seeds the choice of samples)",
            "source.seed chỉ dùng cùng source.take (nó là seed cho việc chọn sample)",
            base="invalid",
        ),
        # pre-flight (mintdim/stages/preflight.py) and the plan stage: a count of an empty file
        "take_no_samples": Msg(
            "index path count",
            "source.take[{index}] asks for {count} samples of {path}, which holds no samples",
            "source.take[{index}] yêu cầu {count} sample của {path}, nhưng file không có sample nào",
            base="invalid",
        ),
        # source.train_eos, source.drop_untrained: a list of true/false, shared or one per file
        "flag_list": Msg(
            "name got",
            "source.{name} must be a list of true or false (one shared by every file, or one per file), "
            "e.g. [true], got {got!r}",
            "source.{name} phải là list các giá trị true hoặc false (một giá trị dùng chung, hoặc mỗi file "
            "một giá trị), ví dụ [true], hiện tại là {got!r}",
            base="invalid",
        ),
        "flag_arity": _ARITY,
    },
}

"""The fluent API of the spec: pipeline("unit-build").source.jsonl(...)...run().

Each step records one block of the same config a YAML file holds; nothing
runs before run(), which hands the config to the Snakemake workflow.
"""

from __future__ import annotations

import copy

from . import errors as E

PIPELINES = ("unit-build",)


class _Namespace:
    """`.source`, `.tokenizer`, `.output`: groups of steps that return the pipeline."""

    def __init__(self, pipeline: Pipeline):
        self._p = pipeline


class _Source(_Namespace):
    def jsonl(
        self,
        files=None,
        fields=None,
        templates=None,
        train_on=None,
        take=None,
        seed=None,
        allow_empty=None,
        train_eos=None,
        drop_untrained=None,
        on_bad_record=None,
        max_skipped=None,
    ) -> Pipeline:
        """files: JSONL, Parquet files or datasets directories (mintdim/sources/inputs.py).
        train_on (optional): per file, the fields whose tokens a loss mask trains.
        take (optional): per file, a fraction (float) or a count (int) of its samples; seed seeds the choice.
        allow_empty=True: an input file with no samples is a warning (stats.json empty_files), not a
        SourceParseError.
        train_eos (per file, default [True]): the end-of-turn token written right after a trained field
        is trained too; drop_untrained (per file, default [False]): samples training no token are left out.
        on_bad_record (optional): per file, "error" (default) or "skip" (records that cannot become a sample
        are left out, up to max_skipped: per file, a fraction (float) or a count (int) of its records)."""
        self._p._config["source"] = {
            "files": files,
            "fields": fields,
            "templates": templates,
            "train_on": train_on,
            "take": take,
            "seed": seed,
            "allow_empty": allow_empty,
            "train_eos": train_eos,
            "drop_untrained": drop_untrained,
            "on_bad_record": on_bad_record,
            "max_skipped": max_skipped,
        }
        return self._p

    def chat(
        self,
        files=None,
        chat=None,
        train_on=None,
        fields=None,
        templates=None,
        take=None,
        seed=None,
        allow_empty=None,
        drop_untrained=None,
        on_bad_record=None,
        max_skipped=None,
    ) -> Pipeline:
        """Conversations rendered with the model's chat template (source.chat; mintdim/sources/chat.py):
        chat={} is the OpenAI shape, or {"messages": ..., "role": ..., "content": ..., "roles": {...},
        "system": KEY, "extras": [KEYS], "train": KEY, "last_turn": bool}; a list maps by file.
        train_on: per file, the roles whose turns the loss mask trains (e.g. [["assistant"]]); take, seed,
        drop_untrained, on_bad_record and max_skipped as in jsonl()."""
        self._p._config["source"] = {
            "files": files,
            "chat": copy.deepcopy(chat),
            "train_on": train_on,
            "fields": fields,
            "templates": templates,
            "take": take,
            "seed": seed,
            "allow_empty": allow_empty,
            "drop_untrained": drop_untrained,
            "on_bad_record": on_bad_record,
            "max_skipped": max_skipped,
        }
        return self._p


class _Tokenizer(_Namespace):
    def sentencepiece(self, config) -> Pipeline:
        self._p._config["tokenizer"] = {"sentencepiece": copy.deepcopy(config)}
        return self._p

    def hf_json(self, config) -> Pipeline:
        self._p._config["tokenizer"] = {"hf_json": copy.deepcopy(config)}
        return self._p

    def hf_dir(self, config) -> Pipeline:
        """A model's tokenizer directory (tokenizer.json + tokenizer_config.json [+ chat template]):
        {"path": DIR, "pad_token": "<existing token>", "chat_template": FILE} (both optional)."""
        self._p._config["tokenizer"] = {"hf_dir": copy.deepcopy(config)}
        return self._p

    def unitoken(self, config) -> Pipeline:
        """A BPE model directory saved by ffbpe: {"path": DIR} (ffbpe.json, vocab.json, merges.txt)."""
        self._p._config["tokenizer"] = {"unitoken": copy.deepcopy(config)}
        return self._p

    def train_bpe(self, config) -> Pipeline:
        """Train a BPE tokenizer on the build's own rendered samples first (mintdim/tokenizers/training.py):
        {"vocab_size": 32000, "out": DIR, "unit": "byte", "hot_pair_window_size": None}."""
        self._p._config["tokenizer"] = {"train_bpe": copy.deepcopy(config)}
        return self._p


class _Output(_Namespace):
    def dir(self, path=None, samples_per_shard=None) -> Pipeline:
        self._p._config["output"] = {"dir": path, "samples_per_shard": samples_per_shard}
        return self._p


class Pipeline:
    def __init__(
        self, name: str, *, lang: str = "en", work_dir: str | None = None, chunk_mb: float | None = None
    ):
        self.name = name
        self._config: dict = {}
        if lang != "en":
            self._config["lang"] = lang
        if work_dir is not None:
            self._config["work_dir"] = work_dir
        if chunk_mb is not None:
            self._config["chunk_mb"] = chunk_mb
        self.source = _Source(self)
        self.tokenizer = _Tokenizer(self)
        self.output = _Output(self)

    def units(self, sizes=None, build_batch=None, **planning) -> Pipeline:
        """sizes: a list of lists (declared), or "auto" with planning options k, multiple_of,
        min_size, max_size, cost: sizes then minimise padding for the data (mintdim.units.padding).
        Packed rows instead of sizes: pack=[4096] (row lengths), e.g. .units(pack=[4096], build_batch=[4096]).
        overflow=["drop"] (error, the default | drop | truncate): a sample longer than the largest size (or
        the row), with sizes or pack."""
        self._config["units"] = {"sizes": sizes, "build_batch": build_batch, **planning}
        return self

    def to_config(self) -> dict:
        """The config this job declares, as a YAML config file would hold it."""
        cfg = copy.deepcopy(self._config)
        for block in ("source", "units", "output"):
            if block in cfg:
                cfg[block] = {k: v for k, v in cfg[block].items() if v is not None}
        return cfg

    def validate(self):
        """Run every pre-flight check now; returns the resolved build."""
        from .stages.preflight import preflight

        return preflight(self.to_config())[0]

    def run(
        self,
        cores: int | None = None,
        profile: str | None = None,
        keep_intermediates: bool = False,
        dry_run: bool = False,
        rebuild: bool = False,
        report: bool = False,
    ):
        """rebuild: replace a finished output MintDim wrote (docs/reliability.md), as
        `mintdim build --rebuild`.
        report: also write each output's report, as `mintdim build --report`."""
        from .run.runner import run_build

        return run_build(
            self.to_config(),
            cores=cores,
            profile=profile,
            keep_intermediates=keep_intermediates,
            dry_run=dry_run,
            rebuild=rebuild,
            report=report,
            how="job.run(rebuild=True)",
        )


def pipeline(name: str, **options) -> Pipeline:
    if name not in PIPELINES:
        raise E.PipelineValidationError.unknown_pipeline(
            name, list(PIPELINES), lang=options.get("lang", "en")
        )
    return Pipeline(name, **options)

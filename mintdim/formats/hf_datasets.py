"""A Hugging Face `datasets` directory, as `datasets.Dataset.save_to_disk` writes one: names and writer.

    data-00000-of-0000N.arrow   Arrow IPC *stream* files of contiguous rows, a new file per
                                MAX_SHARD_BYTES of Arrow data; the schema's metadata holds
                                {"huggingface": '{"info": {"features": ...}}'}
    dataset_info.json           {"citation", "description", "features", "homepage", "license"}, indent 2
    state.json                  {"_data_files": [{"filename": ...}, ...], "_fingerprint", "_format_columns",
                                 "_format_kwargs", "_format_type", "_output_all_columns", "_split"},
                                indent 2, keys sorted

Matched against datasets 5.2.0 (arrow_dataset.py: Dataset.save_to_disk, _save_to_disk_single,
Dataset.shard(contiguous=True); arrow_writer.py: ArrowWriter._build_metadata), and proved by
tests/test_export.py, which compares these files with what save_to_disk writes for the same rows.
The features use datasets' `List` type (datasets >= 4.0 reads them). pyarrow writes the Arrow
bytes; it is imported only by the writer (the `arrow` extra).
"""

from __future__ import annotations

import json
import os

import numpy as np

from ..files import open_pieces

DATASET_INFO = "dataset_info.json"
STATE = "state.json"
DATA_FILE = "data-%05d-of-%05d.arrow"
MAX_SHARD_BYTES = 500 * 10**6  # datasets.config.MAX_SHARD_SIZE, "500MB" = 500 * 10**6 bytes


def data_file(index: int, count: int) -> str:
    return DATA_FILE % (index, count)


def feature(kind: str) -> dict:
    """A column's feature as datasets serialises it: "int64" (a value) or "list<int32>" (a list of values)."""
    if kind.startswith("list<"):
        return {"feature": {"dtype": kind[5:-1], "_type": "Value"}, "_type": "List"}
    return {"dtype": kind, "_type": "Value"}


def arrow_schema(columns: list[tuple[str, str]]):
    """The pyarrow schema of (name, kind) columns, with the
    features in its metadata as datasets writes them."""
    import pyarrow as pa

    def arrow_type(kind: str):
        if kind.startswith("list<"):
            return pa.list_(getattr(pa, kind[5:-1])())
        return getattr(pa, kind)()

    features = {name: feature(kind) for name, kind in columns}
    return pa.schema(
        [(name, arrow_type(kind)) for name, kind in columns],
        metadata={"huggingface": json.dumps({"info": {"features": features}})},
    )


def arrow_nbytes(num_rows: int, values: dict[str, int], columns: list[tuple[str, str]]) -> int:
    """Bytes of the Arrow buffers of the whole table (datasets' _estimate_nbytes: table.nbytes):
    `values[name]` is the number of list elements of a list column."""
    total = 0
    for name, kind in columns:
        if kind.startswith("list<"):
            total += 4 * (num_rows + 1) + values[name] * np.dtype(kind[5:-1]).itemsize
        else:
            total += num_rows * np.dtype(kind).itemsize
    return total


def shard_bounds(num_rows: int, nbytes: int) -> list[int]:
    """First row of each data file, then num_rows: save_to_disk's count (one file per MAX_SHARD_BYTES,
    no more files than rows) and Dataset.shard(contiguous=True)'s split. One file when there is no row
    (datasets writes none and then cannot load the directory)."""
    count = max(1, min(num_rows, int(nbytes / MAX_SHARD_BYTES) + 1))
    div, mod = divmod(num_rows, count)
    return [div * k + min(k, mod) for k in range(count)] + [num_rows]


class ShardWriter:
    """Streams record batches of consecutive rows into the data
    files of a directory (bounds: shard_bounds)."""

    def __init__(self, directory: str, schema, bounds: list[int]):
        self.directory = directory
        self.schema = schema
        self.bounds = bounds
        self.files = [data_file(k, len(bounds) - 1) for k in range(len(bounds) - 1)]
        self._k = 0
        self._row = 0
        self._sink = self._writer = None

    def _open(self) -> None:
        import pyarrow as pa

        # pyarrow hands each column buffer of a batch to the sink whole (16 MB and more)
        self._sink = open_pieces(os.path.join(self.directory, self.files[self._k]))
        self._writer = pa.ipc.new_stream(self._sink, self.schema)

    def _close_file(self) -> None:
        self._writer.close()
        self._sink.close()
        self._sink = self._writer = None
        self._k += 1

    def write(self, batch) -> None:
        """The next rows (a pyarrow RecordBatch), split across data files where a bound falls inside it."""
        while batch.num_rows:
            if self._writer is None:
                self._open()
            room = self.bounds[self._k + 1] - self._row
            self._writer.write_batch(batch.slice(0, room))
            taken = min(room, batch.num_rows)
            self._row += taken
            batch = batch.slice(taken)
            if self._row == self.bounds[self._k + 1]:
                self._close_file()

    @property
    def rows_written(self) -> int:
        return self._row

    def close(self) -> None:
        """Finish the files (an empty table: one file holding the schema alone)."""
        if self._row == 0 and self._k == 0 and self._writer is None:
            self._open()
        if self._writer is not None:
            self._close_file()
        if self._row != self.bounds[-1]:
            raise ValueError(f"{self._row} rows written, {self.bounds[-1]} declared")

    def abort(self) -> None:
        """Close an open file after a failure (the caller removes the directory)."""
        for handle in (self._writer, self._sink):
            try:
                if handle is not None:
                    handle.close()
            except Exception:  # noqa: BLE001  (already failing: the first error is the one reported)
                pass


def write_metadata(
    directory: str, columns: list[tuple[str, str]], files: list[str], description: str, fingerprint: str
) -> None:
    """dataset_info.json and state.json, as save_to_disk writes them."""
    info = {
        "citation": "",
        "description": description,
        "features": {name: feature(kind) for name, kind in columns},
        "homepage": "",
        "license": "",
    }
    state = {
        "_data_files": [{"filename": f} for f in files],
        "_fingerprint": fingerprint,
        "_format_columns": None,
        "_format_kwargs": {},
        "_format_type": None,
        "_output_all_columns": False,
        "_split": None,
    }
    with open(os.path.join(directory, STATE), "w", encoding="utf-8") as f:
        json.dump(state, f, indent=2, sort_keys=True)
    with open(os.path.join(directory, DATASET_INFO), "w", encoding="utf-8") as f:
        json.dump(info, f, indent=2)

"""Hugging Face `datasets` directories (what `Dataset.save_to_disk` writes): Arrow IPC stream files
listed in state.json, read in that order; their record batches are the units of tokenize chunks
(mintdim/sources/arrow.py). The files are memory-mapped: a batch is read without a copy.
dataset_info.json (the features) is not needed: the Arrow schema carries the types.
"""

from __future__ import annotations

import json
import os

from .. import errors as E
from . import arrow

KIND = "datasets"
STATE = "state.json"


class DatasetsSource:
    KIND = KIND

    def __init__(self, path: str, display: str):
        self.path, self.display = path, display
        self._files = None
        self._units = None

    def _shown(self, name: str) -> str:
        return f"{self.display.rstrip('/')}/{name}"

    def files(self) -> list[str]:
        """The Arrow files, in the order state.json lists them."""
        if self._files is not None:
            return self._files
        state = os.path.join(self.path, STATE)
        if not os.path.isfile(state):
            dataset_dict = os.path.isfile(os.path.join(self.path, "dataset_dict.json"))
            raise E.MintDimFileNotFoundError.datasets_state(
                self._shown(STATE), self._shown("train") if dataset_dict else None
            )
        try:
            with open(state, encoding="utf-8") as f:
                listed = [item["filename"] for item in json.load(f)["_data_files"]]
            if not all(isinstance(name, str) and name for name in listed):
                raise TypeError("a filename is not a string")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise E.SourceParseError.datasets_state_json(self._shown(STATE), arrow.reason(exc)) from None
        found = []
        for name in listed:
            full = os.path.join(self.path, name)
            if not os.path.isfile(full):
                raise E.MintDimFileNotFoundError.make(
                    "source (a datasets directory, listed in state.json)", self._shown(name)
                )
            found.append(full)
        self._files = found
        return found

    def _stream(self, path: str):
        pa = arrow.pyarrow()
        try:
            return pa.ipc.open_stream(pa.memory_map(path))
        except Exception as exc:  # not an Arrow stream, or a damaged one
            name = os.path.basename(path)
            raise E.SourceParseError.datasets_not_stream(self._shown(name), arrow.reason(exc)) from None

    def _batches(self):
        """(Arrow file, batch) of every record batch, in order
        (raising what pyarrow raises on a damaged batch)."""
        for path in self.files():
            reader = self._stream(path)
            for batch in reader:
                yield path, batch

    def units(self) -> list[tuple[int, int]]:
        """(rows, bytes) of every record batch of every Arrow file, in order."""
        if self._units is None:
            units, rows = [], 0
            batches = self._batches()
            while True:
                try:
                    _path, batch = next(batches)
                except StopIteration:
                    break
                except E.MintDimError:
                    raise
                except Exception as exc:
                    raise E.SourceParseError.unreadable_rows(
                        self.display, E.Row(rows + 1, KIND), arrow.reason(exc)
                    ) from None
                units.append((batch.num_rows, batch.nbytes))
                rows += batch.num_rows
            self._units = units
        return self._units

    def schema(self):
        files = self.files()
        if not files:
            raise E.SourceParseError.datasets_no_files(self._shown(STATE))
        return self._stream(files[0]).schema

    def check(self) -> int:
        """Pre-flight: state.json, every Arrow file it lists, one schema for all of them. Returns the rows."""
        schema = self.schema()
        for path in self.files()[1:]:
            other = self._stream(path).schema
            if not other.remove_metadata().equals(schema.remove_metadata()):
                raise E.SourceParseError.datasets_columns_differ(self._shown(os.path.basename(path)))
        return sum(rows for rows, _size in self.units())

    def batches(self, start: int, end: int, columns: list[str]):
        k = 0
        for _path, batch in self._batches():
            if k >= end:
                return
            if k >= start:
                yield batch.select(columns)
            k += 1

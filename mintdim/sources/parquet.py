"""Parquet files (`.parquet`): row groups are the units of tokenize chunks (mintdim/sources/arrow.py).

The footer (read once, when first needed) gives every row group's rows and bytes and the schema;
a chunk reads its row groups one at a time (`ParquetFile.read_row_group`, only the columns it
needs) and hands out their record batches: memory holds one row group, never the table.
"""

from __future__ import annotations

from .. import errors as E
from . import arrow

KIND = "Parquet"


class ParquetSource:
    KIND = KIND

    def __init__(self, path: str, display: str):
        self.path, self.display = path, display
        self._file = None
        self._units = None

    def _parquet(self):
        if self._file is None:
            arrow.pyarrow()
            import pyarrow.parquet as pq

            try:
                self._file = pq.ParquetFile(self.path)
            except OSError as exc:
                if not _readable(self.path):
                    raise E.SourceParseError.line_unreadable(self.display, 1) from None
                raise E.SourceParseError.footer(self.display, E.Row(1), arrow.reason(exc)) from None
            except Exception as exc:  # ArrowInvalid: no magic bytes, a footer that does not parse
                raise E.SourceParseError.footer(self.display, E.Row(1), arrow.reason(exc)) from None
        return self._file

    def units(self) -> list[tuple[int, int]]:
        """(rows, compressed bytes) of every row group, in file order."""
        if self._units is None:
            meta = self._parquet().metadata
            self._units = []
            for g in range(meta.num_row_groups):
                group = meta.row_group(g)
                size = sum(group.column(c).total_compressed_size for c in range(group.num_columns))
                self._units.append((group.num_rows, size))
        return self._units

    def schema(self):
        return self._parquet().schema_arrow

    def check(self) -> int:
        """Pre-flight: the footer reads, and no row group is empty in a file with rows (pyarrow writes
        an empty table as one empty row group: that file simply holds no rows). Returns the rows."""
        units = self.units()
        total = sum(rows for rows, _size in units)
        before = 0
        for g, (rows, _size) in enumerate(units):
            if rows == 0 and total:
                raise E.SourceParseError.empty_row_group(self.display, E.Row(before + 1, KIND), g)
            before += rows
        return total

    def batches(self, start: int, end: int, columns: list[str]):
        """Record batches of row groups [start, end), one row group decoded at a time. Measured on a 280 MB
        file of 40 row groups (7 MB each), reading every record: read_row_group per group peaks at +49 MB
        whatever the number of groups; iter_batches over the groups held 326 MB (+612 MB peak) by its end."""
        parquet = self._parquet()
        for group in range(start, end):
            table = parquet.read_row_group(group, columns=columns, use_threads=False)
            yield from table.to_batches(max_chunksize=arrow.BATCH_ROWS)
            del table


def _readable(path: str) -> bool:
    try:
        with open(path, "rb"):
            return True
    except OSError:
        return False

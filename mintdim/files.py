"""Writing files: a small file whole (readers see the old text or the new one, never a part), and
large arrays in pieces of at most WRITE_PIECE bytes per write() call."""

from __future__ import annotations

import os
from io import FileIO

# Bytes per write() call. Linux sizes the page-cache folios of a write by its length (ext4 with large
# folios): a write of 2 MB or more gets 2 MB folios, and where the kernel hands free memory back to its
# host (virtio-balloon free page reporting) a fresh 2 MB folio is memory the host must fault in again.
# 187 MB written from one 16 MB array, a fresh file each time, 2 s apart, 6 runs each: 0.57 to 0.72 s
# in 2 MB writes, 0.04 to 0.06 s in 1 MB writes (a loop of f.write(view[a:a + piece]), on the machine
# of docs/performance.md).
WRITE_PIECE = 1 << 20


class PieceWriter(FileIO):
    """A binary file whose write() takes any C-contiguous bytes-like object (a numpy array, a pyarrow
    Buffer, bytes) and hands it to the kernel WRITE_PIECE bytes at a time, unbuffered: a short write
    (a full disk, a file size or quota limit) raises its OSError in the write() that met it, not later
    in close(), and the error names the file."""

    def write(self, data) -> int:
        view = memoryview(data).cast("B")
        try:
            for at in range(0, len(view), WRITE_PIECE):
                piece = view[at : at + WRITE_PIECE]
                while piece:
                    piece = piece[super().write(piece) :]  # after a short write, the next call raises
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror or str(exc), self.name) from None
        return len(view)


def open_pieces(path: str, mode: str = "wb") -> PieceWriter:
    """`open(path, mode)` for writing large arrays: mode "wb" (create or truncate) or "xb" (create only)."""
    if mode not in ("wb", "xb"):
        raise ValueError(f"mode must be 'wb' or 'xb', got {mode!r}")
    return PieceWriter(path, mode[0])


def atomic_write_text(path: str, text: str) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:  # a full disk: no half-written file left beside the path
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise

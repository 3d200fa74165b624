"""Writing a small file whole: readers see the old text or the new one, never a part."""

from __future__ import annotations

import os


def atomic_write_text(path: str, text: str) -> None:
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)

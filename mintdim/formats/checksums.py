"""checksums.sha256 at an output's root: the SHA-256 of every other file of the output, as `sha256sum`
writes them, so that `sha256sum -c checksums.sha256` in the output directory checks it.

One line per file: 64 lowercase hex digits, two spaces, the path relative to the output's root with
'/' separators, LF; lines sorted by path. Finalize writes it last, into the finished tree, before the
tree is placed; `mintdim verify` and `mintdim export` read every listed file again (streamed, BLOCK
bytes at a time) and name each one that differs, is missing, or is not listed.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field

from ..files import atomic_write_text

NAME = "checksums.sha256"
BLOCK = 1 << 22  # bytes read at once (4 MiB)
_LINE = re.compile(r"^([0-9a-f]{64})  (\S(?:.*\S)?)$")


def files_of(root: str) -> list[str]:
    """Every file under root except checksums.sha256 itself: relative paths with '/', sorted."""
    found = []
    for base, dirs, files in os.walk(root):
        dirs.sort()
        rel = os.path.relpath(base, root)
        for name in files:
            path = name if rel == "." else f"{rel}/{name}".replace(os.sep, "/")
            if path != NAME:
                found.append(path)
    return sorted(found)


class _Counter:
    """Files and bytes hashed so far, told to a Progress (a line every few seconds on long passes)."""

    def __init__(self, progress=None):
        self.progress = progress
        self.files = 0
        self.bytes = 0

    def add(self, nbytes: int) -> None:
        self.bytes += nbytes
        if self.progress is not None:
            self.progress.update(self.files, self.bytes)


def digest(path: str, counter: _Counter | None = None) -> str:
    """The SHA-256 hex digest of a file, read BLOCK bytes at a time into one buffer."""
    h = hashlib.sha256()
    buf = bytearray(BLOCK)
    view = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        while True:
            n = f.readinto(buf)
            if not n:
                break
            h.update(view[:n])
            if counter is not None:
                counter.add(n)
    if counter is not None:
        counter.files += 1
    return h.hexdigest()


def text_of(root: str, progress=None) -> str:
    """The checksums file of the tree at root, as write() writes it (`progress`: its total becomes the count
    of files; a line every few seconds)."""
    rels = files_of(root)
    if progress is not None:
        progress.total = len(rels)
    counter = _Counter(progress)
    return "".join(f"{digest(os.path.join(root, rel), counter)}  {rel}\n" for rel in rels)


def write(root: str, progress=None) -> str:
    """Write root/checksums.sha256 (every other file of the tree); returns its path."""
    path = os.path.join(root, NAME)
    atomic_write_text(path, text_of(root, progress))
    return path


@dataclass
class Check:
    """What a checksum pass found: files whose bytes differ from their line, listed files that are missing,
    files that no line lists, and lines that are not `HEX  PATH` (by line number)."""

    present: bool = True  # False: the output has no checksums.sha256 (built before MintDim wrote one)
    files: int = 0  # files checked
    differ: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    malformed: list[int] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.present and not (self.differ or self.missing or self.extra or self.malformed)


def parse(text: str) -> tuple[dict[str, str], list[int]]:
    """{path: digest} of a checksums file, and the numbers of its lines that are not `HEX  PATH`."""
    listed, bad = {}, []
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the final LF
    for n, line in enumerate(lines, 1):
        found = _LINE.match(line)
        if found is None or found.group(2) in listed:
            bad.append(n)
            continue
        listed[found.group(2)] = found.group(1)
    return listed, bad


def check(root: str, progress=None) -> Check:
    """Read checksums.sha256 of the output at root and every file it lists (see Check)."""
    try:
        with open(os.path.join(root, NAME), encoding="utf-8", errors="replace", newline="") as f:
            text = f.read()
    except FileNotFoundError:
        return Check(present=False)
    listed, bad = parse(text)
    found = Check(malformed=bad)
    have = set(files_of(root))
    found.extra = sorted(have - set(listed))
    if progress is not None:
        progress.total = len(listed)
    counter = _Counter(progress)
    for rel, want in sorted(listed.items()):
        path = os.path.join(root, rel)
        if rel not in have:
            found.missing.append(rel)
        elif digest(path, counter) != want:
            found.differ.append(rel)
    found.files = len(listed)
    return found

"""Where each message lands in a rendered conversation: the check that none vanished, and the spans
of trained messages (mintdim/sources/chat.py renders; this module reads renderings).

A message's parts, as the templates write them:
- its answer: the content, or, for an assistant whose content holds a <think> block (and no
  reasoning key), what follows the last </think> (Qwen3 writes only that for earlier turns);
- its reasoning: a reasoning key (reasoning_content, thinking, reasoning) or that <think> block;
  templates drop it by design for earlier turns, so it is never required in the rendering;
- its tool calls: each call's function name and argument names, in order.

Whole contents are located while the conversation is rendered: each is passed to the template as a
Traced string, which renders as itself and carries where it lies through what templates do to it
(concatenation, strip, trim); its span is where it lands in the output. Other items, and a content
that does not land exactly once, are located by sentinel.

Items located by sentinel (see ChatRenderer.render_with_spans): "content" (the whole content),
"answer" (the content after its <think> block), "reasoning", and "turn" for a message with tool
calls: its answer and calls together, found by rendering the message without its calls and with a
sentinel for its answer (the turn is the text between the common prefix and suffix).
"""

from __future__ import annotations

import json

# transformers 5.24.0 chat_template_utils._REASONING_FIELDS
REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
FIRST_WINDOW = 256  # characters: where the check looks for a content before computing its JSON-escaped form
HEAD = 32  # characters of a content looked for first, then compared whole in place
TAG_LIMIT = 64  # characters: the longest opening tag of a reasoning block looked for before it
ABSENT = "absent"  # a reasoning item the template does not render


# --- a message's parts ------------------------------------------------------------------------------


def reasoning_of(m: dict) -> tuple[str, str]:
    """(where, text) of a message's reasoning: "field" (a reasoning key), "content" (a <think> block
    in an assistant's content, read as Qwen3 reads it) or "" (none)."""
    for key in REASONING_FIELDS:
        if m.get(key) is not None:
            return "field", m[key]
    content = m.get("content")
    if m.get("role") == "assistant" and isinstance(content, str) and THINK_CLOSE in content:
        start, end = _think_bounds(content)
        return "content", content[start:end]
    return "", ""


def _think_bounds(content: str) -> tuple[int, int]:
    """The reasoning inside a content: after the last <think> before the first </think>."""
    end = content.index(THINK_CLOSE)
    start = content.rfind(THINK_OPEN, 0, end)
    return (start + len(THINK_OPEN) if start >= 0 else 0), end


def _answer_start(content: str) -> int:
    return content.rindex(THINK_CLOSE) + len(THINK_CLOSE)


def answer_of(m: dict) -> str:
    content = m.get("content")
    if not isinstance(content, str):
        return ""
    return content[_answer_start(content) :] if reasoning_of(m)[0] == "content" else content


def marked(m: dict, marks: dict) -> dict:
    """The message with some parts replaced by sentinels: marks maps an item kind to its sentinel.
    "turn" also removes the tool calls; the rest of the content is kept as written."""
    m = dict(m)
    where = reasoning_of(m)[0]
    content = m.get("content")
    answer = marks.get("turn") or marks.get("answer") or marks.get("content")
    if "turn" in marks:
        m.pop("tool_calls", None)
    if where == "content":
        start, end = _think_bounds(content)
        k = _answer_start(content)
        reasoning = marks.get("reasoning") or content[start:end]
        m["content"] = content[:start] + reasoning + content[end:k] + (answer if answer else content[k:])
    elif answer is not None:
        m["content"] = answer
    if where == "field" and "reasoning" in marks:
        for key in REASONING_FIELDS:
            if m.get(key) is not None:
                m[key] = marks["reasoning"]
    return m


# --- nothing vanishes -------------------------------------------------------------------------------


def missing(text: str, messages: list[dict], skip_roles: frozenset) -> tuple[int, str | None] | None:
    """The first message not found in `text` in order, as (index, the tool call's name or None for its
    content); None when every message is found. One forward scan: each part is looked for from where
    the previous one ended, as written or JSON-escaped (a template's tojson), trimmed of whitespace.
    Reasoning is never looked for; nor are messages of `skip_roles` (source.chat.drop_roles)."""
    pos, find = 0, text.find
    for i, m in enumerate(messages):
        role = m["role"]
        if role in skip_roles:
            continue
        probe = m["content"]  # a string (read_messages)
        if role == "assistant" and THINK_CLOSE in probe and reasoning_of(m)[0] == "content":
            probe = probe[_answer_start(probe) :]
        if probe and not (probe[0].isspace() or probe[-1].isspace()):  # the common case: no strip, no escape
            at = find(probe[:HEAD], pos, pos + FIRST_WINDOW + HEAD)  # a long needle's set-up costs more than
            if at < 0 or not text.startswith(probe, at):  # its head and one compare in place
                at = find(probe, pos, pos + FIRST_WINDOW + len(probe))
            at, n = (at, len(probe)) if at >= 0 else find_written(text, probe, pos)
        else:
            probe = probe.strip()
            at, n = find_written(text, probe, pos) if probe else (pos, 0)
        if at < 0:
            return i, None
        pos = at + n
        for call in m.get("tool_calls") or ():
            function = call["function"]
            for probe in (function["name"], *function["arguments"]):
                at, n = find_written(text, probe, pos)
                if at < 0:
                    return i, function["name"]
                pos = at + n
    return None


def find_written(text: str, probe: str, pos: int) -> tuple[int, int]:
    """(start, length) of the first occurrence of `probe` at or after `pos`, as written or JSON-escaped;
    (-1, 0) when neither occurs. Linear in the distance searched: both forms are looked for in windows
    that double, so a form that never occurs costs no more than the one that does."""
    at = text.find(probe, pos, pos + FIRST_WINDOW + len(probe))
    if at >= 0:
        return at, len(probe)
    escaped = json.dumps(probe, ensure_ascii=False)[1:-1]
    if escaped == probe:
        return text.find(probe, pos), len(probe)
    width = FIRST_WINDOW
    while True:
        end = pos + width
        a = text.find(probe, pos, end + len(probe))
        b = text.find(escaped, pos, end + len(escaped))
        if a >= 0 and (b < 0 or a < b):
            return a, len(probe)
        if b >= 0:
            return b, len(escaped)
        if end >= len(text):
            return -1, 0
        width *= 2


# --- reading a rendering against one with sentinels -------------------------------------------------


def within(region: str, source: str) -> bool:
    """A content item's region: a piece of its source, as written or JSON-escaped."""
    if region in source:
        return True
    # not as written: escaped, it must hold an escape (a stretch without one is in the source as written)
    return "\\" in region and region in json.dumps(source, ensure_ascii=False)[1:-1]


def turn_valid(region: str, m: dict, ends: tuple[str, ...]) -> tuple[bool, bool]:
    """(valid, a longer region may be valid) for a tool-call turn: it holds the answer and each call's
    name and argument names in order, and no end-of-turn marker."""
    if any(end in region for end in ends):
        return False, False
    pos = 0
    answer = answer_of(m).strip()
    for probe in ([answer] if answer else []) + [
        p for c in m["tool_calls"] for p in (c["function"]["name"], *c["function"]["arguments"])
    ]:
        at, n = find_written(region, probe, pos)
        if at < 0:
            return False, True
        pos = at + n
    return True, True


def common_prefix(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # slice compares run in C: O(n log n) instead of a Python loop per character
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def common_suffix(a: str, b: str, limit: int) -> int:
    lo, hi = 0, min(limit, len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid :] == b[len(b) - mid :]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def read_pieces(text: str, other: str, marks: list[str], optional: list[bool], valid) -> dict | None:
    """Spans of the marks in `text`, when `other` (the rendering with sentinels) is literal pieces
    around them and `text` is the same pieces around regions, read left to right with exactly one
    reading. valid(k, region) -> (ok, a longer region may be ok). An optional mark (reasoning) may be
    absent from `other`: its value is ABSENT. Anything else: None."""
    pieces, order, pos = [], [], 0
    for k, mark in enumerate(marks):
        at = other.find(mark, pos)
        if at < 0:
            if optional[k] and mark not in other:
                continue
            return None
        if other.find(mark, at + 1) >= 0:
            return None
        pieces.append(other[pos:at])
        order.append(k)
        pos = at + len(mark)
    tail = other[pos:]
    if not order or not text.startswith(pieces[0]) or not text.endswith(tail):
        return None
    found = {k: ABSENT for k in range(len(marks)) if k not in order}
    pos, end_limit = len(pieces[0]), len(text) - len(tail)
    for idx, k in enumerate(order):
        if idx + 1 == len(order):
            if end_limit < pos or not valid(k, text[pos:end_limit])[0]:
                return None
            found[k] = (pos, end_limit)
            break
        nxt = pieces[idx + 1]
        q = _one_reading(text, pos, nxt, lambda region: valid(k, region))  # noqa: B023  (called at once)
        if q is None:
            return None
        found[k] = (pos, q)
        pos = q + len(nxt)
    return found


def _one_reading(text: str, pos: int, nxt: str, valid) -> int | None:
    """The one place `nxt` can follow a valid region that starts at pos; None for none or two."""
    if not nxt:
        return None
    chosen = None
    q = text.find(nxt, pos)
    while q >= 0:
        ok, grow = valid(text[pos:q])
        if ok:
            if chosen is not None:
                return None  # two readings: ambiguous
            chosen = q
        if not grow:
            break
        q = text.find(nxt, q + 1)
    return chosen


def diff_region(text: str, other: str, sentinel: str) -> tuple[int, int] | None:
    """The part of `text` that differs from `other` (the same rendering with one part replaced by
    `sentinel`): between their common prefix and common suffix; None when the sentinel is not in
    other's differing part (the template laid out more than that part differently)."""
    if other == text:
        return None
    p = common_prefix(text, other)
    s = common_suffix(text, other, min(len(text), len(other)) - p)
    if sentinel not in other[p : len(other) - s]:
        return None
    return p, len(text) - s


def opening_tag_start(text: str, at: int, floor: int) -> int:
    """Where the tag that opens a reasoning block starting at `at` begins: the tag right before it,
    after optional whitespace (`<think>\\n`, `[THINK]`), not before `floor`; `at` when there is none."""
    j = at
    while j > floor and text[j - 1] in " \t\r\n":
        j -= 1
    if j <= floor or text[j - 1] not in ">]":
        return at
    opener = "<" if text[j - 1] == ">" else "["
    k = text.rfind(opener, max(floor, j - TAG_LIMIT), j - 1)
    if k < 0 or any(c in text[k + 1 : j - 1] for c in "\n<>[]"):
        return at
    return k


# --- where a content lands, seen while rendering ----------------------------------------------------


class Trace:
    """One rendering with Traced contents: each content key's sentinel, the rendering with sentinels it
    stands for (values in that rendering: marked), and whether that rendering would have gone
    otherwise (diverged: a value read from a content differs from the one read from its sentinel)."""

    def __init__(self, marks: list[str]):
        self.marks, self.diverged, self.written = marks, False, []

    def marked(self, value):
        """The value in the rendering with sentinels: each content's place holds its sentinel."""
        if not isinstance(value, Traced):
            return value
        out, pos = [], 0
        for key, a, b in value.parts:
            out += (str.__getitem__(value, slice(pos, a)), self.marks[key])
            pos = b
        out.append(str.__getitem__(value, slice(pos, None)))
        return "".join(out)

    def check(self, got, name: str, value, args: tuple, kwargs: dict) -> None:
        """The same operation in the rendering with sentinels gives `got` there, or the trace diverged."""
        if self.diverged:
            return
        m = self.marked
        try:
            there = getattr(str, name)(m(value), *map(m, args), **{k: m(v) for k, v in kwargs.items()})
        except Exception:  # noqa: BLE001  (it raises there, not here)
            self.diverged = True
            return
        self.diverged = there != m(got)


class Traced(str):
    """A message content as the template gets it, and every string built from it by concatenation (+)
    or strip, lstrip, rstrip (trim): `parts` says where each content lies in it ((key, start, end),
    ...). Its value is always the one a plain str gives. Any other operation returns what str returns
    and is checked against the same operation on the sentinels (Trace.check); str() (how Jinja writes
    a value) records the value, which must then be written whole to the output (landed)."""

    parts: tuple = ()
    trace: Trace | None = None

    def __str__(self):
        if self.trace is not None:
            self.trace.written.append(self)
        return self

    def __add__(self, other):
        value = str.__add__(self, other)
        if value is NotImplemented:
            return value
        return traced(value, self.parts + _shifted(other, str.__len__(self)), self.trace)

    def __radd__(self, other):  # plain + Traced: Python asks the subclass first
        if not isinstance(other, str):
            return NotImplemented
        return traced(str.__add__(other, self), _shifted(self, str.__len__(other)), self.trace)

    def strip(self, chars=None):
        left = str.lstrip(self, chars)
        return self._kept(str.__len__(self) - len(left), str.rstrip(left, chars), "strip", chars)

    def lstrip(self, chars=None):
        value = str.lstrip(self, chars)
        return self._kept(str.__len__(self) - len(value), value, "lstrip", chars)

    def rstrip(self, chars=None):
        return self._kept(0, str.rstrip(self, chars), "rstrip", chars)

    def _kept(self, start: int, value: str, name: str, chars) -> Traced:
        """The piece `value` of self that starts at `start`: each part clipped to it."""
        end = start + len(value)
        clip = [(k, min(max(a, start), end), max(min(b, end), start)) for k, a, b in self.parts]
        out = traced(value, tuple((k, a - start, b - start) for k, a, b in clip), self.trace)
        if self.trace is not None:
            self.trace.check(out, name, self, (chars,), {})
        return out

    # str.format reads the content in the sandbox's own formatter: never the same with a sentinel
    format = property(lambda self: _diverge(self, str.format))
    format_map = property(lambda self: _diverge(self, str.format_map))


def _diverge(value: Traced, method):
    if value.trace is not None:
        value.trace.diverged = True
    return method.__get__(value)


def _checked(name: str):
    method = getattr(str, name)

    def checked(self, *args, **kwargs):
        got = method(self, *args, **kwargs)
        if self.trace is not None:
            self.trace.check(got, name, self, args, kwargs)
        return got

    checked.__name__ = name
    return checked


_KEPT = {"strip", "lstrip", "rstrip", "format", "format_map", "maketrans"}
for _name in [n for n in dir(str) if not n.startswith("_") and n not in _KEPT] + [
    "__len__", "__contains__", "__getitem__", "__iter__", "__eq__", "__ne__", "__lt__", "__le__", "__gt__",
    "__ge__", "__hash__", "__mod__", "__rmod__", "__mul__", "__rmul__", "__format__", "__repr__",
]:  # fmt: skip
    setattr(Traced, _name, _checked(_name))
Traced.__bool__ = lambda self: _checked_call(self, bool)
Traced.__int__ = lambda self: _checked_call(self, int)
Traced.__float__ = lambda self: _checked_call(self, float)


def _checked_call(value: Traced, fn):
    got = fn(str.__str__(value))
    if value.trace is not None and not value.trace.diverged:
        try:
            value.trace.diverged = fn(value.trace.marked(value)) != got
        except Exception:  # noqa: BLE001  (it raises there, not here)
            value.trace.diverged = True
    return got


def traced(value: str, parts: tuple, trace: Trace) -> Traced:
    out = Traced(value)
    out.parts, out.trace = parts, trace
    return out


def _shifted(value: str, by: int) -> tuple:
    return tuple((key, a + by, b + by) for key, a, b in value.parts) if isinstance(value, Traced) else ()


def landed(chunks: list[str], trace: Trace) -> dict | None:
    """Where each traced content lies in "".join(chunks), the output of a rendering: {key: (start,
    end)}. None when the rendering with sentinels would differ other than by the contents' places:
    the trace diverged, a content is not in the output exactly once, or a string holding one was
    turned into text (str()) that is not an output piece (a join, a macro's output)."""
    found, pos, out = {}, 0, set()
    for chunk in chunks:
        if isinstance(chunk, Traced):
            out.add(id(chunk))
            for key, a, b in chunk.parts:
                if key in found:
                    return None
                found[key] = (pos + a, pos + b)
        pos += str.__len__(chunk)
    if trace.diverged or len(found) != len(trace.marks) or any(id(w) not in out for w in trace.written):
        return None
    return found


def watch_json(environment) -> None:
    """The environment's tojson filter marks a trace diverged when it writes a Traced string (json
    reads a str subclass's characters directly: no Traced method sees it)."""
    dump = environment.filters["tojson"]

    def tojson(x, *args, **kwargs):
        _json_reads(x)
        return dump(x, *args, **kwargs)

    environment.filters["tojson"] = tojson


def _json_reads(x) -> None:
    if isinstance(x, Traced):
        if x.trace is not None:
            x.trace.diverged = True
    elif isinstance(x, dict):
        for k, v in x.items():
            _json_reads(k)
            _json_reads(v)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _json_reads(v)

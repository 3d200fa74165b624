"""User templates: `{name}` placeholders, `{{`/`}}` literal braces, everything else literal.

Rendering is pure substitution: field values are inserted verbatim, never
interpreted, so a value holding `{x}` stays `{x}`.
"""

from __future__ import annotations

from dataclasses import dataclass

# Characters that would make a placeholder a format spec, conversion, attribute or index access.
_FORBIDDEN_IN_NAME = set(":!.[]{}")
TURN_SPACE = " \t\r\n"  # white space between a trained field and its end marker (chat mode skips the same)


class TemplateSyntaxError(ValueError):
    """A malformed placeholder; `.placeholder` is the offending text as written."""

    def __init__(self, placeholder: str, reason: str):
        super().__init__(reason)
        self.placeholder = placeholder
        self.reason = reason


@dataclass(frozen=True)
class Template:
    text: str
    literals: tuple[str, ...]  # len(names) + 1 pieces, braces already unescaped
    names: tuple[str, ...]

    def render(self, values: dict) -> str:
        lit = self.literals
        out = [lit[0]]
        for i, name in enumerate(self.names):
            out.append(values[name])
            out.append(lit[i + 1])
        return "".join(out)

    def render_with_spans(
        self, values: dict, trained: frozenset, ends: tuple = ()
    ) -> tuple[str, list[tuple[int, int]]]:
        """The rendered text and the [start, end) character span of every occurrence of a
        trained field in it (a field used twice has two spans; an empty value an empty span).
        ends (end_spans): per occurrence, the end-of-turn marker written right after it, whose span
        follows that occurrence's."""
        lit = self.literals
        out = [lit[0]]
        pos = len(lit[0])
        spans = []
        k = 0
        for i, name in enumerate(self.names):
            value = values[name]
            if name in trained:
                spans.append((pos, pos + len(value)))
                if ends and ends[k] is not None:
                    spans.append((pos + len(value) + ends[k][0], pos + len(value) + ends[k][1]))
                k += 1
            out.append(value)
            out.append(lit[i + 1])
            pos += len(value) + len(lit[i + 1])
        return "".join(out), spans

    def end_spans(self, trained: frozenset, markers: tuple[str, ...]) -> tuple:
        """source.train_eos: for each occurrence of a trained field, in order, where the end marker the
        template writes right after it lies in the literal that follows: (start, end) past optional
        white space, or None. markers: longest first (kinds.end_markers); one marker, as chat mode."""
        found = []
        for i, name in enumerate(self.names):
            if name not in trained:
                continue
            literal = self.literals[i + 1]
            at = len(literal) - len(literal.lstrip(TURN_SPACE))
            marker = next((m for m in markers if literal.startswith(m, at)), None)
            found.append((at, at + len(marker)) if marker else None)
        return tuple(found)

    def end_texts(self, trained: frozenset, ends: tuple) -> list[str]:
        """The distinct end markers of end_spans(trained, ...), in template order."""
        occurrences = [i for i, name in enumerate(self.names) if name in trained]
        texts = [self.literals[i + 1][e[0] : e[1]] for i, e in zip(occurrences, ends) if e is not None]
        return list(dict.fromkeys(texts))

    @property
    def static_parts(self) -> list[str]:
        """Non-empty literal segments, each encoded on its own by the tier-1 UNK check."""
        return [piece for piece in self.literals if piece]


def parse(text: str) -> Template:
    literals: list[str] = []
    names: list[str] = []
    buf: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "{":
            if i + 1 < n and text[i + 1] == "{":
                buf.append("{")
                i += 2
                continue
            close = text.find("}", i + 1)
            if close < 0:
                raise TemplateSyntaxError(text[i:], "unbalanced '{'")
            inner = text[i + 1 : close]
            if "{" in inner:
                raise TemplateSyntaxError(text[i : close + 1], "unbalanced '{'")
            if not inner or any(c in _FORBIDDEN_IN_NAME for c in inner):
                raise TemplateSyntaxError(text[i : close + 1], "not a plain {name} placeholder")
            literals.append("".join(buf))
            buf = []
            names.append(inner)
            i = close + 1
        elif ch == "}":
            if i + 1 < n and text[i + 1] == "}":
                buf.append("}")
                i += 2
                continue
            raise TemplateSyntaxError("}", "unbalanced '}'")
        else:
            # copy a run of plain characters at once
            j = i
            while j < n and text[j] not in "{}":
                j += 1
            buf.append(text[i:j])
            i = j
    literals.append("".join(buf))
    return Template(text=text, literals=tuple(literals), names=tuple(names))

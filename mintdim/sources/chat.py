"""Conversations (source.chat): records of messages, rendered with the model's own chat template.

Config (checked by mintdim/config.py: the schema's chat_item, then its steps): `chat` is a dict
shared by every file or a list mapped by file (null: that file uses fields/templates). Keys (all optional; `chat: {}` is the OpenAI shape):
  messages  the record key of the message list (default "messages")
  role      the message key of the role (default "role")
  content   the message key of the content (default "content"): a string or a list of text parts
  roles     a map source role -> template role (ShareGPT: {human: user, gpt: assistant}); with a
            map, a role outside it is a data error; without one, roles are passed as written
  system    a record key holding a system prompt, rendered as a first {"role": "system"} message
  extras    record keys passed to the template as variables of the same name (e.g. ["tools"])
  train     a message key holding a boolean that overrides train_on for that message
  last_turn true: of the messages train_on selects by role, only the last one is trained

Rendering is exactly transformers 5.24.0's `apply_chat_template(messages, tokenize=False)`: the
same sandboxed Jinja environment and globals (copied from transformers/utils/
chat_template_utils.py), the same message preparation (None-valued keys dropped, reasoning
fields aliased), the tokenizer's named special tokens as variables, no generation prompt. The
template is compiled once per process.

Masks: a trained message's span is the part of the rendering that its content produces, found by
rendering the conversation again with only that content replaced by a private-use sentinel: the
text between the common prefix and the common suffix of the two renderings. It must be a piece of
the content (a template may trim it or drop a leading <think> block, never rewrite it), else the
conversation is a ChatTemplateError: no mask is guessed. The end-of-turn special token right after
it (after optional whitespace) is trained too: the EOS, or a special token named like an end
marker (<|im_end|>, <|eot_id|>, <end_of_turn>, <|end|>, ...). A token is trained when the
character it starts at lies in a span (the train_on rule). With {% generation %} tags in the
template, assistant turns take the tagged spans instead, with transformers' own
return_assistant_tokens_mask rule (a token overlapping a tagged span).
"""

from __future__ import annotations

import json
import re
from datetime import datetime

from .. import errors as E

DEFAULTS = {"messages": "messages", "role": "role", "content": "content"}
DEFAULT_TRAIN_ROLES = ["assistant"]
GENERATION_TAG = re.compile(r"\{\%-?\s*generation\s*-?\%\}")  # as transformers detects the tags
# transformers passes tools and documents as named arguments; other extras go in as kwargs
NAMED_EXTRAS = ("tools", "documents")
# transformers 5.24.0 chat_template_utils._REASONING_FIELDS
REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")
SENTINELS = ("\U000f0000\U000f0001", "\U000f0002\U000f0003", "\U000f0004\U000f0005")
_JSON_TYPES = {str: "string", int: "number", float: "number", bool: "boolean", type(None): "null",
               list: "array", dict: "object"}


# --- the Jinja environment of transformers 5.24.0 -------------------------------------------


def compile_template(text: str):
    """The template compiled as transformers 5.24.0 `_cached_compile_jinja_template` does."""
    from contextlib import contextmanager
    from contextvars import ContextVar

    import jinja2
    from jinja2.ext import Extension
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class AssistantTracker(Extension):
        tags = {"generation"}

        def __init__(self, environment):
            super().__init__(environment)
            environment.extend(activate_tracker=self.activate_tracker)
            self._tracking = ContextVar("assistant_tracker", default=None)

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(lineno)

        @jinja2.pass_eval_context
        def _generation_support(self, context, caller):
            rv = caller()
            if (tracking := self._tracking.get()) is not None:
                rendered_blocks, generation_indices = tracking
                start_index = len("".join(rendered_blocks))
                generation_indices.append((start_index, start_index + len(rv)))
            return rv

        def is_active(self) -> bool:
            return self._tracking.get() is not None

        @contextmanager
        def activate_tracker(self, rendered_blocks, generation_indices):
            if self.is_active():
                raise ValueError("AssistantTracker should not be reused before closed")
            token = self._tracking.set((rendered_blocks, generation_indices))
            try:
                yield
            finally:
                self._tracking.reset(token)

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(format):
        return datetime.now().strftime(format)

    class TemplateDict:
        def __call__(self, *args, **kwargs):
            return dict(*args, **kwargs)

        def fromkeys(self, *args, **kwargs):
            return dict.fromkeys(*args, **kwargs)

    class TemplateNamespace(jinja2.utils.Namespace):
        def __init__(*args, **kwargs):
            self, args = args[0], args[1:]
            attrs = dict(*args, **kwargs)
            for name in attrs:
                TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__init__(self, attrs)

        def __setitem__(self, name, value):
            TemplateNamespace._check_name(name)
            jinja2.utils.Namespace.__setitem__(self, name, value)

        @staticmethod
        def _check_name(name):
            if isinstance(name, str) and name.startswith("_"):
                raise jinja2.exceptions.SecurityError(
                    f"Chat templates cannot store underscore-prefixed attributes on a namespace, but got {name!r}. "
                    "Please rename the attribute.")

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True,
                                        extensions=[AssistantTracker, jinja2.ext.loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    env.globals["dict"] = TemplateDict()
    env.globals["namespace"] = TemplateNamespace
    return env.from_string(text)


def prepare_messages(messages: list[dict]) -> list[dict]:
    """What transformers 5.24.0 hands the template: None-valued keys dropped
    (_normalize_chat_messages), then reasoning fields aliased (_alias_reasoning_fields)."""
    out = []
    for message in messages:
        message = {k: v for k, v in message.items() if v is not None}
        reasoning = next((message[k] for k in REASONING_FIELDS if message.get(k) is not None), None)
        if reasoning is not None:
            message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
        out.append(message)
    return out


def end_markers(special_tokens: dict, added_special: list[str]) -> tuple[str, ...]:
    """Strings that close a turn: the EOS, and special tokens named like an end marker
    (<|im_end|>, <|eot_id|>, <end_of_turn>, <|end|>, <|endoftext|>), never a header marker."""
    found = {special_tokens["eos_token"]} if special_tokens.get("eos_token") else set()
    for name in added_special:
        low = name.lower()
        if ("end" in low or "eot" in low) and not any(w in low for w in ("start", "begin", "header")):
            found.add(name)
    return tuple(sorted(found, key=len, reverse=True))


class _Failure(Exception):
    """A data problem of one record: a SampleSchemaError.chat_* constructor and its arguments after file and line."""

    def __init__(self, make, *values):
        super().__init__(make.__name__)
        self.make, self.values = make, values

    def error(self, path: str, line: int) -> E.SampleSchemaError:
        return self.make(path, line, *self.values)


def _common_prefix(a: str, b: str) -> int:
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # slice compares run in C: O(n log n) instead of a Python loop per character
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _common_suffix(a: str, b: str, limit: int) -> int:
    lo, hi = 0, min(limit, len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[len(a) - mid:] == b[len(b) - mid:]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def read_messages(o: dict, obj: dict) -> tuple[list[dict], dict, list]:
    """(messages as the template gets them, extras, per-message train flag or None) of one record,
    by the chat options `o`. Raises _Failure."""
    key = o["messages"]
    if key not in obj:
        raise _Failure(E.SampleSchemaError.chat_no_messages, key, list(obj))
    raw = obj[key]
    if not isinstance(raw, list):
        found = _JSON_TYPES.get(type(raw), "unknown")
        raise _Failure(E.SampleSchemaError.chat_not_list, key, found)
    if not raw:
        raise _Failure(E.SampleSchemaError.chat_empty, key)
    role_key, content_key, train_key, roles = o["role"], o["content"], o.get("train"), o.get("roles")
    out, flags = [], []
    system = o.get("system")
    if system is not None and obj.get(system) is not None:
        prompt = obj[system]
        if not isinstance(prompt, str):
            found = _JSON_TYPES.get(type(prompt), "unknown")
            raise _Failure(E.SampleSchemaError.chat_system_not_string, system, found)
        out.append({"role": "system", "content": prompt})
        flags.append(None)
    for i, m in enumerate(raw):
        at = i
        if not isinstance(m, dict):
            found = _JSON_TYPES.get(type(m), "unknown")
            raise _Failure(E.SampleSchemaError.chat_message_not_object, at, found)
        role = m.get(role_key)
        if role is None:
            raise _Failure(E.SampleSchemaError.chat_no_role, at, role_key)
        if not isinstance(role, str):
            found = _JSON_TYPES.get(type(role), "unknown")
            raise _Failure(E.SampleSchemaError.chat_role_not_string, at, role_key, found)
        if roles is not None:
            if role not in roles:
                raise _Failure(E.SampleSchemaError.chat_unknown_role, at, role, list(roles))
            role = roles[role]
        content = m.get(content_key)
        if isinstance(content, list):
            content = _text_parts(content, at, content_key)
        elif content is None and m.get("tool_calls"):
            pass  # an assistant tool call without text (OpenAI: content null): the key is dropped
        elif not isinstance(content, str):
            found = "missing" if content_key not in m else _JSON_TYPES.get(type(content), "unknown")
            raise _Failure(E.SampleSchemaError.chat_content, at, content_key, found)
        flag = None
        if train_key is not None and train_key in m:
            flag = m[train_key]
            if not isinstance(flag, bool):
                found = _JSON_TYPES.get(type(flag), "unknown")
                raise _Failure(E.SampleSchemaError.chat_train_flag, at, train_key, found)
        message = {"role": role, "content": content}
        for k, v in m.items():
            if k not in (role_key, content_key, train_key) and k not in message:
                message[k] = v
        out.append(message)
        flags.append(flag)
    if system is not None and obj.get(system) is not None and len(out) > 1 and out[1]["role"] == "system":
        raise _Failure(E.SampleSchemaError.chat_two_systems, 0, system)
    extras = {}
    for k in o.get("extras") or ():
        if k in obj and obj[k] is not None:
            extras[k] = obj[k]
    for k in NAMED_EXTRAS:
        value = extras.get(k)
        if value is not None and (not isinstance(value, list) or not all(isinstance(t, dict) for t in value)):
            raise _Failure(E.SampleSchemaError.chat_extra_not_objects, k)
    return out, extras, flags


def _text_parts(parts: list, at: int, key: str) -> str:
    if not parts:
        raise _Failure(E.SampleSchemaError.chat_no_parts, at, key)
    texts = []
    for part in parts:
        if not (isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)):
            kind = part.get("type") if isinstance(part, dict) else _JSON_TYPES.get(type(part), "unknown")
            raise _Failure(E.SampleSchemaError.chat_part_type, at, kind)
        texts.append(part["text"])
    return "".join(texts)  # MintDim's rule: text parts are joined with no separator


def choose(o: dict, roles: frozenset, messages: list[dict], flags: list) -> list[int]:
    """Indexes of the trained messages: a message's own flag, else its role (only the last such
    message with last_turn)."""
    by_role = [i for i, m in enumerate(messages) if flags[i] is None and m["role"] in roles]
    if o.get("last_turn") and by_role:
        by_role = by_role[-1:]
    return sorted(set(by_role) | {i for i, f in enumerate(flags) if f is True})

class ChatRenderer:
    """Renders one file's conversations; with train roles, also the trained character spans."""

    def __init__(self, template_text: str, special_tokens: dict, options: dict, train_roles: list | None = None,
                 added_special: list[str] = (), tool_template_text: str | None = None):
        self.template_text = template_text
        self.template = compile_template(template_text)
        # records that pass tools use a directory's "tool_use" template, as transformers does
        self.tool_template = (compile_template(tool_template_text)
                              if tool_template_text not in (None, template_text) else self.template)
        self.special_tokens = dict(special_tokens)
        self.opts = options
        self.train_roles = frozenset(train_roles) if train_roles is not None else None
        self.tagged = bool(GENERATION_TAG.search(template_text))
        self.tool_tagged = bool(GENERATION_TAG.search(tool_template_text)) if tool_template_text else self.tagged
        self.ends = end_markers(special_tokens, list(added_special))

    # -- records -> messages
    def messages(self, obj: dict) -> tuple[list[dict], dict, list]:
        return read_messages(self.opts, obj)

    def trained_messages(self, messages: list[dict], flags: list) -> list[int]:
        return choose(self.opts, self.train_roles or frozenset(), messages, flags)

    # -- rendering
    def _kwargs(self, extras: dict) -> dict:
        kw = {**self.special_tokens, **{k: v for k, v in extras.items() if k not in NAMED_EXTRAS}}
        return kw

    def render_messages(self, messages: list[dict], extras: dict) -> str:
        template = self.tool_template if extras.get("tools") is not None else self.template
        return template.render(messages=prepare_messages(messages), tools=extras.get("tools"),
                                    documents=extras.get("documents"), add_generation_prompt=False,
                                    **self._kwargs(extras))

    def _render_tracked(self, messages: list[dict], extras: dict) -> tuple[str, list]:
        blocks, indices = [], []
        template = self.tool_template if extras.get("tools") is not None else self.template
        with template.environment.activate_tracker(blocks, indices):
            for block in template.generate(messages=prepare_messages(messages), tools=extras.get("tools"),
                                                documents=extras.get("documents"), add_generation_prompt=False,
                                                **self._kwargs(extras)):
                blocks.append(block)
            text = "".join(blocks)
        return text, indices

    def render(self, obj: dict, path: str, line: int) -> str:
        try:
            messages, extras, _ = self.messages(obj)
        except _Failure as bad:
            raise bad.error(path, line) from None
        return self._safe(lambda: self.render_messages(messages, extras), path, line)

    @staticmethod
    def _safe(fn, path, line):
        try:
            return fn()
        except Exception as exc:  # the template's own words (raise_exception, a bad attribute, ...)
            text = str(exc).strip() or type(exc).__name__
            raise E.ChatTemplateError.raised(path, line, text) from None

    def render_with_spans(self, obj: dict, path: str, line: int) -> tuple[str, list[tuple[int, int, int, str]]]:
        """The rendered text and its trained spans: (start, end, rule, role); rule 0: a token is
        trained when it starts inside, 1: when it overlaps (a {% generation %} span)."""
        try:
            messages, extras, flags = self.messages(obj)
        except _Failure as bad:
            raise bad.error(path, line) from None
        chosen = self.trained_messages(messages, flags)
        if self.tool_tagged if extras.get("tools") is not None else self.tagged:
            text, blocks = self._safe(lambda: self._render_tracked(messages, extras), path, line)
        else:
            text, blocks = self._safe(lambda: self.render_messages(messages, extras), path, line), None
        spans = []
        assistants = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
        located = [i for i in chosen if blocks is None or messages[i]["role"] != "assistant"]
        at_once = self._locate_all(text, messages, extras, located) if located else {}
        for i in chosen:
            role = messages[i]["role"]
            if blocks is not None and role == "assistant":
                if len(blocks) != len(assistants):
                    raise E.ChatTemplateError.unlocated(path, line, self._source_index(obj, i), role)
                a, b = blocks[assistants.index(i)]
                spans.append((a, b, 1, role))
                continue
            found = at_once.get(i) or self._locate(text, messages, extras, i)
            if found is None:
                raise E.ChatTemplateError.unlocated(path, line, self._source_index(obj, i), role)
            a, b = found
            spans.append((a, b, 0, role))
            end = self._end_marker(text, b)
            if end is not None:
                spans.append((end[0], end[1], 0, role))
        return text, spans

    def _source_index(self, obj: dict, i: int) -> int:
        """The message's index in the record's own list (a system prompt key adds one in front)."""
        system = self.opts.get("system")
        return i - 1 if system is not None and obj.get(system) is not None else i

    def _locate_all(self, text: str, messages: list[dict], extras: dict, chosen: list[int]) -> dict:
        """Every chosen message's span from ONE more rendering, with each chosen content replaced by
        its own sentinel: that rendering is literal pieces around the sentinels, and when the real
        rendering is the same pieces around pieces of the contents, read in order with exactly one
        way to do it, each span is known (the same spans _locate finds one message at a time,
        for a layout that does not depend on those contents). Anything else: {} (one at a time)."""
        marks = [f"\U000f0000{k}\U000f0001" for k in range(len(chosen))]
        if "\U000f0000" in text:
            return {}
        changed = list(messages)
        for k, i in enumerate(chosen):
            if not isinstance(messages[i].get("content"), str):
                return {}
            changed[i] = {**messages[i], "content": marks[k]}
        try:
            other = self.render_messages(changed, extras)
        except Exception:
            return {}
        pieces, pos = [], 0
        for mark in marks:
            at = other.find(mark, pos)
            if at < 0 or other.find(mark, at + 1) >= 0:
                return {}
            pieces.append(other[pos:at])
            pos = at + len(mark)
        tail = other[pos:]
        if not text.startswith(pieces[0]) or not text.endswith(tail):
            return {}
        found, pos = {}, len(pieces[0])
        end_limit = len(text) - len(tail)
        for k, i in enumerate(chosen):
            content = messages[i]["content"]
            if k + 1 < len(chosen):
                nxt = pieces[k + 1]
                if not nxt:
                    return {}
                q = text.find(nxt, pos)
                while q >= 0 and text[pos:q] not in content:
                    q = text.find(nxt, q + 1)
                if q < 0:
                    return {}
                again = text.find(nxt, q + 1)
                while again >= 0 and text[pos:again] not in content:
                    again = text.find(nxt, again + 1)
                if again >= 0:
                    return {}  # two readings: ambiguous
            else:
                q = end_limit
                if q < pos or text[pos:q] not in content:
                    return {}
            found[i] = (pos, q)
            pos = q + (len(pieces[k + 1]) if k + 1 < len(chosen) else 0)
        return found

    def _locate(self, text: str, messages: list[dict], extras: dict, i: int) -> tuple[int, int] | None:
        content = messages[i].get("content")
        if not isinstance(content, str):
            return None
        sentinel = next((s for s in SENTINELS if s not in text), None)
        if sentinel is None:
            return None
        changed = list(messages)
        changed[i] = {**messages[i], "content": sentinel}
        try:
            other = self.render_messages(changed, extras)
        except Exception:
            return None
        if other == text or sentinel not in other:
            return None
        p = _common_prefix(text, other)
        s = _common_suffix(text, other, min(len(text), len(other)) - p)
        region = text[p:len(text) - s]
        # The sentinel must lie in the other rendering's changed part (a template may lay out a turn by
        # its content, e.g. Qwen3's reasoning block), and the changed part here must be a piece of the
        # content: else the template rewrote the content, or changed more than it.
        if sentinel not in other[p:len(other) - s] or region not in content:
            return None
        return p, len(text) - s

    def _end_marker(self, text: str, b: int) -> tuple[int, int] | None:
        j = b
        while j < len(text) and text[j] in " \t\r\n":
            j += 1
        for marker in self.ends:
            if text.startswith(marker, j):
                return j, j + len(marker)
        return None


class _AsTemplate:
    """A renderer behind the field Template's interface (render, render_with_spans), so the tokenize
    loop stays one loop; errors carry line 0 until render_at repeats the render with the real line."""

    def __init__(self, renderer: ChatRenderer, path: str):
        self.r, self.path = renderer, path

    def render(self, obj: dict) -> str:
        return self.r.render(obj, self.path, 0)

    def render_with_spans(self, obj: dict, trained=None):
        return self.r.render_with_spans(obj, self.path, 0)

    def render_at(self, obj: dict, line: int, spans: bool):
        return (self.r.render_with_spans if spans else self.r.render)(obj, self.path, line)


ChatRenderer.as_template = lambda self, path: _AsTemplate(self, path)


def renderer_for(entry, tok) -> ChatRenderer:
    """The renderer of one file entry (source.chat) with its loaded hf_dir tokenizer."""
    template = tok.chat_template
    if template is None:
        raise E.ChatTemplateError.missing(entry.tokenizer_path)
    added = tok.added_special()  # without loading the library when the job encodes with the fast engine
    return ChatRenderer(template, tok.special_tokens, entry.chat, entry.train_on, added, tok.tool_chat_template)


def check_template(template_text: str, where: str) -> None:
    """Pre-flight: the template compiles."""
    try:
        compile_template(template_text)
    except Exception as exc:
        raise E.ChatTemplateError.invalid(where, str(exc).strip().splitlines()[0] if str(exc).strip() else
                                          type(exc).__name__) from None

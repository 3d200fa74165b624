"""Conversations (source.chat): records of messages, rendered with the model's own chat template.

Config (checked by mintdim/config.py: the schema's chat_item, then its steps): `chat` is a dict
shared by every file or a list mapped by file (null: that file uses fields/templates). Keys (all
optional; `chat: {}` is the OpenAI shape):
  messages    the record key of the message list (default "messages")
  role        the message key of the role (default "role")
  content     the message key of the content (default "content"): a string or a list of text parts
  roles       a map source role -> template role (ShareGPT: {human: user, gpt: assistant}); with a
              map, a role outside it is a data error; without one, roles are passed as written
  system      a record key holding a system prompt, rendered as a first {"role": "system"} message
  extras      record keys passed to the template as variables of the same name (e.g. ["tools"])
  train       a message key holding a boolean that overrides train_on for that message
  last_turn   true: of the messages train_on selects by role, only the last one is trained
  drop_roles  roles the template may drop: their messages need not be in the rendering
  reasoning   train (default: a rendered reasoning block is trained, its opening tag included) | mask
  chat_template_kwargs  template variables for every record (a record's own key of that name adds
              to them), as transformers' apply_chat_template(**kwargs)

Rendering is exactly transformers 5.24.0's `apply_chat_template(messages, tools=..., **kwargs)`:
the same sandboxed Jinja environment and globals (mintdim/sources/jinja_env.py), the same message
preparation (None-valued keys dropped, reasoning fields aliased), the tokenizer's named special
tokens as variables, no generation prompt. MintDim's own rules before that: the source keys are
mapped, text parts joined, an assistant tool call without text gets content "", tool-call
arguments held in a JSON string become that object (Llama-3.1 writes `arguments | tojson`), a
flat call {name, arguments} becomes {"type": "function", "function": {...}}. The template is
compiled once per process.

Nothing vanishes: after rendering, each message's content (and each tool call's name and argument
names) must be found in order in the rendering (chat_spans.missing: one forward scan), else the
conversation is a ChatTemplateError naming the message; reasoning is exempt (templates drop it for
earlier turns), and so are the roles in drop_roles.

Masks: each trained message's span is read off the real rendering with sentinels
(chat_spans): its content (or answer, its tool-call turn, its reasoning) replaced by private-use
characters in one more rendering; a region of the real rendering must be a piece of what it
replaces (a template may trim it, never rewrite it), else the conversation is a ChatTemplateError:
no mask is guessed. When every trained part is a whole content, the one rendering gives the spans
that rendering would read: the contents go in as chat_spans.Traced strings, which carry their
place through concatenation and trimming, and whose every other read is compared with the same
read of the sentinel; a difference, or a content not written exactly once, falls back to the
rendering with sentinels. The end-of-turn special token right after it (after optional whitespace) is
trained too: the EOS, or a special token named like an end marker (<|im_end|>, <|eot_id|>,
<end_of_turn>, <|end|>, ...). A token is trained when the character it starts at lies in a span
(the train_on rule). With {% generation %} tags in the template, assistant turns take the tagged
spans instead, with transformers' own return_assistant_tokens_mask rule (a token overlapping a
tagged span).
"""

from __future__ import annotations

import json
import re

from .. import errors as E
from ..tokenizers.kinds import end_markers
from . import chat_spans as S
from .chat_spans import REASONING_FIELDS
from .jinja_env import compile_template, template_roles

DEFAULTS = {"messages": "messages", "role": "role", "content": "content"}
DEFAULT_TRAIN_ROLES = ["assistant"]
GENERATION_TAG = re.compile(r"\{\%-?\s*generation\s*-?\%\}")  # as transformers detects the tags
# transformers passes tools and documents as named arguments; other extras go in as kwargs
NAMED_EXTRAS = ("tools", "documents")
RESERVED_KWARGS = ("messages", "tools", "documents", "add_generation_prompt")  # what MintDim passes itself
RECORD_KWARGS = "chat_template_kwargs"  # a record key: template variables of that record
SENTINELS = ("\U000f0000\U000f0001", "\U000f0002\U000f0003", "\U000f0004\U000f0005")
_JSON_TYPES = {
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
    list: "array",
    dict: "object",
}


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


class _Failure(Exception):
    """A data problem of one record: a SampleSchemaError.chat_*
    constructor and its arguments after file and line."""

    def __init__(self, make, *values):
        super().__init__(*values)
        self.make, self.values = make, values

    def error(self, path: str, line: int) -> E.SampleSchemaError:
        return self.make(path, line, *self.values)


def read_messages(o: dict, obj: dict) -> tuple[list[dict], dict, list]:
    """(messages as the template gets them, extras, per-message train flag or None) of one record,
    by the chat options `o`. Raises _Failure."""
    key = o["messages"]
    if key not in obj:
        raise _Failure(E.SampleSchemaError.chat_no_messages, key, list(obj))
    raw = obj[key]
    if not isinstance(raw, list):
        raise _Failure(E.SampleSchemaError.chat_not_list, key, _json_type(raw))
    if not raw:
        raise _Failure(E.SampleSchemaError.chat_empty, key)
    out, flags = [], []
    system = o.get("system")
    if system is not None and obj.get(system) is not None:
        prompt = obj[system]
        if not isinstance(prompt, str):
            raise _Failure(E.SampleSchemaError.chat_system_not_string, system, _json_type(prompt))
        out.append({"role": "system", "content": prompt})
        flags.append(None)
    for at, m in enumerate(raw):
        message, flag = _read_message(o, m, at)
        out.append(message)
        flags.append(flag)
    if system is not None and obj.get(system) is not None and len(out) > 1 and out[1]["role"] == "system":
        raise _Failure(E.SampleSchemaError.chat_two_systems, 0, system)
    return out, _extras(o, obj), flags


def _json_type(value) -> str:
    return _JSON_TYPES.get(type(value), "unknown")


def _read_message(o: dict, m, at: int) -> tuple[dict, bool | None]:
    """One message of the record's list (at: its index there) and its train flag."""
    role_key, content_key, train_key, roles = o["role"], o["content"], o.get("train"), o.get("roles")
    if not isinstance(m, dict):
        raise _Failure(E.SampleSchemaError.chat_message_not_object, at, _json_type(m))
    role = m.get(role_key)
    if role is None:
        raise _Failure(E.SampleSchemaError.chat_no_role, at, role_key)
    if not isinstance(role, str):
        raise _Failure(E.SampleSchemaError.chat_role_not_string, at, role_key, _json_type(role))
    if roles is not None:
        if role not in roles:
            raise _Failure(E.SampleSchemaError.chat_unknown_role, at, role, list(roles))
        role = roles[role]
    calls = _tool_calls(m["tool_calls"], at) if m.get("tool_calls") is not None else None
    content = m.get(content_key)
    if isinstance(content, list):
        content = _text_parts(content, at, content_key)
    elif content is None and calls:
        content = (
            ""  # an assistant tool call without text (OpenAI: content null; Qwen3 cannot read it missing)
        )
    elif not isinstance(content, str):
        found = "missing" if content_key not in m else _json_type(content)
        raise _Failure(E.SampleSchemaError.chat_content, at, content_key, found)
    flag = None
    if train_key is not None and train_key in m:
        flag = m[train_key]
        if not isinstance(flag, bool):
            raise _Failure(E.SampleSchemaError.chat_train_flag, at, train_key, _json_type(flag))
    message = {"role": role, "content": content}
    for k, v in m.items():
        if k not in (role_key, content_key, train_key) and k not in message:
            message[k] = v
    if calls is not None:
        message["tool_calls"] = calls
    return message, flag


def _tool_calls(calls, at: int) -> list[dict]:
    """A message's tool calls as transformers documents them: {"type": "function", "function": {"name",
    "arguments"}} with the arguments an object (a JSON string holding one is parsed: Llama-3.1 writes
    `arguments | tojson`, which would quote a string); the flat {name, arguments} is nested."""
    if not isinstance(calls, list):
        raise _Failure(E.SampleSchemaError.chat_tool_calls_not_list, at, _json_type(calls))
    out = []
    for call in calls:
        if not isinstance(call, dict) or not isinstance(call.get("function", call), dict):
            raise _Failure(
                E.SampleSchemaError.chat_tool_call,
                at,
                _json_type(call.get("function", call) if isinstance(call, dict) else call),
            )
        if "function" in call:
            function, rest = call["function"], {k: v for k, v in call.items() if k != "function"}
        else:  # flat: {name, arguments, id?}
            function = {k: call[k] for k in ("name", "arguments") if k in call}
            rest = {"type": "function", **{k: v for k, v in call.items() if k not in ("name", "arguments")}}
        name = function.get("name")
        if not isinstance(name, str) or not name:
            raise _Failure(E.SampleSchemaError.chat_tool_call_name, at)
        args = function.get("arguments")
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                found = E.SampleSchemaError.texts("found_not_json")
                raise _Failure(E.SampleSchemaError.chat_tool_call_arguments, at, name, found) from None
            found = E.SampleSchemaError.texts("found_string", type=_json_type(args))
        elif "arguments" not in function:
            found = "missing"
        else:
            found = E.SampleSchemaError.texts("found_type", type=_json_type(args))
        if not isinstance(args, dict):
            raise _Failure(E.SampleSchemaError.chat_tool_call_arguments, at, name, found)
        out.append({**rest, "function": {**function, "arguments": args}})
    return out


def _extras(o: dict, obj: dict) -> dict:
    """The record's template variables: its extras keys, over its own chat_template_kwargs."""
    extras = {}
    kwargs = obj.get(RECORD_KWARGS)
    if kwargs is not None:
        if not isinstance(kwargs, dict):
            raise _Failure(E.SampleSchemaError.chat_kwargs_not_object, RECORD_KWARGS, _json_type(kwargs))
        reserved = [k for k in RESERVED_KWARGS if k in kwargs]
        if reserved:
            raise _Failure(E.SampleSchemaError.chat_kwargs_reserved, RECORD_KWARGS, reserved)
        extras.update(kwargs)
    for k in o.get("extras") or ():
        if k in obj and obj[k] is not None:
            extras[k] = obj[k]
    for k in NAMED_EXTRAS:
        value = extras.get(k)
        if value is not None and (not isinstance(value, list) or not all(isinstance(t, dict) for t in value)):
            raise _Failure(E.SampleSchemaError.chat_extra_not_objects, k)
    return extras


def _text_parts(parts: list, at: int, key: str) -> str:
    if not parts:
        raise _Failure(E.SampleSchemaError.chat_no_parts, at, key)
    texts = []
    for part in parts:
        if not (isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str)):
            kind = part.get("type") if isinstance(part, dict) else _json_type(part)
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

    def __init__(
        self,
        template_text: str,
        special_tokens: dict,
        options: dict,
        train_roles: list | None = None,
        added_special: list[str] = (),
        tool_template_text: str | None = None,
    ):
        self.template_text, self.tool_template_text = template_text, tool_template_text
        self.template = compile_template(template_text)
        # records that pass tools use a directory's "tool_use" template, as transformers does
        self.tool_template = (
            compile_template(tool_template_text)
            if tool_template_text not in (None, template_text)
            else self.template
        )
        for template in {self.template, self.tool_template}:
            S.watch_json(template.environment)
        self.special_tokens = dict(special_tokens)
        self.opts = options
        self.train_roles = frozenset(train_roles) if train_roles is not None else None
        self.tagged = bool(GENERATION_TAG.search(template_text))
        self.tool_tagged = (
            bool(GENERATION_TAG.search(tool_template_text)) if tool_template_text else self.tagged
        )
        self.ends = end_markers(special_tokens, list(added_special))
        self.drop_roles = frozenset(options.get("drop_roles") or ())
        self.train_reasoning = options.get("reasoning", "train") == "train"
        self.config_kwargs = dict(options.get("chat_template_kwargs") or {})

    # -- records -> messages
    def messages(self, obj: dict) -> tuple[list[dict], dict, list]:
        return read_messages(self.opts, obj)

    def trained_messages(self, messages: list[dict], flags: list) -> list[int]:
        return choose(self.opts, self.train_roles or frozenset(), messages, flags)

    # -- rendering
    def _kwargs(self, extras: dict) -> dict:
        """Template variables as transformers passes them: the special tokens, overridden by the
        kwargs (the config's chat_template_kwargs, the record's, its extras)."""
        return {
            **self.special_tokens,
            **self.config_kwargs,
            **{k: v for k, v in extras.items() if k not in NAMED_EXTRAS},
        }

    def _run(self, how: str, prepared: list[dict], extras: dict):
        """The template's render (the text) or generate (its pieces) of prepared messages."""
        template = self.tool_template if extras.get("tools") is not None else self.template
        return getattr(template, how)(
            messages=prepared,
            tools=extras.get("tools"),
            documents=extras.get("documents"),
            add_generation_prompt=False,
            **self._kwargs(extras),
        )

    def render_messages(self, messages: list[dict], extras: dict) -> str:
        return self._run("render", prepare_messages(messages), extras)

    def _render_tracked(self, messages: list[dict], extras: dict) -> tuple[str, list]:
        blocks, indices = [], []
        template = self.tool_template if extras.get("tools") is not None else self.template
        with template.environment.activate_tracker(blocks, indices):
            for block in self._run("generate", prepare_messages(messages), extras):
                blocks.append(block)
            text = "".join(blocks)
        return text, indices

    def _render_traced(self, messages: list[dict], extras: dict, items: list) -> tuple[str, dict | None]:
        """The rendering and, when every item is a whole content, where each lands: {item index: (start,
        end)} (None when one does not land exactly once, or an item is another kind). The contents go
        in as Traced strings (chat_spans), which render as themselves: the text is the same."""
        prepared = prepare_messages(messages)
        if not items or any(kind != "content" for _, kind in items):
            return self._run("render", prepared, extras), None
        trace = S.Trace([f"\U000f0000{k}\U000f0001" for k in range(len(items))])  # _locate_all's marks
        for k, (i, _) in enumerate(items):
            content = prepared[i]["content"]
            prepared[i]["content"] = S.traced(content, ((k, 0, len(content)),), trace)
        chunks = list(self._run("generate", prepared, extras))
        text = "".join(chunks)
        return text, (S.landed(chunks, trace) if "\U000f0000" not in text else None)

    def _read(self, obj: dict, path: str, line: int) -> tuple[list[dict], dict, list]:
        try:
            return self.messages(obj)
        except _Failure as bad:
            raise bad.error(path, line) from None

    def render(self, obj: dict, path: str, line: int) -> str:
        messages, extras, _ = self._read(obj, path, line)
        text = self._safe(lambda: self.render_messages(messages, extras), path, line)
        self._check(text, messages, extras, obj, path, line)
        return text

    @staticmethod
    def _safe(fn, path, line):
        try:
            return fn()
        except Exception as exc:  # the template's own words (raise_exception, a bad attribute, ...)
            text = str(exc).strip() or type(exc).__name__
            raise E.ChatTemplateError.raised(path, line, text) from None

    def _check(self, text: str, messages: list[dict], extras: dict, obj: dict, path: str, line: int) -> None:
        """Nothing vanished: every message (but the drop_roles') is in the rendering, in order."""
        lost = S.missing(text, messages, self.drop_roles)
        if lost is None:
            return
        i, call = lost
        tools = extras.get("tools") is not None and self.tool_template is not self.template
        template, source = (
            (self.tool_template, self.tool_template_text) if tools else (self.template, self.template_text)
        )
        index = self._source_index(obj, i)  # -1: the record's system prompt key (source.chat.system)
        where = (
            index if index >= 0 else E.ChatTemplateError.texts("dropped_system", name=self.opts.get("system"))
        )
        raise E.ChatTemplateError.dropped(
            path, line, where, messages[i]["role"], call, template_roles(template, source)
        )

    def render_with_spans(
        self, obj: dict, path: str, line: int
    ) -> tuple[str, list[tuple[int, int, int, str]]]:
        """The rendered text and its trained spans: (start, end, rule, role); rule 0: a token is
        trained when it starts inside, 1: when it overlaps (a {% generation %} span)."""
        messages, extras, flags = self._read(obj, path, line)
        chosen = self.trained_messages(messages, flags)
        landed = None  # each whole content's span, seen while rendering
        if self.tool_tagged if extras.get("tools") is not None else self.tagged:
            text, blocks = self._safe(lambda: self._render_tracked(messages, extras), path, line)
            items = self._items(messages, [i for i in chosen if messages[i]["role"] != "assistant"])
        else:
            items = self._items(messages, chosen)
            text, landed = self._safe(lambda: self._render_traced(messages, extras, items), path, line)
            blocks = None
        self._check(text, messages, extras, obj, path, line)
        spans = []
        assistants = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
        found = self._locate(text, messages, extras, items, landed)
        for i in chosen:
            role = messages[i]["role"]
            if blocks is not None and role == "assistant":
                if len(blocks) != len(assistants):
                    raise E.ChatTemplateError.unlocated(path, line, self._source_index(obj, i), role)
                a, b = blocks[assistants.index(i)]
                spans.append((a, b, 1, role))
                continue
            if found.get(i) is None:
                raise E.ChatTemplateError.unlocated(path, line, self._source_index(obj, i), role)
            for a, b in found[i]:
                spans.append((a, b, 0, role))
            end = self._end_marker(text, found[i][-1][1])
            if end is not None:
                spans.append((end[0], end[1], 0, role))
        return text, spans

    def _source_index(self, obj: dict, i: int) -> int:
        """The message's index in the record's own list (a system prompt key adds one in front)."""
        system = self.opts.get("system")
        return i - 1 if system is not None and obj.get(system) is not None else i

    # -- where the trained messages are
    def _items(self, messages: list[dict], chosen: list[int]) -> list[tuple[int, str]]:
        """What to locate of each trained message, in rendering order: its reasoning (when trained and
        not empty), then its tool-call turn, its answer after a <think> block, or its content."""
        items = []
        for i in chosen:
            m = messages[i]
            where, reasoning = S.reasoning_of(m)
            if self.train_reasoning and where and isinstance(reasoning, str) and reasoning.strip():
                items.append((i, "reasoning"))
            kind = "turn" if m.get("tool_calls") else "answer" if where == "content" else "content"
            items.append((i, kind))
        return items

    def _valid(self, messages: list[dict], item: tuple[int, str], region: str) -> tuple[bool, bool]:
        """(the region can be this item's, a longer region can be)."""
        i, kind = item
        m = messages[i]
        if kind == "turn":
            return S.turn_valid(region, m, self.ends)
        source = (
            S.reasoning_of(m)[1]
            if kind == "reasoning"
            else S.answer_of(m)
            if kind == "answer"
            else m["content"]
        )
        ok = isinstance(source, str) and S.within(region, source)
        return ok, ok

    def _locate(self, text: str, messages: list[dict], extras: dict, items: list, landed: dict | None):
        """Each located message's spans [(start, end), ...] (None: not located exactly); items: what to
        locate of them (_items). landed: each item's span seen while rendering (_render_traced), as
        the rendering with sentinels would read it. Else that rendering, with every item replaced by
        its own sentinel, reads them all when the rendering is the same literal pieces around them
        (read_pieces); else one rendering per item."""
        if not items:
            return {}
        at = landed if landed is not None else self._locate_all(text, messages, extras, items)
        if at is None:
            at = {k: self._locate_one(text, messages, extras, item) for k, item in enumerate(items)}
        spans: dict = {}
        for k, (i, kind) in enumerate(items):
            if kind == "reasoning":
                continue
            main = at[k]
            reasoning = at[k - 1] if k and items[k - 1] == (i, "reasoning") else S.ABSENT
            if main is None or main is S.ABSENT or reasoning is None:
                spans[i] = None
            elif reasoning is S.ABSENT or reasoning[1] > main[0]:
                spans[i] = [main] if reasoning is S.ABSENT else [reasoning, main]
            else:  # the block, its opening tag included, through the answer
                floor = max((s[-1][1] for s in spans.values() if s), default=0)
                spans[i] = [(S.opening_tag_start(text, reasoning[0], floor), main[1])]
        return spans

    def _locate_all(self, text: str, messages: list[dict], extras: dict, items: list) -> dict | None:
        marks = [f"\U000f0000{k}\U000f0001" for k in range(len(items))]
        if "\U000f0000" in text:
            return None
        changed, by_message = list(messages), {}
        for k, (i, kind) in enumerate(items):
            by_message.setdefault(i, {})[kind] = marks[k]
        for i, marks_of in by_message.items():
            changed[i] = S.marked(messages[i], marks_of)
        try:
            other = self.render_messages(changed, extras)
        except Exception:
            return None
        optional = [kind == "reasoning" for _, kind in items]
        return S.read_pieces(
            text, other, marks, optional, lambda k, region: self._valid(messages, items[k], region)
        )

    def _locate_one(self, text: str, messages: list[dict], extras: dict, item: tuple[int, str]):
        """One item's span from a rendering with only that part replaced by a sentinel: the text
        between the common prefix and suffix of the two renderings."""
        sentinel = next((s for s in SENTINELS if s not in text), None)
        if sentinel is None:
            return None
        i, kind = item
        changed = list(messages)
        changed[i] = S.marked(messages[i], {kind: sentinel})
        try:
            other = self.render_messages(changed, extras)
        except Exception:
            return None
        if sentinel not in other:
            return S.ABSENT if kind == "reasoning" else None
        span = S.diff_region(text, other, sentinel)
        if span is None or not self._valid(messages, item, text[span[0] : span[1]])[0]:
            return None
        return span

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

    def render_with_spans(self, obj: dict, trained=None, ends=()):
        return self.r.render_with_spans(obj, self.path, 0)

    def render_at(self, obj: dict, line: int, spans: bool):
        return (self.r.render_with_spans if spans else self.r.render)(obj, self.path, line)


ChatRenderer.as_template = lambda self, path: _AsTemplate(self, path)


def renderer_for(entry, tok) -> ChatRenderer:
    """The renderer of one file entry (source.chat) with its loaded hf_dir tokenizer."""
    template = tok.chat_template
    if template is None:
        raise E.ChatTemplateError.missing(entry.tokenizer.path)
    added = tok.added_special()  # without loading the library when the job encodes with the fast engine
    return ChatRenderer(
        template, tok.special_tokens, entry.chat, entry.masks.train_on, added, tok.tool_chat_template
    )


def check_template(template_text: str, where: str) -> None:
    """Pre-flight: the template compiles."""
    try:
        compile_template(template_text)
    except Exception as exc:
        raise E.ChatTemplateError.invalid(
            where, str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        ) from None

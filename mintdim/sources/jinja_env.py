"""The Jinja environment transformers 5.24.0 renders chat templates in, and what a template names.

Copied from transformers/utils/chat_template_utils.py `_cached_compile_jinja_template`: an
ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks, the {% generation %} tracker
extension and loopcontrols; the globals raise_exception, strftime_now, the restricted dict and
namespace, and tojson without HTML escaping.
"""

from __future__ import annotations

import json
from datetime import datetime


def compile_template(text: str):
    """The template compiled as transformers 5.24.0 `_cached_compile_jinja_template` does."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    env = ImmutableSandboxedEnvironment(
        trim_blocks=True, lstrip_blocks=True, extensions=[_assistant_tracker(), jinja2.ext.loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    env.globals["dict"] = _template_dict()
    env.globals["namespace"] = _template_namespace()
    return env.from_string(text)


def _assistant_tracker():
    """transformers' AssistantTracker: {% generation %} blocks record their (start, end) in the text."""
    from contextlib import contextmanager
    from contextvars import ContextVar

    import jinja2
    from jinja2.ext import Extension

    class AssistantTracker(Extension):
        tags = {"generation"}

        def __init__(self, environment):
            super().__init__(environment)
            environment.extend(activate_tracker=self.activate_tracker)
            self._tracking = ContextVar("assistant_tracker", default=None)

        def parse(self, parser):
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(["name:endgeneration"], drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_generation_support"), [], [], body).set_lineno(
                lineno
            )

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

    return AssistantTracker


def _raise_exception(message):
    import jinja2

    raise jinja2.exceptions.TemplateError(message)


def _tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


def _strftime_now(format):
    return datetime.now().strftime(format)


def _template_dict():
    class TemplateDict:
        def __call__(self, *args, **kwargs):
            return dict(*args, **kwargs)

        def fromkeys(self, *args, **kwargs):
            return dict.fromkeys(*args, **kwargs)

    return TemplateDict()


def _template_namespace():
    import jinja2

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
                    "Chat templates cannot store underscore-prefixed attributes on a namespace, but got "
                    f"{name!r}. Please rename the attribute."
                )

    return TemplateNamespace


def template_roles(template, text: str) -> tuple[str, ...]:
    """The roles the compiled `template` (of source `text`) compares a message's role with
    (`message.role == "user"`, `m['role'] in ['tool', 'ipython']`), sorted: what an error says the
    template names. Empty when it names none (a template that writes every role the same way)."""
    from jinja2 import nodes

    found = set()
    for node in template.environment.parse(text).find_all(nodes.Compare):
        sides = [node.expr] + [op.expr for op in node.ops]
        if not any(_is_role(side) for side in sides):
            continue
        for side in sides:
            values = side.items if isinstance(side, (nodes.List, nodes.Tuple)) else [side]
            found.update(v.value for v in values if isinstance(v, nodes.Const) and isinstance(v.value, str))
    return tuple(sorted(found))


def _is_role(node) -> bool:
    from jinja2 import nodes

    if isinstance(node, nodes.Getattr):
        return node.attr == "role"
    return isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const) and node.arg.value == "role"

"""A Jinja sandbox whose renders end: bounded in time, output and value sizes.

Jinja's ``ImmutableSandboxedEnvironment`` stops a template from reaching
Python internals, but not from running for ever (two nested ``range(100000)``
loops are 10^10 iterations) or from building a string that exhausts memory
(``'A' * 3000000000``). A chat template comes from a downloaded file and runs on
the engine's only thread, so :class:`BoundedTemplate` adds:

* value caps, checked *before* Python allocates: ``*`` on strings and lists,
  ``+`` and ``~`` concatenation, ``**`` on integers, ``%`` and ``str.format``
  widths, the padding filters and string methods (``center``, ``ljust``, ...);
* an output cap, counted piece by piece as the template yields text;
* a CPU-time budget for the render, read from the rendering thread's CPU
  clock (so a busy machine never fails a normal render) at Jinja's own hooks:
  every ``{% for %}`` iterates through :meth:`BoundedEnvironment.bounded_iter`
  (the parsed template is rewritten so), and every call (macros, recursive
  loops, methods, filters through ``call``) and intercepted operator ticks the
  budget. A template can only run long by looping or calling, so a runaway
  one ends within the budget plus one C-level operation, whose size the caps
  above bound.

Why hooks rather than ``sys.settrace``: both were built and measured here
(a 40-message ChatML conversation, 1 pinned core): untraced 0.48 ms, with a
settrace budget 2.6 ms (1,324 trace events), with these hooks see
:mod:`specula.tools.reliability_report`'s "template cost" line. The tracer
also displaces a debugger's or coverage's tracer for the render.

Every failure is a :class:`TemplateError` (limits: :class:`TemplateLimitError`)
whose message a user can read; the caller never sees a Jinja, Python or
memory error.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any, ClassVar

import jinja2
import jinja2.ext
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.parser import Parser
from jinja2.runtime import Context
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError
from jinja2.utils import Namespace

MAX_RENDER_SECONDS = 1.0  # CPU time of one render
MAX_OUTPUT_CHARS = 8_000_000  # a 128k-token prompt is about 0.5 M characters
MAX_VALUE_CHARS = MAX_OUTPUT_CHARS  # any one string or list a template builds
MAX_POW_BITS = 4096  # ``a ** b`` results larger than this are refused
_CHECK_EVERY = 64
_BIG_WIDTH = re.compile(r"\d{8,}")  # a width or precision of 10^7 characters or more
_NESTED_SPEC = re.compile(r"\{[^{}]*:[^{}]*\{")  # '{:>{w}}': a width passed as an argument
_PADDING_METHODS = frozenset({"center", "ljust", "rjust", "zfill", "expandtabs"})
_PADDING_FILTERS = ("center", "indent", "truncate", "wordwrap")


class TemplateError(Exception):
    """The chat template cannot be compiled or rendered; the message says why."""


class TemplateLimitError(TemplateError):
    """The template went past a time, size or output limit."""


def _too_big(what: str, n: int | float, cap: int) -> TemplateLimitError:
    return TemplateLimitError(
        f"chat template: {what} would hold {n:,.0f} items, more than the limit of {cap:,}")


def _check_size(value: object, what: str) -> object:
    if isinstance(value, (str, list, tuple)) and len(value) > MAX_VALUE_CHARS:
        raise _too_big(what, len(value), MAX_VALUE_CHARS)
    return value


def _has_big_int(values: tuple[Any, ...] | list[Any]) -> bool:
    return any(isinstance(v, int) and v > MAX_VALUE_CHARS for v in values)


def _length(value: object) -> int:
    return len(value) if isinstance(value, (str, list, tuple)) else 0


class _BoundedNamespace(Namespace):  # type: ignore[misc]  # jinja2 is untyped here
    """``namespace()`` whose attributes cannot hold oversized values (loops that grow
    a string through ``{% set ns.s = ns.s ~ ns.s %}`` stop at the cap)."""

    def __setitem__(self, name: str, value: Any) -> None:
        _check_size(value, f"namespace attribute {name!r}")
        super().__setitem__(name, value)


class _BoundedCodeGenerator(CodeGenerator):  # type: ignore[misc]  # jinja2 is untyped here
    """Compiles ``a ~ b`` through :meth:`BoundedEnvironment.bounded_concat`, the one
    operator that Jinja's ``intercepted_binops`` cannot route."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.bounded_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")


class _IgnoreGenerationTags(jinja2.ext.Extension):  # type: ignore[misc]  # jinja2 is untyped here
    """Pass-through for Hugging Face's ``{% generation %}`` chat-template tag."""

    tags: ClassVar[set[str]] = {"generation"}

    def parse(self, parser: Parser) -> Any:
        parser.stream.skip(1)
        return parser.parse_statements(("name:endgeneration",), drop_needle=True)


def _tojson(x: Any, ensure_ascii: bool = False, indent: int | None = None,
            separators: tuple[str, str] | None = None, sort_keys: bool = False) -> str:
    """Transformers' ``tojson``: no HTML escaping, unicode kept."""
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators,
                      sort_keys=sort_keys)


def _raise_exception(message: str) -> None:
    raise TemplateError(f"chat template refused the conversation: {message}")


def _strftime_now(fmt: str) -> str:
    return datetime.now().strftime(fmt)


class BoundedEnvironment(ImmutableSandboxedEnvironment):  # type: ignore[misc]  # jinja2 is untyped here
    """The immutable sandbox with size caps on every operation that can allocate a lot."""

    code_generator_class = _BoundedCodeGenerator
    intercepted_binops = frozenset({"*", "+", "**", "%"})

    def __init__(self) -> None:
        super().__init__(loader=jinja2.BaseLoader(), trim_blocks=True, lstrip_blocks=True,
                         extensions=[_IgnoreGenerationTags, jinja2.ext.loopcontrols])
        self.filters["tojson"] = _tojson
        self.globals["namespace"] = _BoundedNamespace
        for name in _PADDING_FILTERS:
            self.filters[name] = self._capped_filter(self.filters[name])
        self._local = threading.local()  # the budget of the render running on each thread

    def _tick(self) -> None:
        deadline: _Deadline | None = getattr(self._local, "deadline", None)
        if deadline is not None:
            deadline.tick()

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        """The template's AST with every loop's iterable wrapped in :meth:`bounded_iter`."""
        tree = super()._parse(source, name, filename)
        for loop in tree.find_all(nodes.For):
            loop.iter = nodes.Call(nodes.EnvironmentAttribute("bounded_iter"), [loop.iter],
                                   [], None, None, lineno=loop.lineno)
        return tree

    def bounded_iter(self, iterable: Iterable[Any]) -> Iterator[Any]:
        """A loop's items, ticking the render's budget on each."""
        tick = self._tick
        for item in iterable:
            tick()
            yield item

    def start_budget(self, seconds: float) -> None:
        self._local.deadline = _Deadline(seconds)

    def end_budget(self) -> None:
        self._local.deadline = None

    @staticmethod
    def _capped_filter(func: Callable[..., Any]) -> Callable[..., Any]:
        def capped(*args: Any, **kwargs: Any) -> Any:
            for v in (*args[1:], *kwargs.values()):
                if isinstance(v, int) and v > MAX_VALUE_CHARS:
                    raise _too_big(f"the {func.__name__} filter", v, MAX_VALUE_CHARS)
            return func(*args, **kwargs)

        capped.__name__ = func.__name__
        return capped

    def bounded_concat(self, parts: tuple[Any, ...]) -> str:
        total = sum(len(p) if isinstance(p, str) else 0 for p in parts)
        if total > MAX_VALUE_CHARS:
            raise _too_big("a ~ concatenation", total, MAX_VALUE_CHARS)
        return "".join(map(str, parts))

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        # No budget tick here: operators alone are bounded by the template's length;
        # only loops and calls can make a render long.
        if operator == "+":
            if type(left) is str and type(right) is str:  # the common case, kept fast
                if len(left) + len(right) > MAX_VALUE_CHARS:
                    raise _too_big("a concatenation", len(left) + len(right), MAX_VALUE_CHARS)
                return left + right
            if _length(left) + _length(right) > MAX_VALUE_CHARS:
                raise _too_big("a concatenation", _length(left) + _length(right), MAX_VALUE_CHARS)
        elif operator == "*":
            for seq, n in ((left, right), (right, left)):
                if isinstance(n, int) and _length(seq) and _length(seq) * n > MAX_VALUE_CHARS:
                    raise _too_big("a repetition", _length(seq) * n, MAX_VALUE_CHARS)
        elif operator == "**":
            if (isinstance(left, int) and isinstance(right, int) and abs(left) > 1 and right > 0
                    and right * abs(left).bit_length() > MAX_POW_BITS):
                raise TemplateLimitError(
                    f"chat template: {left} ** {right} is larger than {MAX_POW_BITS} bits")
        elif operator == "%" and isinstance(left, str):
            star_args = right if isinstance(right, tuple) else (right,)
            if _BIG_WIDTH.search(left) or ("*" in left and _has_big_int(star_args)):
                raise TemplateLimitError("chat template: a % format asks for a huge width")
        return super().call_binop(context, operator, left, right)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """``str.format`` as the sandbox wraps it, refusing huge (or nested, huge) widths."""
        owner = getattr(value, "__self__", None)
        wrapped: Callable[..., str] | None = super().wrap_str_format(value)
        if wrapped is None or not isinstance(owner, str):
            return wrapped
        if _BIG_WIDTH.search(owner):
            raise TemplateLimitError("chat template: a format asks for a huge width")
        nested = _NESTED_SPEC.search(owner) is not None
        inner = wrapped

        def checked(*args: Any, **kwargs: Any) -> str:
            if nested and _has_big_int((*args, *kwargs.values())):
                raise TemplateLimitError("chat template: a format asks for a huge width")
            return str(inner(*args, **kwargs))

        return checked

    def call(self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        self._tick()
        owner = getattr(__obj, "__self__", None)
        name = getattr(__obj, "__name__", "")
        if isinstance(owner, str) and name in _PADDING_METHODS:
            for v in (*args, *kwargs.values()):
                if isinstance(v, int) and v > MAX_VALUE_CHARS:
                    raise _too_big(f"str.{name}", v, MAX_VALUE_CHARS)
        return _check_size(super().call(__context, __obj, *args, **kwargs), f"{name or 'a call'}()")


class _Deadline:
    """A CPU-time budget, read every :data:`_CHECK_EVERY` ticks (one thread_time call
    costs about as much as a small loop iteration)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.limit = time.thread_time() + seconds
        self.ticks = 0

    def tick(self) -> None:
        self.ticks += 1
        if self.ticks % _CHECK_EVERY == 0 and time.thread_time() > self.limit:
            raise TemplateLimitError(
                f"chat template: rendering took more than {self.seconds:g} s of CPU time "
                "(a runaway loop?)")


class BoundedTemplate:
    """A compiled chat template; :meth:`render` is bounded in time, values and output."""

    def __init__(self, source: str, *, max_seconds: float = MAX_RENDER_SECONDS,
                 max_chars: int = MAX_OUTPUT_CHARS) -> None:
        self.max_seconds = max_seconds
        self.max_chars = max_chars
        self._env = BoundedEnvironment()
        try:
            self._template = self._env.from_string(source)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateError(
                f"the model's chat template does not compile: {exc.message} (line {exc.lineno})"
            ) from None
        except (jinja2.TemplateError, RecursionError, MemoryError, ValueError, TypeError) as exc:
            raise TemplateError(f"the model's chat template does not compile: {exc}") from None

    def render(self, **context: Any) -> str:
        """Render with ``context`` plus the helpers Hugging Face templates expect."""
        context.setdefault("raise_exception", _raise_exception)
        context.setdefault("strftime_now", _strftime_now)
        parts: list[str] = []
        size = 0
        self._env.start_budget(self.max_seconds)
        tick = self._env._tick
        try:
            for piece in self._template.generate(**context):
                tick()
                size += len(piece)
                if size > self.max_chars:
                    raise TemplateLimitError(
                        f"chat template: the prompt would be longer than {self.max_chars:,} characters")
                parts.append(piece)
        except TemplateError:
            raise
        except SecurityError as exc:
            raise TemplateError(f"chat template tried something the sandbox forbids: {exc}") from None
        except jinja2.UndefinedError as exc:
            raise TemplateError(f"chat template uses something undefined: {exc}") from None
        except MemoryError:
            raise TemplateLimitError("chat template: rendering ran out of memory") from None
        except RecursionError:
            raise TemplateLimitError("chat template: recursion too deep") from None
        except OverflowError as exc:  # the sandbox's own range() cap says so
            raise TemplateLimitError(f"chat template: {exc}") from None
        except Exception as exc:  # a template is code: any error is its own, with its message
            raise TemplateError(f"chat template failed: {type(exc).__name__}: {exc}") from None
        finally:
            self._env.end_budget()
        return "".join(parts)

"""Chat templates are untrusted code: every render ends, within bounds, with a clear error.

Each hostile template here hung the engine's thread or ran out of memory
before rendering was bounded (issue: nested ``range(100000)`` loops, ``'A' * 3e9``).
The expected prompts of normal templates come from llama-cpp-python's own
``Jinja2ChatFormatter``, an independent renderer.
"""

from __future__ import annotations

import time

import pytest
from llama_cpp.llama_chat_format import Jinja2ChatFormatter

from specula.core.chat.template import ChatTemplate, TemplateError, TemplateLimitError
from specula_tools.tiny_models import CHATML_TEMPLATE

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]

# Templates that must stop at a limit: (name, source).
RUNAWAY = [
    ("nested loops", "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}"),
    ("silent nested loops",
     "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"),
    ("exponential macro",
     "{% macro f(n) %}{% if n < 40 %}{{ f(n+1) }}{{ f(n+1) }}{% endif %}{% endmacro %}{{ f(0) }}"),
    ("string repetition", "{{ 'A' * 3000000000 }}"),
    ("list repetition", "{{ ([1] * 100000) * 100000 }}"),
    ("huge power", "{{ 2 ** 100000000 }}"),
    ("concatenation", "{% set a = 'x' * 1000000 %}{{ a ~ a ~ a ~ a ~ a ~ a ~ a ~ a ~ a }}"),
    ("namespace doubling",
     "{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}"),
    ("center filter", "{{ 'x' | center(3000000000) }}"),
    ("ljust method", "{{ 'x'.ljust(3000000000) }}"),
    ("percent width", "{{ '%0999999999d' % 1 }}"),
    ("percent star width", "{{ '%*d' % (999999999, 1) }}"),
    ("format width", "{{ '{:>999999999}'.format(1) }}"),
    ("nested format width", "{{ '{:>{w}}'.format(1, w=999999999) }}"),
    ("output size", "{% for i in range(100000) %}{{ 'y' * 1000 }}{% endfor %}"),
    ("infinite recursion", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}"),
]


@pytest.mark.parametrize(("name", "source"), RUNAWAY, ids=[n for n, _ in RUNAWAY])
def test_runaway_templates_end_with_a_limit_error(name: str, source: str) -> None:
    template = ChatTemplate(source, "", "", False, max_seconds=0.5)
    start = time.thread_time()
    with pytest.raises(TemplateLimitError, match="chat template"):
        template.render(MESSAGES)
    # CPU time of this thread: load on the machine cannot make it fail.
    assert time.thread_time() - start < 1.5


@pytest.mark.parametrize(("source", "says"), [
    ("{{ foo.bar }}", "undefined"),
    ("{{ raise_exception('System role not supported') }}", "System role not supported"),
    ("{{ ''.__class__.__mro__ }}", "sandbox forbids"),
    ("{{ messages.append(1) }}", "sandbox forbids"),
    ("{{ 1 / 0 }}", "ZeroDivisionError"),
    ("{{ 'A' * 3e9 }}", "TypeError"),
])
def test_render_errors_are_template_errors(source: str, says: str) -> None:
    with pytest.raises(TemplateError, match=says):
        ChatTemplate(source, "", "", False).render(MESSAGES)


def test_a_syntax_error_is_a_template_error_at_compile_time() -> None:
    with pytest.raises(TemplateError, match=r"does not compile.*line 1"):
        ChatTemplate("{% for %}", "", "", False)


def test_the_limit_is_per_render_not_per_template() -> None:
    """A budget spent by one render does not leak into the next one."""
    slow = "{% for i in range(20000) %}{% for j in range(messages|length) %}x{% endfor %}{% endfor %}"
    template = ChatTemplate(slow, "", "", False, max_seconds=5.0)
    assert len(template.render([{"role": "user", "content": "a"}] * 3)) == 60_000
    assert len(template.render([{"role": "user", "content": "a"}] * 3)) == 60_000


@pytest.mark.parametrize("template", [
    CHATML_TEMPLATE,
    # Qwen2.5's template shape: tools, namespace, loop.last, tojson, generation prompt.
    "{%- if messages[0]['role'] == 'system' %}{{- '<|im_start|>system\\n' + messages[0]['content'] "
    "+ '<|im_end|>\\n' }}{%- endif %}{%- set ns = namespace(n=0) %}"
    "{%- for message in messages %}{%- set ns.n = ns.n + 1 %}{%- if message.role != 'system' %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content | trim + '<|im_end|>' }}"
    "{%- if not loop.last %}{{ '\\n' }}{% endif %}{%- endif %}{%- endfor %}"
    "{{ '\\n' ~ (ns.n | string) ~ (messages | tojson) | length | string }}"
    "{%- if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{%- endif %}",
    "{{ bos_token }}{% for m in messages %}{{ '%-6s|' % m.role }}{{ '{:>4}'.format(m.content) }}"
    "{{ m.content | center(9) }}{% endfor %}{{ eos_token }}",
])
def test_normal_templates_render_like_llama_cpp(template: str) -> None:
    ours = ChatTemplate(template, "<s>", "</s>", False).render(MESSAGES)
    ref = Jinja2ChatFormatter(template=template, eos_token="</s>", bos_token="<s>")
    assert ours == ref(messages=list(MESSAGES)).prompt


def test_a_starved_render_ends_by_the_wall_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """The CPU clock stands still (a thread that barely gets the CPU): the wall-clock
    backstop, three times the budget, still ends the runaway."""
    monkeypatch.setattr("specula.core.chat.bounded_jinja.time.thread_time", lambda: 0.0)
    template = ChatTemplate(RUNAWAY[1][1], "", "", False, max_seconds=0.2)
    start = time.monotonic()
    with pytest.raises(TemplateLimitError, match="busy machine"):
        template.render(MESSAGES)
    assert time.monotonic() - start >= 0.6

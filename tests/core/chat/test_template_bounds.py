"""A template's cost is counted before it is paid (issue 46, items 11-14).

Time is tested through the render's step budget, which is deterministic: a
template that charges more steps than it is given fails on any machine, however
fast, so these tests give a tiny step budget and an hour of CPU time. Memory is
tested with tracemalloc's peak, also deterministic: a refused operation must be
refused before it allocates its result, so the peak stays far below what the
result would need. Expected renders come from plain Jinja (its own sandbox,
unmetered), an independent renderer.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jinja2
import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from specula.core.chat.bounded_jinja import (
    MAX_TEMPLATE_CHARS,
    MAX_TEMPLATE_TOKENS,
    BoundedTemplate,
    TemplateError,
    TemplateLimitError,
    TemplateRefusal,
)

QWEN = (Path(__file__).parents[2] / "fixtures" / "qwen25_chat_template.jinja").read_text()
HOUR = 3600.0  # CPU seconds: never the limit that fires here
MiB = 1 << 20


def _peak(fn: Callable[[], Any]) -> int:
    """Bytes allocated at the peak while ``fn`` runs (tracemalloc: deterministic)."""
    tracemalloc.start()
    try:
        fn()
    finally:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return peak


def _plain(source: str, **context: Any) -> str:
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    return env.from_string(source).render(**context)


# -- item 11: every filter that walks a value is charged for it ---------------------

# (name, template, steps it is given): each charges far more than it is given, in work
# done inside one filter or a chain of lazy filters, not in loop iterations or calls.
COSTLY = [
    ("lipsum", "{{ lipsum(n=2000) }}", 100_000),  # 2,000 paragraphs of up to 100 words
    ("map chain", "{% set xs = range(20000) | list %}{{ xs" + " | map('string')" * 40
     + " | join }}", 200_000),  # 40 lazy stages over 20,000 items: 800,000 pulls
    ("sort", "{% set xs = range(20000) | list %}{{ xs | sort | length }}",
     180_000),  # reading 20,000 items a few times fits; 20,000 log 20,000 comparisons do not
    ("select", "{{ range(50000) | select('odd') | select('odd') | select('odd') | list "
     "| length }}", 100_000),
    ("attribute map chain", "{{ range(50000) | map(attribute='real') | map(attribute='real') "
     "| map(attribute='real') | list | length }}", 150_000),  # items pulled through 3 stages
    ("wordwrap", "{{ ('ab cd ' * 20000) | wordwrap(10) | length }}", 100_000),  # textwrap's
    # word loop over 120,000 characters: far more than 120,000 / 64 steps of reading
    # 1,000 references to one 1 MB string: a short list whose items are long to read
    ("unique", "{{ (['x' * 1000000] * 1000) | unique | list | length }}", 100_000),
    ("select test", "{{ (['x' * 1000000] * 1000) | select('lower') | list | length }}", 100_000),
    ("pprint", "{{ ('ab c\\n' * 100000) | pprint | length }}", 1_000_000),  # laid out in Python
]


@pytest.mark.parametrize(("name", "source", "steps"), COSTLY, ids=[c[0] for c in COSTLY])
def test_filters_charge_the_step_budget(name: str, source: str, steps: int) -> None:
    template = BoundedTemplate(source, max_seconds=HOUR, max_steps=steps)
    with pytest.raises(TemplateLimitError, match=f"more than {steps:,} steps"):
        template.render(messages=[])


def test_the_same_filters_render_within_a_budget_that_covers_them() -> None:
    """The charges are what the work costs, not a refusal of the filters: given the
    default budget, a map chain renders what plain Jinja renders."""
    source = "{% set xs = range(5000) | list %}{{ xs" + " | map('string')" * 10 + " | join }}"
    template = BoundedTemplate(source, max_seconds=HOUR)
    assert template.render(messages=[]) == _plain(source)
    assert template.steps_spent >= 10 * 5_000  # every stage pulled every item


def test_a_real_template_spends_few_steps() -> None:
    """Qwen2.5's template over 41 messages and a tool: a few thousand steps, thousands
    of times below the budget."""
    messages = [{"role": "system", "content": "be brief"}] + [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i} " * 20}
        for i in range(40)]
    tools = [{"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}]
    template = BoundedTemplate(QWEN)
    text = template.render(messages=messages, tools=tools, add_generation_prompt=True)
    assert text.endswith("<|im_start|>assistant\n")
    assert template.steps_spent < 5_000


# -- item 12: sizes predicted before the allocation -------------------------------

S1M = "{% set s = 'x' * 1000000 %}"  # 1 MB: every result below would be 100 MB or more
OVERSIZED = [
    ("join", S1M + "{{ ([s] * 100) | join }}"),
    ("str.join", S1M + "{{ ''.join([s] * 100) }}"),
    ("format filter width", "{{ '%30000000s' | format(1) }}"),
    ("percent spelling out", S1M + "{{ ('%s' * 100) % ((s,) * 100) }}"),
    ("str.format spelling out", S1M + "{{ ('{0}' * 100).format(s) }}"),
    ("str.format by index", S1M + "{{ ('{0[0]}' * 100).format([s]) }}"),
    ("str.format_map", S1M + "{{ ('{a}' * 100).format_map({'a': s}) }}"),
    ("replace filter", "{{ ('a' * 100000) | replace('a', 'b' * 1000) }}"),
    ("str.replace", "{{ ('a' * 100000).replace('a', 'b' * 1000) }}"),
    ("tojson indent", "{{ [[1, 2], [3, 4]] | tojson(indent=30000000) }}"),
    ("tojson indent of a number", "{{ 1 | tojson(indent=30000000) }}"),
    ("indent", "{{ ('a\\n' * 1000) | indent(100000) }}"),
    ("wordwrap string", "{{ ('ab ' * 10000) | wordwrap(2, wrapstring='x' * 10000) }}"),
    ("strftime_now", "{{ strftime_now('%c' * 1000000) }}"),
    ("printing a list", S1M + "{{ [s] * 100 }}"),
    ("string filter", S1M + "{{ ([s] * 100) | string }}"),
    ("~ of a list", S1M + "{{ ([s] * 100) ~ '' }}"),
    ("set block", S1M + "{% set r %}{% for i in range(100) %}{{ s }}{% endfor %}{% endset %}"
     "{{ r | length }}"),
    ("macro output", S1M + "{% macro m() %}{% for i in range(100) %}{{ s }}{% endfor %}"
     "{% endmacro %}{{ m() | length }}"),
    ("sum of lists", "{{ ([[1] * 100000] * 100) | sum(start=[]) | length }}"),
    ("batch fill", "{{ [1] | batch(10000000, 0) | list | length }}"),
    ("lipsum", "{{ lipsum(n=100000, min=90) | length }}"),
    ("upper", "{{ ('x' * 3000000) | upper | length }}"),
    ("upper of a list", S1M + "{{ ([s] * 100) | upper | length }}"),
]


@pytest.mark.parametrize(("name", "source"), OVERSIZED, ids=[c[0] for c in OVERSIZED])
def test_oversized_results_are_refused_before_they_are_built(name: str, source: str) -> None:
    template = BoundedTemplate(source)

    def render() -> None:
        with pytest.raises(TemplateLimitError, match=r"limit of 8,000,000|huge width"):
            template.render(messages=[])

    # The inputs are at most a few MB; any of the results would be 40 MB or more.
    assert _peak(render) < 16 * MiB


def test_what_a_render_builds_is_bounded_in_total() -> None:
    """Forty lists of a million items, each within the value cap, kept side by side:
    320 MB. The budget charges each list as it is built, so the render stops after a
    few of them."""
    source = ("{% set ns = namespace(kept=[]) %}{% for i in range(40) %}"
              "{% set ns.kept = ns.kept + [('y' * 1000000) | list] %}{% endfor %}"
              "{{ ns.kept | length }}")
    template = BoundedTemplate(source, max_seconds=HOUR, max_steps=2_500_000)

    def render() -> None:
        with pytest.raises(TemplateLimitError, match="steps"):
            template.render(messages=[])

    assert _peak(render) < 40 * MiB  # at most three lists of 8 MB


def test_integer_products_are_bounded_like_powers() -> None:
    with pytest.raises(TemplateLimitError, match="product larger than 4096 bits"):
        BoundedTemplate("{{ (2 ** 2000) * (2 ** 2000) * (2 ** 2000) }}").render(messages=[])
    assert BoundedTemplate("{{ (2 ** 2000) * (2 ** 2000) }}").render(messages=[]) == str(2 ** 4000)


def test_values_near_the_caps_still_render() -> None:
    """The predictions are lower bounds, not guesses: results within the cap are built."""
    source = ("{% set s = 'x' * 100000 %}{{ ([s] * 10) | join | length }} "
              "{{ ('a\\n' * 10) | indent(1000) | length }} {{ [s] | tojson(indent=2) | length }}")
    assert BoundedTemplate(source).render(messages=[]) == _plain(source)


# -- item 13: truncate and wordwrap work -------------------------------------------

def test_truncate_and_wordwrap_render_like_jinja() -> None:
    source = ("{% for m in messages %}{{ m.content | truncate(12) }}|"
              "{{ m.content | truncate(9, true, '~', 0) }}|{{ m.content | wordwrap(7) }}|"
              "{{ m.content | wordwrap(5, wrapstring='/') }}\n{% endfor %}")
    messages = [{"role": "user", "content": "the quick brown fox jumps over the lazy dog"},
                {"role": "assistant", "content": "short"}]
    ours = BoundedTemplate(source).render(messages=messages)
    assert ours == _plain(source, messages=messages)
    assert ours.startswith("the...|the quic~|the\nquick\n")  # both did their work


# -- item 14: a template's size is bounded before it is compiled ---------------------

def test_a_template_beyond_the_character_bound_is_refused_before_compiling() -> None:
    source = "x" * (MAX_TEMPLATE_CHARS + 1)
    with pytest.raises(TemplateLimitError, match=r"too large.*characters"):
        BoundedTemplate(source)


def test_a_template_beyond_the_token_bound_is_refused_while_lexing() -> None:
    """40 KB of ``{{a}}``: under the character bound, 24,000 tokens. Compiling it took
    about a second and over 100 MB; refused as the lexer passes the bound, it costs
    little memory."""
    source = "{{a}}" * (MAX_TEMPLATE_TOKENS // 3 + 1000)
    assert len(source) < MAX_TEMPLATE_CHARS

    def load() -> None:
        with pytest.raises(TemplateLimitError, match="Jinja tokens"):
            BoundedTemplate(source)

    assert _peak(load) < 8 * MiB


def test_the_largest_real_templates_are_far_inside_the_bounds() -> None:
    env = jinja2.Environment()
    tokens = sum(1 for _ in env.lex(QWEN))
    assert len(QWEN) * 8 < MAX_TEMPLATE_CHARS and tokens * 8 < MAX_TEMPLATE_TOKENS


# -- item 2 (core half): a template's raise_exception is a refusal -----------------

def test_raise_exception_is_a_refusal_that_quotes_the_template() -> None:
    source = ("{% for m in messages %}{% if (m.role == 'user') != (loop.index0 % 2 == 0) %}"
              "{{ raise_exception('Conversation roles must alternate user/assistant') }}"
              "{% endif %}{{ m.content }}{% endfor %}")
    with pytest.raises(TemplateRefusal) as caught:
        BoundedTemplate(source).render(messages=[{"role": "user", "content": "a"}] * 2)
    assert caught.value.reason == "Conversation roles must alternate user/assistant"
    assert isinstance(caught.value, TemplateError)

"""The official openai client against the running server: chat, completions, streams, stats."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from specula.server import LocalServer
from specula.server.streaming import STATS_HEADER

MODEL = "tiny-target"
HELLO = [{"role": "user", "content": "hello world"}]


def _check_stats(stats: dict[str, Any], tokens: int) -> None:
    assert stats["mode"] == "chain" and stats["draft"] == "tiny-draft"
    assert 0 < stats["accepted"] <= stats["drafted"]
    assert stats["acceptance"] == pytest.approx(stats["accepted"] / stats["drafted"], abs=1e-4)
    assert stats["mean_accepted_per_step"] == pytest.approx(
        stats["accepted"] / stats["drafting_steps"], abs=1e-4)
    assert stats["accepted_per_drafting_step"] == stats["mean_accepted_per_step"]
    assert sum(stats["drafted_per_pos"]) >= sum(stats["accepted_per_pos"]) == stats["accepted"]
    assert stats["tokens"] == tokens


def test_models_lists_the_pair_and_one_at_a_time(client: Any) -> None:
    models = client.models.list().data
    assert [m.id for m in models] == [MODEL]
    extra = models[0].model_extra["specula"]
    assert extra["concurrency"] == 1 and extra["draft"] == "tiny-draft"
    assert client.models.retrieve(MODEL).id == MODEL


def test_chat_reply_usage_stats_and_header(client: Any) -> None:
    raw = client.chat.completions.with_raw_response.create(
        model=MODEL, messages=HELLO, max_tokens=24, temperature=0)
    resp = raw.parse()
    choice = resp.choices[0]
    assert choice.message.role == "assistant" and choice.message.content
    assert choice.finish_reason in ("stop", "length")
    u = resp.usage
    assert u.prompt_tokens > 3 and 0 < u.completion_tokens <= 24
    assert u.total_tokens == u.prompt_tokens + u.completion_tokens
    stats = resp.model_extra["specula"]
    _check_stats(stats, u.completion_tokens)
    header = dict(kv.split("=") for kv in raw.headers[STATS_HEADER].split("; "))
    assert header["mode"] == "chain"
    assert int(header["drafted"]) == stats["drafted"] and int(header["accepted"]) == stats["accepted"]


def test_greedy_speculative_equals_plain_through_the_server(client: Any) -> None:
    spec = client.chat.completions.create(model=MODEL, messages=HELLO, max_tokens=40, temperature=0)
    plain = client.chat.completions.create(model=MODEL, messages=HELLO, max_tokens=40, temperature=0,
                                           extra_body={"specula": {"mode": "plain"}})
    assert plain.model_extra["specula"]["mode"] == "plain"
    assert plain.model_extra["specula"]["drafted"] == 0
    assert spec.model_extra["specula"]["drafted"] > 0
    assert spec.choices[0].message.content == plain.choices[0].message.content


def test_chat_stream_matches_the_whole_reply_and_ends_with_stats(client: Any) -> None:
    whole = client.chat.completions.create(model=MODEL, messages=HELLO, max_tokens=30, temperature=0)
    chunks = list(client.chat.completions.create(
        model=MODEL, messages=HELLO, max_tokens=30, temperature=0, stream=True,
        stream_options={"include_usage": True}))
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == whole.choices[0].message.content
    assert chunks[0].choices[0].delta.role == "assistant"
    finish = [c for c in chunks if c.choices and c.choices[0].finish_reason]
    assert len(finish) == 1 and finish[0].choices[0].finish_reason == whole.choices[0].finish_reason
    _check_stats(finish[0].model_extra["specula"], whole.usage.completion_tokens)
    last = chunks[-1]
    assert last.choices == [] and last.usage.completion_tokens == whole.usage.completion_tokens
    assert last.usage.prompt_tokens == whole.usage.prompt_tokens


def test_text_completions_whole_and_streamed(client: Any) -> None:
    whole = client.completions.create(model=MODEL, prompt="the code", max_tokens=16, temperature=0)
    assert whole.object == "text_completion" and whole.choices[0].text
    assert whole.usage.completion_tokens == whole.model_extra["specula"]["tokens"]
    streamed = list(client.completions.create(model=MODEL, prompt="the code", max_tokens=16,
                                              temperature=0, stream=True))
    assert "".join(c.choices[0].text for c in streamed) == whole.choices[0].text
    assert streamed[-1].model_extra["specula"]["drafted"] == whole.model_extra["specula"]["drafted"]


def test_sampling_seed_stop_and_extras_reach_the_engine(client: Any) -> None:
    def sample(seed: int) -> str:
        r = client.chat.completions.create(model=MODEL, messages=HELLO, max_tokens=30,
                                           temperature=1.0, top_p=0.9, seed=seed,
                                           extra_body={"top_k": 20, "min_p": 0.0})
        assert r.model_extra["specula"]["acceptance_rule"] == "coupled"  # the default rule
        return str(r.choices[0].message.content)

    assert sample(7) == sample(7)
    assert len({sample(s) for s in (1, 2, 3)}) > 1
    greedy = client.chat.completions.create(model=MODEL, messages=HELLO, max_tokens=40, temperature=0)
    text = str(greedy.choices[0].message.content)
    cut = text[10:13]
    stopped = client.chat.completions.create(model=MODEL, messages=HELLO, max_tokens=40,
                                             temperature=0, stop=[cut])
    assert stopped.choices[0].finish_reason == "stop"
    assert stopped.choices[0].message.content == text[: text.index(cut)]
    def penalised(penalty: float) -> str:
        r = client.chat.completions.create(model=MODEL, messages=HELLO, max_tokens=30, temperature=0.5,
                                           seed=5, extra_body={"repeat_penalty": penalty})
        assert r.model_extra["specula"]["acceptance_rule"] == "coupled"  # penalties included
        return str(r.choices[0].message.content)

    assert penalised(1.3) != penalised(1.0)  # the penalty reaches the engine


def test_concurrent_requests_are_queued_and_all_answered(client: Any, server: LocalServer) -> None:
    results: list[str] = []

    def one() -> None:
        r = client.chat.completions.create(model=MODEL, messages=HELLO, max_tokens=20, temperature=0)
        results.append(str(r.choices[0].message.content))

    threads = [threading.Thread(target=one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(results) == 3 and len(set(results)) == 1  # same greedy reply: no state leaked

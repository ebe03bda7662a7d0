"""The decode loop: prefill; then draft -> verify in ONE target decode -> accept
-> roll back both KV caches; yielding token events as it goes.

Plain decoding is the same loop with an empty draft, so plain and speculative
runs differ only in drafting. Invariant between steps: the target's KV cache
holds every committed token but the last (the "pending" token, which opens the
next verify batch); ``self.cache`` mirrors it so the next reply reuses the
longest common prefix instead of re-processing the conversation.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence

import numpy as np

from specula.core.engine import sampling
from specula.core.engine.config import SpecConfig
from specula.core.engine.drafters import DraftModelDrafter, Proposal, common_prefix
from specula.core.engine.events import Done, Event, Source, StepEvent, StopReason, TokenEvent
from specula.core.engine.llama import Batch, Context, ContextFull, DecodeError, Model
from specula.core.engine.policy import DraftPolicy
from specula.core.engine.sampling import SamplingParams
from specula.core.engine.stats import GenerationStats, StepRecord
from specula.core.engine.text import StopFilter, Utf8Stream


class Cancelled(Exception):
    pass


def top2_gap(logits: np.ndarray) -> float:
    """Difference between the two largest logits (small = a near-tie)."""
    top2 = np.partition(logits, -2)[-2:]
    return float(top2[1] - top2[0])


class Generator:
    """Runs replies over one target context and an optional drafter."""

    def __init__(self, model: Model, target: Context, drafter: DraftModelDrafter | None = None) -> None:
        self.model = model
        self.ctx = target
        self.drafter = drafter
        self.cache: list[int] = []
        self._batch = Batch(max(target.n_batch, 64), 1)
        # When a list, the target's top-2 logit gap of every emitted token is appended
        # (the benchmark explains greedy divergences at near-ties with it).
        self.gaps: list[float] | None = None

    def reset(self) -> None:
        self.ctx.clear()
        self.cache = []
        if self.drafter:
            self.drafter.reset()

    # -- prefill -------------------------------------------------------------

    def _prefill(self, prompt: Sequence[int], cancel: threading.Event) -> int:
        """Evaluate prompt[:-1] in the target, reusing the cached prefix; returns tokens evaluated."""
        want = len(prompt) - 1
        n = min(common_prefix(self.cache, prompt), want)
        if n < len(self.cache):
            if not self.ctx.seq_rm(0, n):  # cannot cut the cache: start over
                self.ctx.clear()
                self.cache, n = [], 0
            del self.cache[n:]
        todo = list(prompt[n:want])
        step = self.ctx.n_batch
        for i in range(0, len(todo), step):
            if cancel.is_set():
                raise Cancelled
            chunk = todo[i : i + step]
            self._batch.fill(chunk, n + i, outputs="none")
            self.ctx.decode(self._batch)
            self.cache.extend(chunk)
        return len(todo)

    def _trim(self, committed: Sequence[int]) -> None:
        n = min(common_prefix(self.cache, committed), len(committed) - 1)
        if n < len(self.cache):
            self.ctx.seq_rm(0, n)
            del self.cache[n:]

    # -- one reply -----------------------------------------------------------

    def generate(
        self,
        prompt: Sequence[int],
        params: SamplingParams,
        spec: SpecConfig,
        policy: DraftPolicy,
        cancel: threading.Event | None = None,
    ) -> Iterator[Event]:
        cancel = cancel or threading.Event()
        use_draft = self.drafter is not None and policy.name != "plain"
        stats = GenerationStats(
            mode=policy.name, acceptance_rule=params.acceptance_rule, prompt_tokens=len(prompt)
        )
        t_start = time.perf_counter()
        committed = list(prompt)
        generated: list[int] = []
        released_text: list[str] = []
        done_msg = ""

        def finish(reason: StopReason, message: str = "") -> Done:
            stats.total_s = time.perf_counter() - t_start
            stats.tokens = len(generated)
            stats.sample_memory()
            return Done(reason, "".join(released_text), list(generated), stats, message, list(prompt))

        if not committed:
            yield finish(StopReason.ERROR, "The prompt is empty.")
            return
        if len(committed) >= self.ctx.n_ctx:
            yield finish(
                StopReason.CONTEXT_FULL,
                f"The prompt ({len(committed)} tokens) does not fit the context window "
                f"({self.ctx.n_ctx} tokens). Start a new chat or raise the context length.",
            )
            return
        try:
            stats.prefill_tokens = self._prefill(committed, cancel)
            if use_draft and self.drafter is not None:
                self.drafter.sync(committed, keep_last=False)
        except Cancelled:
            yield finish(StopReason.CANCELLED)
            return
        except (ContextFull, DecodeError) as exc:
            self.reset()
            yield finish(StopReason.ERROR, f"Prefill failed: {exc}")
            return
        stats.prefill_s = time.perf_counter() - t_start

        rng = np.random.default_rng(params.seed)
        utf8 = Utf8Stream()
        stops = StopFilter(params.stop)
        rule = params.acceptance_rule
        step = 0
        reason: StopReason | None = None
        while reason is None:
            if cancel.is_set():
                reason = StopReason.CANCELLED
                break
            t_step = time.perf_counter()
            n_past = len(committed) - 1
            room = self.ctx.n_ctx - len(committed)
            if room < 0:
                reason = StopReason.CONTEXT_FULL
                done_msg = f"The context window ({self.ctx.n_ctx} tokens) is full."
                break
            left = params.max_tokens - len(generated)
            k = policy.draft_length(min(room, left - 1)) if use_draft else 0
            if k > 0 and self.drafter is not None:
                prop = self.drafter.propose(
                    committed, k, params, policy.p_min(), rng, want_q=rule == "rejection-sampling"
                )
                if len(prop) < spec.draft_min:
                    prop.truncate(0)
            else:
                prop = Proposal()
            verify_tokens = [committed[-1], *prop.tokens]
            self._batch.fill(verify_tokens, n_past, outputs="all")
            t0 = time.perf_counter()
            try:
                self.ctx.decode(self._batch)
            except ContextFull:
                reason = StopReason.CONTEXT_FULL
                done_msg = f"The context window ({self.ctx.n_ctx} tokens) is full."
                break
            verify_s = time.perf_counter() - t0
            self.cache.extend(verify_tokens)

            new, m = self._accept(prop, committed, params, rule, rng)
            keep = n_past + 1 + m
            if keep < len(self.cache):
                self.ctx.seq_rm(0, keep)
                del self.cache[keep:]
            if self.drafter is not None and len(prop):
                self.drafter.accepted(len(committed), m)

            events: list[Event] = []
            for tok, src, dprob in new:
                if self.model.is_eog(tok):
                    reason = StopReason.EOS
                    break
                committed.append(tok)
                generated.append(tok)
                if stats.ttft_s == 0.0:
                    stats.ttft_s = time.perf_counter() - t_start
                ev = TokenEvent(tok, utf8.feed(self.model.piece(tok)), src, dprob, step)
                for out in stops.push(ev):
                    released_text.append(out.text)
                    events.append(out)
                if stops.stopped:
                    reason = StopReason.STOP_STRING
                    break
                if len(generated) >= params.max_tokens:
                    reason = StopReason.MAX_TOKENS
                    break
            if reason is not None:
                self._trim(committed)
                if self.drafter is not None:
                    self.drafter.accepted(0, common_prefix(self.drafter.cache, committed))
            wall = time.perf_counter() - t_step
            rec = StepRecord(
                step=step, drafted=len(prop), accepted=m, emitted=len(new),
                draft_s=prop.draft_s, verify_s=verify_s,
                overhead_s=max(wall - prop.draft_s - verify_s, 0.0),
                shape="chain" if len(prop) else "plain",
            )
            stats.add_step(rec)
            stats.draft_tokens_emitted += sum(1 for _, s, _ in new[:m] if s is Source.DRAFT)
            stats.tokens = len(generated)
            stats.total_s = time.perf_counter() - t_start
            policy.observe(rec, prop.top_probs, prop.entropies)
            events.append(StepEvent(rec, stats))
            step += 1
            yield from events

        if reason is not StopReason.STOP_STRING:
            for ev in stops.flush():
                released_text.append(ev.text)
                yield ev
        tail = utf8.flush()
        if tail:
            released_text.append(tail)
        yield finish(reason, done_msg)

    # -- acceptance ----------------------------------------------------------

    def _accept(
        self,
        prop: Proposal,
        committed: list[int],
        params: SamplingParams,
        rule: str,
        rng: np.random.Generator,
    ) -> tuple[list[tuple[int, Source, float | None]], int]:
        """Walk the chain; returns the new tokens (accepted drafts + one target token) and m."""
        new: list[tuple[int, Source, float | None]] = []
        src = Source.LOOKUP if prop.source == "lookup" else Source.DRAFT
        history = committed
        for i, d in enumerate(prop.tokens):
            logits = self.ctx.logits(i)
            if self.gaps is not None:
                self.gaps.append(top2_gap(logits))
            if rule == "greedy":
                y = int(np.argmax(logits))
                ok = y == d
            elif rule == "rejection-sampling":
                p = sampling.probs(logits, params)
                q = prop.q[i]
                assert q is not None
                ok = sampling.accept_draft_token(p, q, d, rng)
                if not ok:
                    y = sampling.sample(sampling.residual(p, q), rng)
            else:  # sample-and-match: exact for any sampler, including history penalties
                if i:
                    history = committed + [t for t, _, _ in new]
                p = sampling.probs(sampling.apply_penalties(logits, history, params), params)
                y = sampling.sample(p, rng)
                ok = y == d
            if ok:
                new.append((d, src, prop.token_probs[i]))
            else:
                new.append((y, Source.TARGET, None))
                return new, len(new) - 1
        logits = self.ctx.logits(len(prop))
        if self.gaps is not None:
            self.gaps.append(top2_gap(logits))
        if rule == "greedy":
            y = int(np.argmax(logits))
        else:
            history = committed + [t for t, _, _ in new]
            p = sampling.probs(sampling.apply_penalties(logits, history, params), params)
            y = sampling.sample(p, rng)
        new.append((y, Source.TARGET, None))
        return new, len(new) - 1

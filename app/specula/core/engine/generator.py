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

from specula.core.cancel import Cancelled
from specula.core.engine import sampling
from specula.core.engine.config import SpecConfig
from specula.core.engine.drafters import DraftModelDrafter, PromptLookup, Proposal, common_prefix
from specula.core.engine.events import Done, Event, Source, StepEvent, StopReason, TokenEvent
from specula.core.engine.llama import Batch, Context, ContextFull, DecodeError, Model
from specula.core.engine.policy import DraftPolicy, Outcome, PlanInput
from specula.core.engine.sampling import SamplingParams
from specula.core.engine.stats import GenerationStats, StepRecord
from specula.core.engine.text import StopFilter, Utf8Stream
from specula.core.engine.tree import MAX_TREE_SEQS, TokenTree, build_tree, commit_tree, verify_tree


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
        self.lookup: PromptLookup | None = PromptLookup()
        self._tree_batch: Batch | None = None

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
        use_draft = self.drafter is not None and policy.name in ("chain", "adaptive", "tree")
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
            if use_draft and self.drafter is not None and policy.sync_draft_at_prefill():
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
        step = 0
        reason: StopReason | None = None
        while reason is None:
            if cancel.is_set():
                reason = StopReason.CANCELLED
                break
            t_step = time.perf_counter()

            room = self.ctx.n_ctx - len(committed)
            if room < 0:
                reason = StopReason.CONTEXT_FULL
                done_msg = f"The context window ({self.ctx.n_ctx} tokens) is full."
                break
            left = params.max_tokens - len(generated)
            prop = self._propose(committed, min(room, left - 1), params, spec, policy, rng, use_draft)
            try:
                if isinstance(prop, TokenTree):
                    verify_s, new, m = self._verify_tree(prop, committed, params, rng)
                    n_relaxed = 0
                    prop = prop.summary()
                else:
                    verify_s, new, m, n_relaxed = self._verify_chain(prop, committed, params, spec, rng)
            except ContextFull:
                reason = StopReason.CONTEXT_FULL
                done_msg = f"The context window ({self.ctx.n_ctx} tokens) is full."
                break

            events: list[Event] = []
            for tok, src, dprob, relaxed in new:
                if self.model.is_eog(tok):
                    reason = StopReason.EOS
                    break
                committed.append(tok)
                generated.append(tok)
                if stats.ttft_s == 0.0:
                    stats.ttft_s = time.perf_counter() - t_start
                ev = TokenEvent(tok, utf8.feed(self.model.piece(tok)), src, dprob, step, relaxed=relaxed)
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
            if self.drafter is not None and prop.source in ("draft", "tree") and len(prop):
                self.drafter.trim_to(committed)
            wall = time.perf_counter() - t_step
            rec = StepRecord(
                step=step, drafted=len(prop), accepted=m, emitted=len(new),
                draft_s=prop.draft_s, verify_s=verify_s,
                overhead_s=max(wall - prop.draft_s - verify_s, 0.0),
                shape=prop.source if len(prop) else "plain",
                draft_decodes=prop.n_decodes, catchup=prop.catchup,
                relaxed_accepted=n_relaxed,
            )
            stats.add_step(rec)
            if step % 16 == 0:
                stats.sample_memory()
            stats.draft_tokens_emitted += sum(1 for e in events if isinstance(e, TokenEvent) and e.source is not Source.TARGET)
            stats.tokens = len(generated)
            stats.total_s = time.perf_counter() - t_start
            policy.observe(Outcome(prop.source, prop.top_probs, prop.entropies, m, prop.match_len, rec))
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
        policy.finish()
        yield finish(reason, done_msg)

    # -- proposals -----------------------------------------------------------

    def _propose(
        self, committed: list[int], room: int, params: SamplingParams, spec: SpecConfig,
        policy: DraftPolicy, rng: np.random.Generator, use_draft: bool,
    ) -> Proposal | TokenTree:
        """Ask the policy what to draft and get it from the draft model, a tree or prompt lookup."""
        if room <= 0:
            return Proposal()
        look: list[int] = []
        match = 0
        if self.lookup is not None and policy.name in ("lookup", "adaptive"):
            look, match = self.lookup.match(committed, min(room, spec.draft_max))
        has_draft = use_draft and self.drafter is not None
        lag = len(committed) - len(self.drafter.cache) if self.drafter is not None else 0
        plan = policy.plan(PlanInput(room, has_draft, look, match, lag))
        if plan.source == "lookup" and plan.lookup_tokens:
            prop = Proposal(source="lookup", match_len=match)
            for t in plan.lookup_tokens[: plan.k]:
                prop.tokens.append(t)
                prop.q.append(None)  # deterministic proposal: q one-hot
                prop.token_probs.append(1.0)
                prop.top_probs.append(1.0)
                prop.entropies.append(0.0)
            return prop
        if plan.source == "tree" and plan.k > 0 and self.drafter is not None:
            budget = min(spec.tree_budget, MAX_TREE_SEQS, room * spec.tree_width)
            return build_tree(self.drafter, committed, budget, spec.tree_width, min(spec.draft_max, room))
        if plan.source == "draft" and plan.k > 0 and self.drafter is not None:
            prop = self.drafter.propose(
                committed, plan.k, params, policy.keep_drafting, rng,
                want_q=params.acceptance_rule == "rejection-sampling",
            )
            if len(prop) < spec.draft_min:
                prop.truncate(0)
            return prop
        return Proposal()

    # -- verification --------------------------------------------------------

    def _verify_chain(
        self, prop: Proposal, committed: list[int], params: SamplingParams, spec: SpecConfig,
        rng: np.random.Generator,
    ) -> tuple[float, list[tuple[int, Source, float | None, bool]], int, int]:
        """Pending token + chain in one decode; keep the accepted prefix in the cache."""
        n_past = len(committed) - 1
        verify_tokens = [committed[-1], *prop.tokens]
        self._batch.fill(verify_tokens, n_past, outputs="all")
        t0 = time.perf_counter()
        self.ctx.decode(self._batch)
        verify_s = time.perf_counter() - t0
        self.cache.extend(verify_tokens)
        new, m, n_relaxed = self._accept(prop, committed, params, spec, params.acceptance_rule, rng)
        keep = n_past + 1 + m
        if keep < len(self.cache):
            self.ctx.seq_rm(0, keep)
            del self.cache[keep:]
        return verify_s, new, m, n_relaxed

    def _verify_tree(
        self, tree: TokenTree, committed: list[int], params: SamplingParams, rng: np.random.Generator,
    ) -> tuple[float, list[tuple[int, Source, float | None, bool]], int]:
        """Pending token + whole tree in one decode; walk it; keep the winning branch."""
        n_past = len(committed) - 1
        if self._tree_batch is None:
            self._tree_batch = Batch(MAX_TREE_SEQS * 4, MAX_TREE_SEQS + 1)
        verify_s = verify_tree(self.ctx, self._tree_batch, committed[-1], n_past, tree)
        new: list[tuple[int, Source, float | None, bool]] = []
        path: list[int] = []
        cur, out = -1, 0
        while True:
            logits = self.ctx.logits(out)
            if self.gaps is not None:
                self.gaps.append(top2_gap(logits))
            if params.greedy:
                y = int(np.argmax(logits))
            else:  # sample-and-match down the tree: exact for any tree
                hist = committed + [t for t, _, _, _ in new]
                p = sampling.probs(sampling.apply_penalties(logits, hist, params), params)
                y = sampling.sample(p, rng)
            child = next((c for c in tree.children_of(cur) if tree.nodes[c].token == y), None)
            if child is None:
                new.append((y, Source.TARGET, None, False))
                break
            new.append((y, Source.DRAFT, tree.nodes[child].prob, False))
            path.append(child)
            cur, out = child, child + 1
        commit_tree(self.ctx, tree, n_past, path)
        self.cache.extend([committed[-1], *(tree.nodes[i].token for i in path)])
        return verify_s, new, len(path)

    # -- acceptance ----------------------------------------------------------

    def _accept(
        self,
        prop: Proposal,
        committed: list[int],
        params: SamplingParams,
        spec: SpecConfig,
        rule: str,
        rng: np.random.Generator,
    ) -> tuple[list[tuple[int, Source, float | None, bool]], int, int]:
        """Walk the chain: (new tokens, accepted draft tokens m, of which relaxed).

        New tokens are the accepted proposals plus one token of the target's own
        (the correction at the first rejection, or the bonus after the last).
        """
        new: list[tuple[int, Source, float | None, bool]] = []
        src = Source.LOOKUP if prop.source == "lookup" else Source.DRAFT
        n_relaxed = 0
        history = committed
        for i, d in enumerate(prop.tokens):
            logits = self.ctx.logits(i)
            if self.gaps is not None:
                self.gaps.append(top2_gap(logits))
            y = d
            if rule == "greedy":
                y = int(np.argmax(logits))
                ok = y == d
            elif rule == "rejection-sampling":
                p = sampling.probs(logits, params)
                q = prop.q[i]  # None: a deterministic (lookup) proposal
                ok = sampling.accept_draft_token(p, q, d, rng)
                if not ok:
                    y = sampling.sample(sampling.residual(p, q, d), rng)
            else:  # sample-and-match: exact for any sampler, including history penalties
                if i:
                    history = committed + [t for t, _, _, _ in new]
                p = sampling.probs(sampling.apply_penalties(logits, history, params), params)
                y = sampling.sample(p, rng)
                ok = y == d
            if ok:
                new.append((d, src, prop.token_probs[i], False))
                continue
            if spec.lossy and relaxed_accepts(logits, d, prop.token_probs[i], spec):
                new.append((d, src, prop.token_probs[i], True))
                n_relaxed += 1
                continue
            new.append((y, Source.TARGET, None, False))
            return new, len(new) - 1, n_relaxed
        logits = self.ctx.logits(len(prop))
        if self.gaps is not None:
            self.gaps.append(top2_gap(logits))
        if rule == "greedy":
            y = int(np.argmax(logits))
        else:
            history = committed + [t for t, _, _, _ in new]
            p = sampling.probs(sampling.apply_penalties(logits, history, params), params)
            y = sampling.sample(p, rng)
        new.append((y, Source.TARGET, None, False))
        return new, len(new) - 1, n_relaxed


def relaxed_accepts(logits: np.ndarray, token: int, draft_prob: float | None, spec: SpecConfig) -> bool:
    """The lossy rules: the token is in the target's top-k, or p_target / p_draft is high enough."""
    if spec.relaxed_top_k > 0:
        k = min(spec.relaxed_top_k, logits.shape[0])
        kth = np.partition(logits, -k)[-k]
        if logits[token] >= kth:
            return True
    if spec.relaxed_ratio > 0 and draft_prob:
        x = logits - logits.max()
        p_t = float(np.exp(x[token]) / np.exp(x).sum())
        return p_t / draft_prob >= spec.relaxed_ratio
    return False

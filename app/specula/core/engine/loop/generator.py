"""The decode loop: prefill; then plan -> propose -> verify in ONE target decode ->
accept -> commit in both KV caches; yielding token events as it goes.

Plain decoding is the same loop with an empty proposal, so plain and
speculative runs differ only in drafting. Invariant between steps: the
target's KV cache (``self.kv``) holds every committed token but the last (the
"pending" token, which opens the next verify batch), so the next reply reuses
the longest common prefix instead of re-processing the conversation. On
recurrent and hybrid memory it holds a prefix of those: the kept tokens a
restore dropped ride ahead of the pending token in the next verify (kv.py says
how such a cache is cut; a cut that cannot be made exact stops the reply).

The generator never asks what a policy or a drafter is: the policy says which
drafters it wants and plans a source and a size; the drafter for that source
proposes a chain or a tree; the proposal's shape decides how it is verified.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence

from specula.core.cancel import Cancelled
from specula.core.engine.config import SpecConfig
from specula.core.engine.drafters import (
    ChainDrafter,
    Drafter,
    DraftModel,
    DraftRequest,
    DraftSource,
    LookupDrafter,
    Proposal,
    TokenTree,
    TreeDrafter,
)
from specula.core.engine.drafters.mtp import MTPDrafter, MTPHead
from specula.core.engine.drafters.tree import MAX_TREE_SEQS
from specula.core.engine.events import Done, Event, Source, StepEvent, StopReason, TokenEvent
from specula.core.engine.grammar.state import GrammarError, GrammarState
from specula.core.engine.loop.text import StopFilter, Utf8Stream
from specula.core.engine.native.batch import Batch
from specula.core.engine.native.kv import ANCHOR, CutFailed, KVCache, KVCosts
from specula.core.engine.native.llama import Context, ContextFull, DecodeError, Model
from specula.core.engine.policy.fixed import DraftPolicy, Outcome, PlanInput
from specula.core.engine.sampling import rules as sampling
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.engine.stats import GenerationStats, StepRecord
from specula.core.engine.verify import chain as chain_verify
from specula.core.engine.verify.reply import Reply
from specula.core.engine.verify.result import VerifyResult
from specula.core.engine.verify.tree import verify_tree

# Kept tokens a restore dropped (recurrent memory) that may ride with the next verify
# before they are decoded on their own: consecutive partial rejections add to them.
OWED_MAX = 16
MEMORY_EVERY = 128  # steps between two reads of the process's RSS (~0.1 ms each after a decode)


class Generator:
    """Runs replies over one target context and optional drafters."""

    def __init__(self, model: Model, target: Context, draft: DraftModel | None = None) -> None:
        self.model = model
        self.kv = KVCache(target)
        # When a list, the target's top-2 logit gap of every emitted token is appended
        # (the benchmark explains greedy divergences at near-ties with it).
        self.gaps: list[float] | None = None
        self.lookup = LookupDrafter()
        self._tree_batch: Batch | None = None
        self.draft: DraftModel | None = None
        self.mtp: MTPHead | None = None
        self._drafters: dict[DraftSource, Drafter] = {}
        self.set_draft(draft)

    def set_draft(self, draft: DraftModel | None) -> None:
        """Attach (or detach, with None) a draft model; lookup needs none.

        Where a tree cannot run (a pure recurrent target refuses a tree-shaped batch; a
        draft context without branch sequences cannot build one) a tree request is
        served by the chain drafter, and the reply's statistics say so."""
        self.draft = draft
        self._drafters = {DraftSource.LOOKUP: self.lookup}
        if draft is not None:
            chain = ChainDrafter(draft)
            self._drafters[DraftSource.CHAIN] = chain
            self._drafters[DraftSource.TREE] = TreeDrafter(draft) if self.trees_run else chain
        if self.mtp is not None:
            self._drafters[DraftSource.MTP] = MTPDrafter(self.mtp)

    def set_mtp(self, head: MTPHead | None) -> None:
        """Attach (or detach) the target's own MTP head (a drafter that needs no model)."""
        self.mtp = head
        self.set_draft(self.draft)

    @property
    def trees_run(self) -> bool:
        """Whether token trees run, or tree requests are served as chains."""
        return (self.ctx.memory.runs_trees and self.ctx.n_seq_max > MAX_TREE_SEQS
                and (self.draft is None or self.draft.ctx.n_seq_max > MAX_TREE_SEQS))

    def _end_cut(self, committed: list[int]) -> None:
        """At the end of a reply the cache holds all committed tokens but the last. On
        recurrent memory it may keep the last too (after an end-of-generation token the
        pending token was decoded): cutting one token there means a restore and a replay
        of everything since the last checkpoint, and the next reply reuses any prefix."""
        if self.kv.exact_cut:
            self.kv.cut(len(committed) - 1)
        else:
            self.kv.cut(min(self.kv.agreement(committed), len(committed)))

    def _mirror_costs_since(self, before: tuple[KVCosts, KVCosts]) -> tuple[KVCosts, KVCosts]:
        now = self._mirror_costs()
        return now[0].since(before[0]), now[1].since(before[1])

    def _mirror_costs(self) -> tuple[KVCosts, KVCosts]:
        """What keeping the target's and the draft's caches exact has cost so far."""
        draft = self.draft.kv.costs.copy() if self.draft is not None else KVCosts()
        return self.kv.costs.copy(), draft

    @property
    def ctx(self) -> Context:
        return self.kv.ctx

    @property
    def cache(self) -> list[int]:
        """The tokens the target's cache holds (sequence 0)."""
        return self.kv.tokens

    def reset(self) -> None:
        self.kv.clear()
        if self.draft is not None:
            self.draft.reset()
        if self.mtp is not None:
            self.mtp.reset()

    # -- one reply -----------------------------------------------------------

    def generate(
        self,
        prompt: Sequence[int],
        params: SamplingParams,
        spec: SpecConfig,
        policy: DraftPolicy,
        cancel: threading.Event | None = None,
        grammar: GrammarState | None = None,
    ) -> Iterator[Event]:
        """``grammar``: ``params.grammar`` parsed by the caller (once per request); the reply closes it."""
        cancel = cancel or threading.Event()
        reply = Reply(params, spec, sampling.resolve_seed(params.seed))
        reply.grammar = grammar
        if grammar is None and params.grammar:  # invalid: GrammarError before anything happens
            reply.grammar = GrammarState.open(self.model.vocab, self.ctx.n_vocab,
                                              params.grammar, params.grammar_root, owner=self.model)
        try:
            yield from self._generate(prompt, params, spec, policy, cancel, reply)
        finally:  # every exit: done, error, cancel, or the consumer closing the iterator
            if reply.grammar is not None:
                reply.grammar.close()

    def _generate(
        self, prompt: Sequence[int], params: SamplingParams, spec: SpecConfig,
        policy: DraftPolicy, cancel: threading.Event, reply: Reply,
    ) -> Iterator[Event]:
        active = {s: d for s, d in self._drafters.items() if s in policy.wants}
        stats = GenerationStats(mode=policy.name, acceptance_rule=reply.rule.value, seed=reply.seed,
                                prompt_tokens=len(prompt), memory=self.ctx.memory.value)
        if DraftSource.TREE in policy.wants and DraftSource.TREE in active and not self.trees_run:
            stats.trees_as_chains = True
        costs0 = self._mirror_costs()
        t_start = time.perf_counter()
        committed = list(prompt)
        generated: list[int] = []
        released_text: list[str] = []
        done_msg = ""
        tree_rule: sampling.AcceptanceRule | None = None  # the trees' rule, when not the reply's
        chain_verified = False  # a drafted chain was verified by the reply's rule
        full_msg = f"The context window ({self.ctx.n_ctx} tokens) is full."

        def finish(reason: StopReason, message: str = "") -> Done:
            stats.add_mirror_costs(*self._mirror_costs_since(costs0))
            stats.total_s = time.perf_counter() - t_start
            stats.tokens = len(generated)
            stats.draft_stopped = next((d.stopped for d in active.values() if d.stopped), "")
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
            # Before the prefill: a drafter fed from the target's own decodes (MTP) follows
            # this reply's tokens from its first decode.
            for d in active.values():
                d.begin(committed, sync=False)
            n = self.kv.reuse(committed, limit=len(committed) - 1)
            self.kv.feed(committed[n:-1], "none", cancel)
            self.kv.checkpoint(ANCHOR)  # recurrent memory: the next reply starts from here
            stats.prefill_tokens = len(committed) - 1 - n
            # The first token comes from the target alone: the draft catches up on the
            # prompt after it is shown (see _catch_up_drafters), so a draft costs no TTFT.
            sync = policy.sync_draft_at_prefill()
            deferred = sync and not spec.draft_first_token
            if sync and not deferred:  # draft_first_token: the draft is fed the prompt now
                stats.add_catchup(*self._catch_up_drafters(committed, active))
        except Cancelled:
            yield finish(StopReason.CANCELLED)
            return
        except (ContextFull, DecodeError, CutFailed) as exc:
            self.reset()
            yield finish(StopReason.ERROR, f"Prefill failed: {exc}")
            return
        stats.prefill_s = time.perf_counter() - t_start

        utf8 = Utf8Stream()
        stops = StopFilter(params.stop)
        is_eog, piece = self.model.is_eog, self.model.piece
        step = 0
        reason: StopReason | None = None
        # Steps are timed back to back (the consumer's time between them left out), and
        # every llama_decode is timed where it happens (Context.decode_s), so a step's host
        # time is its wall time minus its decodes: sampling, the drafter's Python work,
        # acceptance, events and bookkeeping all count, whichever code they are in.
        t_step = time.perf_counter()
        clock0 = self._decode_clock()
        step_costs = self._mirror_costs()
        try:
            while reason is None:
                if cancel.is_set():
                    reason = StopReason.CANCELLED
                    break
                if deferred and step > 0:
                    deferred = False
                    c0, t0 = self._decode_clock(), time.perf_counter()
                    stats.add_catchup(*self._catch_up_drafters(committed, active))
                    # the draft's prefill is reported on its own, not as a step's time
                    t_step += time.perf_counter() - t0
                    clock0 += self._decode_clock() - c0
                room = self.ctx.n_ctx - len(committed)
                if room < 0:
                    reason, done_msg = StopReason.CONTEXT_FULL, full_msg
                    break
                left = params.max_tokens - len(generated)
                # The first step is the target's alone (TTFT as plain's) unless the draft was
                # fed the prompt at prefill (draft_first_token): no drafter proposes in it.
                ready = step > 0 or spec.draft_first_token
                prop, drafter = self._propose(committed, room, left - 1, reply, policy, active,
                                              ready=ready)
                try:
                    try:
                        verify_s, res = self._verify(prop, committed, reply)
                    except ContextFull:
                        if not prop.tokens:
                            raise
                        # the proposal did not fit the window: this step is plain
                        prop, drafter = Proposal(draft_s=prop.draft_s, host_s=prop.host_s), drafter
                        verify_s, res = self._verify(prop, committed, reply)
                except ContextFull:
                    reason, done_msg = StopReason.CONTEXT_FULL, full_msg
                    break
                except DecodeError as exc:
                    self.reset()
                    reason, done_msg = StopReason.ERROR, f"Decoding failed: {exc}"
                    break
                except GrammarError as exc:  # the grammar admits no token: it cannot be completed
                    self.kv.cut(len(committed) - 1)
                    reason, done_msg = StopReason.ERROR, str(exc)
                    break
                new, m, n_relaxed = res.tokens, res.accepted, res.relaxed
                if prop.tokens and prop.tree is None:
                    chain_verified = True  # a drafted chain was judged by the reply's rule
                if res.rule is not reply.rule:  # a tree's walk under rejection sampling
                    tree_rule = res.rule
                if tree_rule is not None:
                    stats.acceptance_rule = (
                        f"{reply.rule.value}, trees by {tree_rule.value}"
                        if chain_verified else tree_rule.value)

                events: list[Event] = []
                from_draft = 0  # released token events a drafter proposed
                for (tok, src, dprob, relaxed), lp in zip(new, res.logprobs, strict=True):
                    if is_eog(tok):
                        reason = StopReason.EOS
                        break
                    committed.append(tok)
                    generated.append(tok)
                    if stats.ttft_s == 0.0:
                        stats.ttft_s = time.perf_counter() - t_start
                    ev = TokenEvent(tok, utf8.feed(piece(tok)), src, dprob, step, relaxed=relaxed)
                    if lp is not None:
                        ev.logprob, ev.top_logprobs = lp
                    for out in stops.push(ev):
                        released_text.append(out.text)
                        events.append(out)
                        if out.source is not Source.TARGET:
                            from_draft += 1
                    if stops.stopped:
                        reason = StopReason.STOP_STRING
                        break
                    if len(generated) >= params.max_tokens:
                        reason = StopReason.MAX_TOKENS
                        break
                if reason is not None:
                    self._end_cut(committed)
                if drafter is not None:
                    drafter.accept(committed, m)
                t_rec = time.perf_counter()
                wall = t_rec - t_step
                kv_t, kv_d = self._mirror_costs_since(step_costs)
                rec = StepRecord(
                    step=step, drafted=len(prop), accepted=m, emitted=len(new),
                    draft_s=prop.draft_s, verify_s=verify_s,
                    overhead_s=max(wall - (self._decode_clock() - clock0), 0.0),
                    shape=prop.shape, source=prop.source.value, depth=_depth(prop),
                    draft_decodes=prop.n_decodes, catchup=prop.catchup, catchup_s=prop.catchup_s,
                    relaxed_accepted=n_relaxed, step_s=wall, draft_host_s=prop.host_s,
                    checkpoint_s=kv_t.checkpoint_s + kv_t.restore_s + kv_d.checkpoint_s + kv_d.restore_s,
                    replay_s=kv_t.replay_s, replayed=kv_t.replayed,
                )
                stats.add_step(rec)
                if step % MEMORY_EVERY == 0:  # and at the end (finish)
                    stats.sample_memory()
                stats.draft_tokens_emitted += from_draft
                stats.tokens = len(generated)
                stats.total_s = time.perf_counter() - t_start
                if active:
                    stats.draft_stopped = next((d.stopped for d in active.values() if d.stopped), "")
                policy.observe(Outcome(prop.source, prop.top_probs, prop.entropies, m, prop.match_len, rec))
                events.append(StepEvent(rec, stats.snapshot()))
                step += 1
                t_tail = time.perf_counter()
                yield from events
                # the next step starts with this one's bookkeeping after the record was made
                t_step = time.perf_counter() - (t_tail - t_rec)
                clock0 = self._decode_clock()
                step_costs = self._mirror_costs()

        except CutFailed as exc:  # the caches were emptied: nothing continues on them
            self.reset()
            reason, done_msg = StopReason.ERROR, str(exc)

        if reason is not StopReason.ERROR:
            self.kv.checkpoint()  # recurrent memory: the next reply reuses up to here
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

    @staticmethod
    def _catch_up_drafters(committed: list[int], active: dict[DraftSource, Drafter]) -> tuple[int, float]:
        """Feed the drafters all they have not seen but the pending token, once in a reply
        the policy syncs the draft in: after the first token was shown (TTFT is the target's
        alone), or in prefill with ``draft_first_token``; (tokens fed, seconds)."""
        t0 = time.perf_counter()
        fed = 0
        for d in active.values():
            lag = d.lag(committed)
            if lag > 1:
                d.begin(committed, sync=True)
                fed += lag - d.lag(committed)
        return fed, time.perf_counter() - t0

    def _propose(
        self, committed: list[int], cells: int, left: int, reply: Reply, policy: DraftPolicy,
        active: dict[DraftSource, Drafter], *, ready: bool = True,
    ) -> tuple[Proposal, Drafter | None]:
        """Ask the policy what to draft and the drafter for that source to propose it.

        ``cells``: KV cells free after the pending token (a tree's nodes each take one);
        ``left``: tokens that may still be drafted before max_tokens (bounds depth only);
        ``ready``: False in the first step, which is a plain target step: its token is
        shown before any drafter spends time (the drafters' catch-up comes after it).
        """
        room = min(cells, left)
        if room <= 0 or not ready or not active:  # no drafter: nothing a plan could pick
            return Proposal(), None
        spec = reply.spec
        look: list[int] = []
        match = 0
        for d in active.values():  # the best preview (only lookup has one today)
            toks, n = d.preview(committed, min(room, spec.draft_max))
            if toks and n > match:
                look, match = toks, n
        available = frozenset(s for s, d in active.items() if d.available)
        lag = max((d.lag(committed) for d in active.values()), default=0)
        plan = policy.plan(PlanInput(room, available, look, match, lag))
        drafter = active.get(plan.source)
        if drafter is None or plan.k <= 0 or not drafter.available:
            return Proposal(), None
        budget = min(plan.k, spec.tree_budget, MAX_TREE_SEQS, cells)
        req = DraftRequest(
            committed=committed, k=min(plan.k, spec.draft_max, room), params=reply.params,
            seed=reply.seed, rng=reply.rng, keep=policy.keep_drafting, draft_min=spec.draft_min,
            tree_budget=budget, tree_width=spec.tree_width, lookup_tokens=plan.lookup_tokens or [],
            grammar=reply.grammar, confidence=policy.reads_confidence,
        )
        c0, t0 = self._decode_clock(), time.perf_counter()
        prop = drafter.propose(req)
        prop.host_s = max(time.perf_counter() - t0 - (self._decode_clock() - c0), 0.0)
        return prop, drafter

    def _decode_clock(self) -> float:
        """Seconds spent in llama_decode so far, target and draft together."""
        s = self.ctx.decode_s
        if self.mtp is not None:
            s += self.mtp.ctx.decode_s
        return s + self.draft.ctx.decode_s if self.draft is not None else s

    # -- verification --------------------------------------------------------

    def _verify(
        self, prop: Proposal, committed: list[int], reply: Reply,
    ) -> tuple[float, VerifyResult]:
        """(verify seconds, what the verification decided)."""
        if prop.tree is not None and prop.tokens:
            # A tree is walked by sampling the target and matching a child (exact for any
            # tree); the result's rule says so rather than claim rejection sampling.
            return self._verify_tree(prop.tree, committed, reply)
        return self._verify_chain(prop, committed, reply)

    def _verify_chain(
        self, prop: Proposal, committed: list[int], reply: Reply,
    ) -> tuple[float, VerifyResult]:
        """Pending token + chain in one decode; keep the accepted prefix in the cache.

        On recurrent memory a partly rejected verify goes back to the checkpoint taken
        before it, and the accepted tokens it dropped ride ahead of the pending token in
        the next verify (one decode, where a replay and a verify would cost two; the
        checkpoint stays the one already taken). Their share of that decode is counted
        as replay, not verify."""
        owed = self._owed(committed, len(prop) + 1)
        if prop.tokens:
            self.kv.checkpoint()
        batch = [*owed, committed[-1], *prop.tokens]
        spent = self.kv.feed_tail(batch, len(prop) + 1)
        replay_s = spent * len(owed) / len(batch)
        self.kv.costs.replay_s += replay_s
        res = chain_verify.accept_chain(self.ctx, prop, committed, reply, self.gaps,
                                        first=len(owed))
        if self.kv.exact_cut:
            self.kv.cut(len(committed) + res.accepted)
        else:
            self.kv.rewind(len(committed) + res.accepted)
        return spent - replay_s, res

    def _owed(self, committed: list[int], batch: int) -> list[int]:
        """The committed tokens the target's cache lacks (before the pending one): kept
        tokens a restore dropped on recurrent memory, to ride with a verify of ``batch``
        tokens. Fed on their own first when too many for one batch, or for a tree."""
        n0 = len(self.kv)
        if n0 > len(committed) - 1:  # never decode at positions the mirror does not own
            raise CutFailed(f"The model's memory is out of step: the cache holds {n0} "
                            f"tokens where the reply needs {len(committed) - 1}.")
        owed = committed[n0:-1]
        if owed and (len(owed) > OWED_MAX or len(owed) + batch > self.ctx.n_batch):
            self.kv.costs.replay_s += self.kv.feed(owed)
            owed = []
        return owed

    def _verify_tree(
        self, tree: TokenTree, committed: list[int], reply: Reply,
    ) -> tuple[float, VerifyResult]:
        """Pending token + whole tree in one decode; walk it; keep the winning branch."""
        if self._tree_batch is None:
            self._tree_batch = Batch(MAX_TREE_SEQS * 4, MAX_TREE_SEQS + 1)
        self._owed(committed, self.ctx.n_batch)  # fed on their own: a tree starts at committed
        return verify_tree(self.kv, self._tree_batch, tree, committed, reply, self.gaps)


def _depth(prop: Proposal) -> int:
    """How far a proposal reached: a chain's length, a tree's deepest node."""
    if prop.tree is not None:
        return max((n.depth for n in prop.tree.nodes), default=0)
    return len(prop)

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
    LookupDrafter,
    Proposal,
    TreeDrafter,
)
from specula.core.engine.drafters.base import TargetHead
from specula.core.engine.drafters.ngram_cache import NgramCache
from specula.core.engine.drafters.tree import MAX_TREE_SEQS
from specula.core.engine.events import Event, StepEvent, StopReason, TokenEvent, TokenOrigin
from specula.core.engine.grammar.compile import GrammarError
from specula.core.engine.grammar.state import GrammarState
from specula.core.engine.loop.emit import Emitter
from specula.core.engine.loop.propose import catch_up, propose
from specula.core.engine.loop.run import ReplyRun
from specula.core.engine.loop.step_clock import Lap, MirrorCosts, StepClock
from specula.core.engine.loop.target_verify import TargetVerifier
from specula.core.engine.native.checkpoints import KVCosts
from specula.core.engine.native.context import Context
from specula.core.engine.native.kv import ANCHOR, CutFailed, KVCache, KVHolder
from specula.core.engine.native.llama import ContextFull, DecodeError, Model
from specula.core.engine.policy.fixed import DraftPolicy, Outcome
from specula.core.engine.sampling import rules as sampling
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.engine.stats import GenerationStats, StepRecord
from specula.core.engine.verify.reply import ReplySampling
from specula.core.engine.verify.result import VerifyResult

MEMORY_EVERY = 128  # steps between two reads of the process's RSS (~0.1 ms each after a decode)


class Generator(KVHolder):
    """Runs replies over one target context and optional drafters."""

    def __init__(self, model: Model, target: Context, draft_model: DraftModel | None = None,
                 ngram_cache: NgramCache | None = None) -> None:
        """``ngram_cache``: the target's persistent n-gram cache, which prompt lookup
        falls back to (the engine's ``NgramStore`` owns it and teaches it each reply)."""
        self.model = model
        self.kv = KVCache(target)
        # When a list, the target's top-2 logit gap of every emitted token is appended
        # (the benchmark explains greedy divergences at near-ties with it).
        self.gaps: list[float] | None = None
        self.lookup = LookupDrafter(cache=ngram_cache)
        self._target = TargetVerifier(self.kv)
        self.draft_model: DraftModel | None = None
        self.mtp: TargetHead | None = None
        self._drafters: dict[TokenOrigin, Drafter] = {}
        self.set_draft(draft_model)

    def set_draft(self, draft: DraftModel | None) -> None:
        """Attach (or detach, with None) a draft model; lookup needs none.

        Where a tree cannot run (a pure recurrent target refuses a tree-shaped batch; a
        draft context without branch sequences cannot build one) a tree request is
        served by the chain drafter, and the reply's statistics say so."""
        self.draft_model = draft
        self._drafters = {TokenOrigin.LOOKUP: self.lookup}
        if draft is not None:
            chain = ChainDrafter(draft)
            self._drafters[TokenOrigin.CHAIN] = chain
            self._drafters[TokenOrigin.TREE] = TreeDrafter(draft) if self.trees_run else chain
        if self.mtp is not None:
            self._drafters[TokenOrigin.MTP] = self.mtp.drafter()

    def set_mtp(self, head: TargetHead | None) -> None:
        """Attach (or detach) the head that drafts from the target's own decodes: its MTP
        layers or a draft head (EAGLE-3, DFlash), a drafter that needs no draft model."""
        self.mtp = head
        self.set_draft(self.draft_model)

    @property
    def trees_run(self) -> bool:
        """Whether token trees run, or tree requests are served as chains."""
        return (self.ctx.memory.runs_trees and self.ctx.n_seq_max > MAX_TREE_SEQS
                and (self.draft_model is None or self.draft_model.ctx.n_seq_max > MAX_TREE_SEQS))

    def _end_cut(self, committed: list[int]) -> None:
        """At the end of a reply the cache holds all committed tokens but the last. On
        recurrent memory it may keep the last too (after an end-of-generation token the
        pending token was decoded): cutting one token there means a restore and a replay
        of everything since the last checkpoint, and the next reply reuses any prefix."""
        if self.kv.exact_cut:
            self.kv.cut(len(committed) - 1)
        else:
            self.kv.cut(min(self.kv.agreement(committed), len(committed)))

    def _mirror_costs_since(self, before: MirrorCosts) -> MirrorCosts:
        now = self._mirror_costs()
        return now[0].since(before[0]), now[1].since(before[1])

    def _mirror_costs(self) -> MirrorCosts:
        """What keeping the target's and the draft's caches exact has cost so far."""
        draft = self.draft_model.kv.costs.copy() if self.draft_model is not None else KVCosts()
        return self.kv.costs.copy(), draft

    def reset(self) -> None:
        self.kv.clear()
        if self.draft_model is not None:
            self.draft_model.reset()
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
        reply = ReplySampling(params, spec, sampling.resolve_seed(params.seed))
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
        policy: DraftPolicy, cancel: threading.Event, reply: ReplySampling,
    ) -> Iterator[Event]:
        """The reply as its steps: start, prefill, then one decode step after another
        (each: plan, propose, verify, emit, record) until it ends, then close."""
        run, costs0 = self._start(prompt, policy, reply), self._mirror_costs()
        if not self._fits(run):
            yield run.done(run.reason, run.message, self._mirror_costs_since(costs0))
            return
        deferred = self._prefill(run, policy, spec, cancel)
        wait = policy.sync_after() if deferred else 0  # reply tokens before that catch-up
        if run.reason is not None:
            yield run.done(run.reason, run.message, self._mirror_costs_since(costs0))
            return
        emitter = Emitter(self.model, params)
        clock = StepClock(self._decode_clock, self._mirror_costs)
        try:
            while run.reason is None:
                if cancel.is_set():
                    run.stop(StopReason.CANCELLED)
                    break
                if deferred and run.step > 0 and len(run.generated) >= wait:
                    deferred = False
                    with clock.left_out():  # the draft's prefill is reported on its own
                        run.stats.add_catchup(*catch_up(run.committed, run.active,
                                                        policy.sync_window()))
                verified = self._plan_propose_verify(run, policy, reply, ready=run.step > 0
                                                     or spec.draft_first_token)
                if verified is None:
                    break
                events, lap = self._emit(run, emitter, policy, clock, *verified)
                handed_out_at = time.perf_counter()
                yield from events
                clock.next_step(lap, handed_out_at)
        except CutFailed as exc:  # the caches were emptied: nothing continues on them
            self.reset()
            run.stop(StopReason.ERROR, str(exc))
        yield from self._close(run, emitter, policy)
        yield run.done(run.reason, run.message, self._mirror_costs_since(costs0))

    # -- the steps of one reply ---------------------------------------------

    def _start(self, prompt: Sequence[int], policy: DraftPolicy, reply: ReplySampling) -> ReplyRun:
        """The reply's running state, with the drafters its policy may plan with."""
        active = {s: d for s, d in self._drafters.items() if s in policy.wants}
        stats = GenerationStats(mode=policy.name, acceptance_rule=reply.rule.value, seed=reply.seed,
                                prompt_tokens=len(prompt), memory=self.ctx.memory.value)
        if TokenOrigin.TREE in active and not self.trees_run:
            stats.trees_as_chains = True  # the statistics say what ran
        return ReplyRun(list(prompt), stats, active)

    def _fits(self, run: ReplyRun) -> bool:
        """Whether the prompt can be answered at all (fail closed, with a sentence)."""
        n, n_ctx = len(run.committed), self.ctx.n_ctx
        if not n:
            run.stop(StopReason.ERROR, "The prompt is empty.")
        elif n >= n_ctx:
            run.stop(StopReason.CONTEXT_FULL,
                     f"The prompt ({n} tokens) does not fit the context window ({n_ctx} tokens). "
                     "Start a new chat or raise the context length.")
        return run.reason is None

    def _prefill(self, run: ReplyRun, policy: DraftPolicy, spec: SpecConfig,
                 cancel: threading.Event) -> bool:
        """Bring the target's cache to the prompt but its last token, reusing the longest
        common prefix with what it holds; whether the draft's catch-up on the prompt is
        deferred to after the first token (so that a draft costs no TTFT)."""
        committed, stats = run.committed, run.stats
        try:
            # A drafter fed from the target's own decodes (MTP) follows this reply's
            # tokens from its first decode.
            for d in run.active.values():
                d.begin(committed, sync=False)
            n = self.kv.reuse(committed, limit=len(committed) - 1)
            self.kv.feed(committed[n:-1], "none", cancel)
            self.kv.checkpoint(ANCHOR)  # recurrent memory: the next reply starts from here
            stats.prefill_tokens = len(committed) - 1 - n
            sync = policy.sync_draft_at_prefill()
            deferred = sync and not spec.draft_first_token
            if sync and not deferred:  # draft_first_token: the draft is fed the prompt now
                stats.add_catchup(*catch_up(committed, run.active, policy.sync_window()))
        except Cancelled:
            run.stop(StopReason.CANCELLED)
            return False
        except (ContextFull, DecodeError, CutFailed) as exc:
            self.reset()
            run.stop(StopReason.ERROR, f"Prefill failed: {exc}")
            return False
        stats.prefill_s = time.perf_counter() - run.t_start
        return deferred

    def _plan_propose_verify(
        self, run: ReplyRun, policy: DraftPolicy, reply: ReplySampling, *, ready: bool,
    ) -> tuple[Proposal, Drafter | None, float, VerifyResult] | None:
        """One step's proposal verified by the target in one decode; None when the reply
        ends here instead (``run.reason`` says why). A proposal that does not fit the
        context window is dropped and the step runs plain. ``ready``: False in the first
        step, the target's alone (TTFT as plain's) unless the draft was fed the prompt
        at prefill (draft_first_token)."""
        committed = run.committed
        room = self.ctx.n_ctx - len(committed)
        if room < 0:
            run.stop(StopReason.CONTEXT_FULL, self._full_msg())
            return None
        left = reply.params.max_tokens - len(run.generated)
        prop, drafter = propose(committed, room, left - 1, reply, policy, run.active,
                                self._decode_clock, ready=ready)
        try:
            try:
                verify_s, res = self._target.verify(prop, committed, reply, self.gaps)
            except ContextFull:
                if not prop.tokens:
                    raise
                prop = Proposal(draft_s=prop.draft_s, host_s=prop.host_s)  # this step is plain
                verify_s, res = self._target.verify(prop, committed, reply, self.gaps)
        except ContextFull:
            run.stop(StopReason.CONTEXT_FULL, self._full_msg())
            return None
        except DecodeError as exc:
            self.reset()
            run.stop(StopReason.ERROR, f"Decoding failed: {exc}")
            return None
        except GrammarError as exc:  # the grammar admits no token: it cannot be completed
            self.kv.cut(len(committed) - 1)
            run.stop(StopReason.ERROR, str(exc))
            return None
        run.note_rule(prop, res, reply.rule)
        return prop, drafter, verify_s, res

    def _emit(
        self, run: ReplyRun, emitter: Emitter, policy: DraftPolicy, clock: StepClock,
        prop: Proposal, drafter: Drafter | None, verify_s: float, res: VerifyResult,
    ) -> tuple[list[Event], Lap]:
        """Commit the verified tokens and make their events, then the step's record: the
        drafter learns what was kept, the policy learns how the step went, and the
        running totals close with a snapshot (the step's StepEvent)."""
        events, from_draft = emitter.emit(run, res)
        if run.reason is not None:
            self._end_cut(run.committed)
        if drafter is not None:
            drafter.accept(run.committed, res.accepted)
        lap = clock.lap()
        rec = step_record(run.step, prop, res, verify_s, lap)
        stats = run.stats
        stats.add_step(rec)
        if run.step % MEMORY_EVERY == 0:  # and at the end (ReplyRun.done)
            stats.sample_memory()
        stats.draft_tokens_emitted += from_draft
        stats.tokens = len(run.generated)
        stats.total_s = time.perf_counter() - run.t_start
        if run.active:
            stats.draft_stopped = run.draft_stopped()
        chain_run, chain_depth = -1, 0
        if prop.tree is not None:
            chain_run, chain_depth = prop.tree.chain_run([t[0] for t in res.tokens[: res.accepted]])
        policy.observe(Outcome(prop.source, prop.top_probs, prop.entropies, res.accepted,
                               prop.match_len, rec, chain_run, chain_depth))
        events.append(StepEvent(rec, stats.snapshot()))
        run.step += 1
        return events, lap

    def _close(self, run: ReplyRun, emitter: Emitter, policy: DraftPolicy) -> list[TokenEvent]:
        """After the last step: a checkpoint the next reply can reuse (unless the caches
        were emptied), the events a stop string held back, the policy told."""
        if run.reason is not StopReason.ERROR:
            self.kv.checkpoint()  # recurrent memory: the next reply reuses up to here
        held = emitter.flush(run)
        policy.finish()
        return held

    def _full_msg(self) -> str:
        return f"The context window ({self.ctx.n_ctx} tokens) is full."

    def _decode_clock(self) -> float:
        """Seconds spent in llama_decode so far, target and draft together."""
        s = self.ctx.decode_s
        if self.mtp is not None:
            s += self.mtp.ctx.decode_s
        return s + self.draft_model.ctx.decode_s if self.draft_model is not None else s


def step_record(step: int, prop: Proposal, res: VerifyResult, verify_s: float, lap: Lap) -> StepRecord:
    """What one step did and what it cost, as the statistics keep it."""
    kv_t, kv_d = lap.target_kv, lap.draft_kv
    return StepRecord(
        step=step, drafted=len(prop), accepted=res.accepted, emitted=len(res.tokens),
        draft_s=prop.draft_s, verify_s=verify_s, overhead_s=lap.host_s,
        shape=prop.shape, source=prop.source.value, depth=_depth(prop),
        draft_decodes=prop.n_decodes, catchup=prop.catchup, catchup_s=prop.catchup_s,
        relaxed_accepted=res.relaxed, step_s=lap.wall_s, draft_host_s=prop.host_s,
        checkpoint_s=kv_t.checkpoint_s + kv_t.restore_s + kv_d.checkpoint_s + kv_d.restore_s,
        replay_s=kv_t.replay_s, replayed=kv_t.replayed,
    )


def _depth(prop: Proposal) -> int:
    """How far a proposal reached: a chain's length, a tree's deepest node."""
    if prop.tree is not None:
        return max((n.depth for n in prop.tree.nodes), default=0)
    return len(prop)

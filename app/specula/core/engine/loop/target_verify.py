"""The target's side of a step: the pending token and the proposal in one decode,
the verification walk, and the target's cache cut back to what was accepted.

Verification itself is a pure step (verify/chain.py, verify/tree.py return a
``VerifyResult``); this module owns what the target's KV cache must do around it.
"""

from __future__ import annotations

from specula.core.engine.drafters import Proposal, TokenTree
from specula.core.engine.drafters.tree import MAX_TREE_SEQS
from specula.core.engine.native.batch import Batch
from specula.core.engine.native.kv import CutFailed, KVCache
from specula.core.engine.verify import chain as chain_verify
from specula.core.engine.verify.reply import ReplySampling
from specula.core.engine.verify.result import VerifyResult
from specula.core.engine.verify.tree import verify_tree

# Kept tokens a restore dropped (recurrent memory) that may ride with the next verify
# before they are decoded on their own: consecutive partial rejections add to them.
OWED_MAX = 16


class TargetVerifier:
    """Verifies proposals against the target whose cache ``kv`` mirrors."""

    def __init__(self, kv: KVCache) -> None:
        self.kv = kv
        self._tree_batch: Batch | None = None

    def verify(self, prop: Proposal, committed: list[int], reply: ReplySampling,
               gaps: list[float] | None) -> tuple[float, VerifyResult]:
        """(verify seconds, what the verification decided); ``gaps``: when a list, the
        target's top-2 logit gap of every emitted token is appended to it."""
        if prop.tree is not None and prop.tokens:
            # A tree is walked by sampling the target and matching a child (exact for any
            # tree); the result's rule says so rather than claim rejection sampling.
            return self._verify_tree(prop.tree, committed, reply, gaps)
        return self._verify_chain(prop, committed, reply, gaps)

    def _verify_chain(self, prop: Proposal, committed: list[int], reply: ReplySampling,
                      gaps: list[float] | None) -> tuple[float, VerifyResult]:
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
        res = chain_verify.accept_chain(self.kv.ctx, prop, committed, reply, gaps,
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
        if owed and (len(owed) > OWED_MAX or len(owed) + batch > self.kv.ctx.n_batch):
            self.kv.costs.replay_s += self.kv.feed(owed)
            owed = []
        return owed

    def _verify_tree(self, tree: TokenTree, committed: list[int], reply: ReplySampling,
                     gaps: list[float] | None) -> tuple[float, VerifyResult]:
        """Pending token + whole tree in one decode; walk it; keep the winning branch."""
        if self._tree_batch is None:
            self._tree_batch = Batch(MAX_TREE_SEQS * 4, MAX_TREE_SEQS + 1)
        self._owed(committed, self.kv.ctx.n_batch)  # fed on their own: a tree starts at committed
        return verify_tree(self.kv, self._tree_batch, tree, committed, reply, gaps)

"""Verifying a token tree: the pending token and every node in one target decode,
then a walk down the tree by the target's own choices (sample-and-match, or the
coupled rule, or greedy: exact for any tree), keeping the winning branch's cells.
The batch puts the draft's own chain first so that an accepted path along it lands in
position order (plain decoding's arithmetic needs that; docs/engine.md, "Plain's text").

Apart from the generator's loop because it is the one verification that needs
branch sequences in the KV cache (``KVCache.branches``) and a tree-shaped batch.
On a hybrid target the winning path is committed by a checkpoint taken before the
tree and a replay of the path (``KVCache.commit_branch``); a pure recurrent target
cannot decode a tree at all (the generator gives it chains).
"""

from __future__ import annotations

from specula.core.engine.drafters.proposal import TokenTree
from specula.core.engine.events import TokenOrigin
from specula.core.engine.native.batch import Batch
from specula.core.engine.native.kv import CutFailed, KVCache
from specula.core.engine.sampling import rules as sampling
from specula.core.engine.sampling import topk
from specula.core.engine.verify.reply import ReplySampling
from specula.core.engine.verify.result import NewToken, TokenLogprobs, VerifyResult


def verify_tree(
    kv: KVCache, batch: Batch, tree: TokenTree, committed: list[int], reply: ReplySampling,
    gaps: list[float] | None = None,
) -> tuple[float, VerifyResult]:
    """(verify seconds, the walk's result: new tokens, their logprobs, accepted tree
    nodes). A tree is walked by the target's own choices, so under rejection sampling
    the result's rule says sample-and-match. ``gaps``: when a list, the target's top-2
    logit gap at every position walked is appended (the benchmark)."""
    n_past = len(committed) - 1
    if not kv.ctx.memory.runs_trees:
        raise ValueError("a token tree cannot be verified on recurrent memory (the generator runs chains)")
    if len(kv) != n_past:
        raise CutFailed(f"The model's memory is out of step: the cache holds {len(kv)} tokens "
                        f"where the tree needs {n_past}.")
    kv.checkpoint()  # recurrent layers (a hybrid): the state the winning path is replayed from
    leaves = tree.leaves()
    new: list[NewToken] = []
    lps: list[TokenLogprobs | None] = []
    path: list[int] = []
    # Batch order: the pending token, then the draft's own chain through the tree, then the
    # other nodes. The cache places a batch's tokens in free cells in batch order, so when
    # the accepted path is a prefix of that chain its cells follow the pending token's in
    # position order, as a chain verify's would; any other path is decoded again.
    lead = tree.top_nodes()
    order = lead + sorted(set(range(len(tree.nodes))) - set(lead))
    slot = {node: 1 + i for i, node in enumerate(order)}  # node -> batch index
    with kv.branches(len(leaves)) as seqs:
        leaf_seq = dict(zip(leaves, seqs, strict=True))
        below: list[list[int]] = [[] for _ in tree.nodes]
        for leaf, s in leaf_seq.items():
            i = leaf
            while i >= 0:
                below[i].append(s)
                i = tree.nodes[i].parent
        batch.fill_tree(
            [committed[-1]] + [tree.nodes[i].token for i in order],
            [n_past] + [n_past + tree.nodes[i].depth for i in order],
            [[0, *seqs], *(below[i] for i in order)],
        )
        verify_s = kv.decode(batch, appended=[committed[-1]])
        cur, out = -1, 0
        history = sampling.penalty_window(committed, reply.params)
        while True:
            logits = kv.ctx.logits(out)
            if gaps is not None:
                gaps.append(topk.top2_gap(logits))
            # sample-and-match (or coupled) down the tree: exact for any tree
            y = reply.choose(logits, history, len(committed) + len(path))
            child = next((c for c in tree.children_of(cur) if tree.nodes[c].token == y), None)
            lps.append(reply.took(logits, y))
            if child is None:
                new.append((y, TokenOrigin.TARGET, None))
                break
            new.append((y, TokenOrigin.TREE, tree.nodes[child].prob))
            if history:
                history.append(y)
            path.append(child)
            cur, out = child, slot[child]
        if path:
            winner = next(s for leaf, s in leaf_seq.items() if tree.descends(leaf, path[-1]))
            kv.commit_branch(winner, [tree.nodes[i].token for i in path],
                             in_order=path == lead[: len(path)])
    rule = reply.rule
    if rule is sampling.AcceptanceRule.REJECTION:
        rule = sampling.AcceptanceRule.SAMPLE_AND_MATCH
    return verify_s, VerifyResult(tuple(new), tuple(lps), rule, len(path))

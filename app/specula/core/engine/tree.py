"""Token-tree drafting: the draft expands a tree depth by depth, the target
verifies the whole tree in ONE decode, and acceptance walks down it.

Draft side: all frontier nodes of a depth go to the draft in one batch, each
in its own sequence (a child sequence starts as a metadata copy of its
parent's, which ``kv_unified=True`` makes free); the best nodes by cumulative
draft probability are kept up to a node budget (best-first pruning).

Target side: the pending token and every node go in one batch; a token carries
the sequence id of every leaf below it, each leaf sequence first holding the
committed prefix. Acceptance samples (or takes the argmax of) the target at
each node and descends while the result is a child, which keeps the target's
distribution exactly for any tree. Afterwards the winning branch is kept in
sequence 0 and every other branch is dropped.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from specula.core.engine.drafters import DraftModelDrafter, Proposal
from specula.core.engine.llama import Batch, Context

MAX_TREE_SEQS = 16  # sequences besides 0 that a tree may use (n_seq_max - 1)


@dataclass
class TreeNode:
    token: int
    parent: int  # index into TokenTree.nodes, -1 for a child of the root (the pending token)
    depth: int  # 1 for children of the root
    prob: float  # the draft's probability of this token given its parent
    cum: float  # product of probs along the path
    seq: int = -1  # draft-side sequence while the node is expanded
    children: list[int] = field(default_factory=list)


@dataclass
class TokenTree:
    nodes: list[TreeNode] = field(default_factory=list)
    root_children: list[int] = field(default_factory=list)
    draft_s: float = 0.0
    n_decodes: int = 0
    catchup: int = 0

    def children_of(self, idx: int) -> list[int]:
        return self.root_children if idx < 0 else self.nodes[idx].children

    def summary(self) -> Proposal:
        """The tree as a Proposal for the step's statistics (its tokens are all nodes)."""
        return Proposal(
            tokens=[n.token for n in self.nodes], q=[None] * len(self.nodes),
            token_probs=[n.prob for n in self.nodes], top_probs=[], entropies=[],
            draft_s=self.draft_s, source="tree", n_decodes=self.n_decodes, catchup=self.catchup,
        )

    def leaves(self) -> list[int]:
        return [i for i, n in enumerate(self.nodes) if not n.children]


def _top(logits: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, probabilities) of the ``width`` most likely tokens under the plain softmax."""
    idx = np.argpartition(logits, -width)[-width:]
    x = logits - logits.max()
    z = float(np.exp(x).sum())
    p = np.exp(x[idx]) / z
    order = np.argsort(-p)
    return idx[order], p[order]


def build_tree(
    drafter: DraftModelDrafter, committed: list[int], budget: int, width: int, max_depth: int,
    min_cum: float = 0.01,
) -> TokenTree:
    """Expand a token tree of at most ``budget`` nodes after ``committed``."""
    tree = TokenTree()
    ctx = drafter.ctx
    n_shared = drafter.n_shared
    # Catch up in sequence 0; the root's distribution is the last output.
    tree.catchup, tree.draft_s = drafter.feed_context(committed)
    tree.n_decodes += 1
    base = len(committed)  # position of depth-1 nodes
    frontier: list[tuple[int, np.ndarray]] = [(-1, ctx.logits(-1)[:n_shared].copy())]
    batch = Batch(MAX_TREE_SEQS + 1, MAX_TREE_SEQS + 1)
    free_seqs = list(range(MAX_TREE_SEQS, 0, -1))
    for depth in range(1, max_depth + 1):
        cands: list[tuple[float, int, int, float]] = []  # (cum, parent, token, prob)
        for parent, logits in frontier:
            pcum = tree.nodes[parent].cum if parent >= 0 else 1.0
            toks, ps = _top(logits, width)
            for t, p in zip(toks, ps, strict=True):
                if pcum * p >= min_cum:
                    cands.append((pcum * float(p), parent, int(t), float(p)))
        room = budget - len(tree.nodes)
        if not cands or room <= 0:
            break
        cands.sort(reverse=True)
        new: list[int] = []
        for cum, parent, tok, p in cands[:room]:
            idx = len(tree.nodes)
            tree.nodes.append(TreeNode(tok, parent, depth, p, cum))
            tree.children_of(parent).append(idx)
            new.append(idx)
        if depth == max_depth or len(tree.nodes) >= budget or len(new) > len(free_seqs):
            break
        # Feed the new nodes in one batch, each in its own sequence holding its path.
        seq_sets = []
        for idx in new:
            node = tree.nodes[idx]
            s = free_seqs.pop()
            src = tree.nodes[node.parent].seq if node.parent >= 0 else 0
            ctx.seq_cp(src, s, -1, -1)
            node.seq = s
            seq_sets.append([s])
        batch.fill_tree([tree.nodes[i].token for i in new], [base + depth - 1] * len(new), seq_sets)
        t0 = time.perf_counter()
        ctx.decode(batch)
        tree.draft_s += time.perf_counter() - t0
        tree.n_decodes += 1
        frontier = [(idx, ctx.logits(j)[:n_shared].copy()) for j, idx in enumerate(new)]
        # parents' sequences are no longer needed once their children hold copies
        for idx in new:
            parent = tree.nodes[idx].parent
            if parent >= 0 and tree.nodes[parent].seq > 0:
                ctx.seq_rm(tree.nodes[parent].seq, -1, -1)
                free_seqs.append(tree.nodes[parent].seq)
                tree.nodes[parent].seq = -1
    batch.close()
    # Drop every branch from the draft's cache: it keeps the committed tokens only.
    for node in tree.nodes:
        if node.seq > 0:
            ctx.seq_rm(node.seq, -1, -1)
            node.seq = -1
    return tree


def verify_tree(ctx: Context, batch: Batch, pending: int, n_past: int, tree: TokenTree) -> float:
    """One target decode over the pending token and the whole tree; returns its seconds.

    Batch entry 0 is the pending token, entry i + 1 is tree node i.
    """
    leaves = tree.leaves()
    leaf_seq = {leaf: s for s, leaf in enumerate(leaves, start=1)}
    below: list[list[int]] = [[] for _ in tree.nodes]
    for leaf, s in leaf_seq.items():
        i = leaf
        while i >= 0:
            below[i].append(s)
            i = tree.nodes[i].parent
        ctx.seq_rm(s, -1, -1)
        ctx.seq_cp(0, s, -1, -1)  # the committed prefix, as metadata
    tokens = [pending] + [n.token for n in tree.nodes]
    positions = [n_past] + [n_past + n.depth for n in tree.nodes]
    seq_sets = [[0, *leaf_seq.values()], *below]
    batch.fill_tree(tokens, positions, seq_sets)
    t0 = time.perf_counter()
    ctx.decode(batch)
    return time.perf_counter() - t0


def commit_tree(ctx: Context, tree: TokenTree, n_past: int, path: list[int]) -> None:
    """Keep the pending token and the accepted ``path`` in sequence 0; drop the rest."""
    leaves = tree.leaves()
    # any leaf below the last accepted node carries the whole accepted path
    if path:
        last = path[-1]
        winner = next(s for s, leaf in enumerate(leaves, start=1) if _descends(tree, leaf, last))
    else:
        winner = 1
    ctx.seq_keep(winner)
    ctx.seq_rm(winner, n_past + 1 + len(path), -1)
    ctx.seq_cp(winner, 0, -1, -1)
    ctx.seq_rm(winner, -1, -1)


def _descends(tree: TokenTree, node: int, ancestor: int) -> bool:
    while node >= 0:
        if node == ancestor:
            return True
        node = tree.nodes[node].parent
    return False

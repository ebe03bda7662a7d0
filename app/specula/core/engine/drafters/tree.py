"""Token-tree drafting: the draft expands a tree depth by depth, the target
verifies the whole tree in ONE decode, and acceptance walks down it.

Draft side: all frontier nodes of a depth go to the draft in one batch, each
in its own branch sequence (a child's sequence starts as a metadata copy of
its parent's, which ``kv_unified=True`` makes free); the best nodes by
cumulative draft probability are kept up to a node budget (best-first
pruning). Every branch sequence is dropped when the tree is built, whatever
happens (the draft's KV mirror guarantees it).

Target side (in the generator): the pending token and every node go in one
batch; a token carries the sequence of every leaf below it. Acceptance takes
the target's choice at each node (greedy, coupled, or a sample) and descends
while it is a child, which keeps the target's distribution for any tree; the
winning branch's cells then join sequence 0 and the branches are dropped.
"""

from __future__ import annotations

import numpy as np

from specula.core.engine.drafters.model import DraftModel, ModelDrafter
from specula.core.engine.drafters.proposal import (
    DraftRequest,
    Proposal,
    TokenTree,
    TreeNode,
)
from specula.core.engine.events import TokenOrigin
from specula.core.engine.grammar import state as grammar
from specula.core.engine.native.batch import Batch
from specula.core.engine.native.llama import ContextFull, DecodeError
from specula.core.engine.sampling import rules as sampling
from specula.core.engine.sampling import topk

MAX_TREE_SEQS = 16  # sequences besides 0 that a tree may use (n_seq_max - 1)


def _top(logits: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(tokens, probabilities) of the ``width`` most likely tokens under the plain softmax
    (its normaliser from the top candidates, as the chain's confidence features)."""
    ids = topk.top_k_ids(logits, max(width, topk.FEATURE_K))
    z, _ = topk.normaliser(logits, ids)
    ids = ids[: min(width, logits.shape[0])]
    p = np.exp(logits[ids].astype(np.float64) - float(logits[int(ids[0])])) / z
    return ids, p


def _top_allowed(logits: np.ndarray, width: int,
                 state: grammar.GrammarState) -> tuple[np.ndarray, np.ndarray]:
    """``_top`` among the tokens the grammar admits (probabilities of the plain softmax,
    which only rank and prune the tree)."""
    ids = state.allowed_top(logits, width)
    if ids.shape[0] == 0:
        raise grammar.GrammarError("the grammar admits no draft token here")
    x = logits - logits.max()
    z = float(np.exp(x).sum())
    p = np.exp(x[ids]) / z
    order = np.argsort(-p)[:width]
    return ids[order], p[order]


class TreeDrafter(ModelDrafter):
    """The draft model proposes a token tree."""

    source = TokenOrigin.TREE
    min_cum = 0.01  # nodes less likely than this (along their path) are not worth a cell

    def __init__(self, model: DraftModel) -> None:
        super().__init__(model)
        self._batch = Batch(MAX_TREE_SEQS + 1, MAX_TREE_SEQS + 1)

    def propose(self, req: DraftRequest) -> Proposal:
        """A tree of at most ``req.tree_budget`` nodes and depth ``req.k``; an empty
        proposal (a plain step) when no node is likely enough (a flat draft)."""
        prop = Proposal(source=self.source)
        dm = self.model
        committed = req.committed
        budget = min(req.tree_budget, MAX_TREE_SEQS, dm.room(committed))
        if req.k <= 0 or not self._start_step(prop, committed, budget):
            return prop
        tree = TokenTree()
        states: dict[int, grammar.GrammarState] = {}  # node -> grammar after it (-1: root)
        if req.grammar is not None:
            states[-1] = req.grammar.clone()
        try:
            with dm.kv.branches(MAX_TREE_SEQS, share_prefix=False):
                prop.draft_s += self._expand(tree, prop, len(committed), len(dm.seen(committed)),
                                             budget, req, states)
        except (ContextFull, DecodeError) as exc:
            dm.stop(f"a draft decode failed ({exc})")
        except grammar.GrammarError:
            pass  # the draft found nothing the grammar admits below some node: keep the tree
        finally:
            for st in states.values():
                st.close()
        if tree.nodes:
            prop.tree = tree
            for n in tree.nodes:
                prop.append(n.token, None, n.prob, n.prob, 0.0)
        return prop

    @staticmethod
    def _children(logits: np.ndarray, req: DraftRequest, position: int,
                  state: grammar.GrammarState | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The ``tree_width`` most likely tokens (that the grammar admits, with one); under
        the coupled rule the draft's own coupled choice at this position is always one of
        them (it is what the target's choice most often equals, at any temperature)."""
        if state is None:
            toks, ps = _top(logits, req.tree_width)
        else:
            toks, ps = _top_allowed(logits, req.tree_width, state)
        params = req.params
        if params.greedy or params.rule is not sampling.Rule.COUPLED:
            return toks, ps
        ids, q = (sampling.draft_candidates(logits, params) if state is None
                  else grammar.draft_candidates(state, logits, params))
        c = sampling.coupled_choice(ids, q, req.seed, position)
        if c in toks:
            return toks, ps
        ids = topk.top_k_ids(logits, max(req.tree_width, topk.FEATURE_K))
        z, _ = topk.normaliser(logits, ids)
        p_c = float(np.exp(float(logits[c]) - float(logits[int(ids[0])])) / z)
        toks = np.concatenate(([c], toks[:-1]))
        ps = np.concatenate(([p_c], ps[:-1]))
        return toks, ps

    def _expand(self, tree: TokenTree, prop: Proposal, base: int, at: int, budget: int,
                req: DraftRequest, states: dict[int, grammar.GrammarState]) -> float:
        """Grow ``tree`` depth by depth: ``base`` is the reply's position of its first node
        (the coupled rule's), ``at`` the draft cache's (its view can be shorter)."""
        dm = self.model
        ctx = dm.ctx
        spent = 0.0
        frontier: list[tuple[int, np.ndarray]] = [(-1, ctx.logits(-1)[: dm.n_shared].copy())]
        free_seqs = list(range(MAX_TREE_SEQS, 0, -1))
        for depth in range(1, req.k + 1):
            cands: list[tuple[float, int, int, float]] = []  # (cum, parent, token, prob)
            for parent, logits in frontier:
                pcum = tree.nodes[parent].cum if parent >= 0 else 1.0
                toks, ps = self._children(logits, req, base + depth - 1, states.get(parent))
                for t, p in zip(toks, ps, strict=True):
                    if pcum * p >= self.min_cum:
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
            if depth == req.k or len(tree.nodes) >= budget or len(new) > len(free_seqs):
                break
            if states:  # the grammar after each new node, for its children
                for idx in new:
                    st = states[tree.nodes[idx].parent].clone()
                    states[idx] = st
                    st.advance(tree.nodes[idx].token)
            # Feed the new nodes in one batch, each in its own sequence holding its path.
            seq_sets = []
            for idx in new:
                node = tree.nodes[idx]
                s = free_seqs.pop()
                src = tree.nodes[node.parent].seq if node.parent >= 0 else 0
                ctx.seq_cp(src, s, -1, -1)
                node.seq = s
                seq_sets.append([s])
            self._batch.fill_tree([tree.nodes[i].token for i in new], [at + depth - 1] * len(new),
                                  seq_sets)
            spent += ctx.decode(self._batch)
            prop.n_decodes += 1
            frontier = [(idx, ctx.logits(j)[: dm.n_shared].copy()) for j, idx in enumerate(new)]
            for idx in new:  # parents' sequences are free once their children hold copies
                parent = tree.nodes[idx].parent
                if parent >= 0 and tree.nodes[parent].seq > 0:
                    ctx.seq_rm(tree.nodes[parent].seq, -1, -1)
                    free_seqs.append(tree.nodes[parent].seq)
                    tree.nodes[parent].seq = -1
        return spent

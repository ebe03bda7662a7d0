"""Token trees: one target decode per tree, greedy identity, exact sampling, clean KV."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.sampling.rules import SamplingParams
from tests.core.engine.conftest import PLAIN, decode_last, fresh_logits, make_engine, run

GREEDY = SamplingParams(max_tokens=48)
PROMPTS = ["hello world", "def print(self): return the code", "the model and the token", "x"]


def tree(budget: int = 12, width: int = 2, depth: int = 4) -> SpecConfig:
    return SpecConfig(mode=Mode.TREE, draft_max=depth, tree_budget=budget, tree_width=width)


@pytest.mark.parametrize("draft", ["draft", "exact_draft", "wrong_draft"])
def test_tree_greedy_identity(tiny: dict[str, Path], draft: str) -> None:
    eng = make_engine(tiny["target"], tiny[draft])
    for prompt in PROMPTS:
        plain, _ = run(eng, prompt, GREEDY, PLAIN)
        for shape in (tree(4, 2, 2), tree(12, 2, 4), tree(16, 3, 5), tree(6, 1, 6)):
            done, _events = run(eng, prompt, GREEDY, shape)
            assert done.token_ids == plain.token_ids, (prompt, shape)
            assert done.stats.mode == "tree"
    eng.close()


def test_tree_kv_after_step_equals_fresh(tiny: dict[str, Path]) -> None:
    eng = make_engine(tiny["target"], tiny["draft"])
    done, _ = run(eng, PROMPTS[2], GREEDY, tree(12, 2, 4))
    committed = done.prompt_token_ids + done.token_ids
    gen = eng.generator
    assert gen is not None and gen.cache == committed[:-1]
    assert gen.ctx.pos_max(0) == len(committed) - 2
    for s in range(1, 17):  # every branch sequence is gone
        assert gen.ctx.pos_max(s) == -1
    got = decode_last(gen, committed)
    want = fresh_logits(eng.target_model, committed)
    assert float(np.max(np.abs(got - want))) < 0.05
    eng.close()


# Sampling through trees (depth 2, independent reference) is checked in test_sampling_exact.py.


def test_top_path_and_the_chains_run_in_a_hand_built_tree() -> None:
    """A node's first child is its most likely: the chain through the tree follows them."""
    from specula.core.engine.drafters.proposal import TokenTree, TreeNode

    t = TokenTree()
    for tok, parent, depth, p in ((10, -1, 1, .6), (11, -1, 1, .3), (20, 0, 2, .5), (21, 0, 2, .4), (30, 2, 3, .9)):
        t.nodes.append(TreeNode(tok, parent, depth, p, p))
        t.children_of(parent).append(len(t.nodes) - 1)
    assert t.top_path() == [10, 20, 30]
    assert t.chain_run([10, 20, 30]) == (3, 3)
    assert t.chain_run([10, 20]) == (2, 3)
    assert t.chain_run([10, 21]) == (1, 3)  # a sibling: the chain stopped at depth 1
    assert t.chain_run([11]) == (0, 3)
    assert t.chain_run([]) == (0, 3)


def test_each_tree_step_tells_the_policy_the_chains_run(tiny: dict[str, Path],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """With a draft that is the target, the target accepts the draft's own chain, so the
    chain's run is the whole accepted path on every step; with another draft, never more."""
    from specula.core.engine.policy.fixed import Outcome, TreePolicy

    seen: list[Outcome] = []
    monkeypatch.setattr(TreePolicy, "observe", lambda self, o: seen.append(o))
    for draft, exact in (("exact_draft", True), ("draft", False)):
        seen.clear()
        eng = make_engine(tiny["target"], tiny[draft])
        run(eng, PROMPTS[1], GREEDY, tree(12, 2, 4))
        eng.close()
        steps = [o for o in seen if o.record.drafted]
        assert steps and all(o.chain_depth >= 1 for o in steps)
        if exact:
            assert all(o.chain_run == o.n_accepted for o in steps), [(o.chain_run, o.n_accepted) for o in steps]
        else:
            assert all(0 <= o.chain_run <= o.n_accepted for o in steps)

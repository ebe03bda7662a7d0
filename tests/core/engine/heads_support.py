"""What the draft-head tests share: tiny heads for the tiny targets, engines over them,
and the independent reference of what a head should see at a step.

The reference (:class:`FreshHead`) does not use the drafters' mirror, window or cuts:
for each step it opens nothing new but clears a second target context and a second
head context (over the same weights), decodes the committed prefix in one batch, reads
the head's layers from that decode and feeds the head from scratch, the way llama.cpp's
drafter would after a fresh prefill. What the engine's head read at that step must
match it (up to the float noise of batch shapes).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from specula.core.engine.config import SpecConfig
from specula.core.engine.drafters.heads import DFlashDrafter, DFlashHead, Eagle3Head
from specula.core.engine.drafters.mtp import MTPDrafter
from specula.core.engine.drafters.proposal import DraftRequest, Proposal
from specula.core.engine.engine import Engine, EngineOptions
from specula.core.engine.native import heads as native
from specula.core.engine.native.batch import Batch
from specula.core.engine.native.context import Context
from specula_tools.tiny_heads import TARGET_LAYERS, build_head, spec_for

KINDS = ("eagle3", "dflash", "dspark")
# Tiny targets a head can read (attention, MoE, two hybrids); mamba's graph records no
# layer inputs in this llama.cpp (refused, see test_heads_fit.py).
TARGETS = ("llama", "qwen3moe", "qwen35", "lfm2")


def target_path(name: str, tiny: dict[str, Path], families: dict[str, Path]) -> Path:
    return tiny["target"] if name == "llama" else families[name]


def head_path(folder: Path, target: str, kind: str, **changes: Any) -> Path:
    tag = "-".join(f"{k}{v}" for k, v in sorted(changes.items()))
    return build_head(folder / f"{target}-{kind}{'-' + tag if tag else ''}.gguf",
                      spec_for(kind, TARGET_LAYERS[target], **changes))


def head_engine(target: Path, head: Path, n_ctx: int = 512) -> Engine:
    eng = Engine(EngineOptions(n_ctx=n_ctx, n_threads=1, calibrate=False))
    eng.load_target(target)
    eng.load_head(head)
    return eng


def spec(kind: str, k: int = 3, **kw: Any) -> SpecConfig:
    from specula.core.engine.config import Mode

    return SpecConfig(mode=Mode(kind), draft_max=k, **kw)


@dataclass
class Step:
    committed: list[int]
    drafted: list[int]
    rows: list[np.ndarray] = field(default_factory=list)  # the logits rows the drafter read


@contextmanager
def recording(eng: Engine) -> Iterator[list[Step]]:
    """Every proposal of the engine's head with the logits rows its drafter read."""
    head = eng._head
    assert head is not None
    steps: list[Step] = []
    ctx = head.hctx.ctx
    read = ctx.logits
    current: list[np.ndarray] = []

    def logits(i: int) -> np.ndarray:
        row = read(i)
        current.append(np.array(row, copy=True))
        return row

    drafter_cls = DFlashDrafter if isinstance(head, DFlashHead) else MTPDrafter
    propose = drafter_cls.propose

    def recorded(self: Any, req: DraftRequest) -> Proposal:
        current.clear()
        committed = list(req.committed)
        prop = propose(self, req)
        steps.append(Step(committed, list(prop.tokens), list(current)))
        return prop

    ctx.logits = logits  # type: ignore[method-assign]
    drafter_cls.propose = recorded  # type: ignore[method-assign]
    try:
        yield steps
    finally:
        drafter_cls.propose = propose  # type: ignore[method-assign]
        del ctx.logits


class FreshHead:
    """The head of ``eng`` evaluated from scratch for a prefix (the independent reference)."""

    def __init__(self, eng: Engine) -> None:
        head = eng._head
        assert head is not None and eng.target_model is not None
        self.kind = head.kind
        self.ids = list(head.layer_ids)
        self.anchor = head.info.from_anchor
        self.mask = int(head.info.mask_token or 0)
        self.n_embd = native.n_embd(eng.target_model)
        self.target = Context(eng.target_model, n_ctx=eng.n_ctx, n_threads=1, n_batch=512,
                              n_outputs_max=64)
        native.set_layer_rows(self.target, self.ids, True)
        causal = isinstance(head, Eagle3Head)
        self.head = native.HeadContext(head.weights, self.target, n_batch=512, n_outputs_max=64,
                                       causal=causal)
        self.batch = Batch(512)

    def rows(self, committed: list[int], drafted: list[int]) -> list[np.ndarray]:
        """The logits rows a head fed from scratch gives for ``drafted`` after ``committed``."""
        self.target.clear()
        self.head.ctx.clear()
        n = len(committed) - 1  # the pending token's position
        self.batch.fill(committed[:n], 0, outputs="none")
        self.target.decode(self.batch)
        feats = native.layer_rows(self.target, self.ids, n, self.n_embd)
        assert feats is not None
        out: list[np.ndarray] = []
        if self.kind == "eagle3":
            g = self.head.encode(feats)
            # token x_q with row g_{q-1} at position q (x_0 has none), the pending one last
            # all outputs: the EAGLE-3 graph returns the first rows when fewer are asked
            self.head.decode(committed[1:], 1, g, outputs=n)
            out.append(np.array(self.head.ctx.logits(-1), copy=True))
            for i, tok in enumerate(drafted[:-1]):
                row = self.head.row(-1)
                self.head.decode([tok], n + 1 + i, row[None, :], outputs=1)
                out.append(np.array(self.head.ctx.logits(-1), copy=True))
            return out
        self.head.inject(feats, 0)
        k = len(drafted)
        size = k if self.anchor else k + 1
        self.head.decode([committed[-1]] + [self.mask] * (size - 1), n, None, outputs=size)
        first = 0 if self.anchor else 1
        return [np.array(self.head.ctx.logits(first + i), copy=True) for i in range(k)]

    def close(self) -> None:
        self.batch.close()
        self.head.close()
        self.target.close()


def mismatches(eng: Engine, steps: list[Step], atol: float = 0.05) -> list[str]:
    """The steps whose rows differ from the reference's (each as a sentence). The batch
    shapes the target verified in move its layer inputs by float noise (up to ~4e-3 in
    the logits here); a wrong input moves them by units."""
    ref = FreshHead(eng)
    bad: list[str] = []
    try:
        for i, st in enumerate(steps):
            if not st.drafted:
                continue
            want = ref.rows(st.committed, st.drafted)
            for j, (got, exp) in enumerate(zip(st.rows, want, strict=False)):
                diff = float(np.max(np.abs(got - exp)))
                if not diff <= atol:
                    bad.append(f"step {i} (prefix {len(st.committed)}), draft position {j}: "
                               f"max |logit diff| {diff:.4g}")
                    break
    finally:
        ref.close()
    return bad

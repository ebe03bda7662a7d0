"""What the heads fed from the target's own decodes share (the MTP layers, an EAGLE-3
or a DFlash head): which of the target's decodes they can read rows from, and how they
start and stop reading them. One place, so the heads agree on what a usable decode is.
"""

from __future__ import annotations

import numpy as np

from specula.core.engine.native.batch import Batch
from specula.core.engine.native.context import Context


def linear_run(batch: Batch) -> tuple[int, list[int], bool]:
    """The batch's first position, its tokens and whether it is one run in sequence 0
    (consecutive positions, one sequence each); a token tree is not, and its tokens are
    then not listed (the positions it commits get zero rows). Call only with tokens."""
    n = batch.n_tokens
    pos = batch.pos[:n]
    linear = bool(np.all(batch.n_seq_id[:n] == 1)) and bool(np.all(np.diff(pos) == 1)) \
        and all(int(batch.seq_ids[i][0]) == 0 for i in range(n))
    toks = [int(t) for t in batch.token[:n]] if linear else []
    return int(pos[0]), toks, linear


class TargetWatch:
    """``watch``: read the target's rows after each of its decodes, or stop (the target
    then skips computing and copying them, and the rows kept are dropped)."""

    target: Context
    watching: bool

    def _observe(self, batch: Batch) -> None:
        """A target decode just ran."""
        raise NotImplementedError

    def _rows_on(self, on: bool) -> None:
        """Whether the target keeps the rows this head reads."""
        raise NotImplementedError

    def _drop_window(self) -> None:
        """Forget the target's rows kept and not yet fed."""
        raise NotImplementedError

    def watch(self, on: bool) -> None:
        if on == self.watching:
            return
        self.watching = on
        obs = self.target.observers
        if on:
            obs.append(self._observe)
        else:
            if self._observe in obs:
                obs.remove(self._observe)
            self._drop_window()
        if self.target.ptr:
            self._rows_on(on)

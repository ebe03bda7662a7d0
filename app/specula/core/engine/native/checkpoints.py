"""What a KV mirror keeps to cut recurrent memory exactly, and what that costs: a saved
recurrent state of sequence 0 (kv.py restores it and replays the kept tokens after it)
and the running costs of saving, restoring and replaying (:class:`KVCosts`), which the
statistics report per reply."""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, fields


@dataclass
class KVCosts:
    """What keeping a recurrent or hybrid cache exact cost, over the mirror's life (all 0
    on attention memory). Subtract two copies for a reply's share."""

    checkpoints: int = 0  # states saved
    checkpoint_bytes: int = 0  # bytes copied into them, all together
    checkpoint_s: float = 0.0  # seconds copying them (host time)
    restores: int = 0  # states put back by a cut
    restore_s: float = 0.0
    # Tokens the cache held and decodes again: replayed by a cut (replay_s: those decodes),
    # or dropped by a rewind to a checkpoint for the caller's next feed (timed there).
    replayed: int = 0
    replay_s: float = 0.0
    from_scratch: int = 0  # cuts that found no checkpoint and replayed from position 0

    def copy(self) -> KVCosts:
        return KVCosts(**{f.name: getattr(self, f.name) for f in fields(self)})

    def since(self, before: KVCosts) -> KVCosts:
        return KVCosts(**{f.name: getattr(self, f.name) - getattr(before, f.name)
                          for f in fields(self)})


class Checkpoint:
    """Sequence 0's recurrent state after its first ``n`` tokens, in a buffer reused
    from one save to the next (the state's size does not change)."""

    def __init__(self) -> None:
        self.n = -1  # -1: holds nothing
        self.size = 0
        self.buf: ctypes.Array[ctypes.c_uint8] | None = None

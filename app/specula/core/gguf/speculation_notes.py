"""What a model is, in lines a person reads: its memory, experts and MTP layers, and what
each means for speculation.

`specula info`, `specula compat` and the app's details pane show the same lines, so
they are worded once here. Whether speculation stays exact never depends on these
facts; its cost does: a rejected draft costs nothing on attention memory and a
state copy plus a replay on recurrent and hybrid memory; a mixture of experts reads
more experts for a verify batch than for one token; MTP layers are a draft that
ships inside the target.
"""

from __future__ import annotations

from specula.core.gguf.memory_kind import MTP_ARCHS, MemoryKind
from specula.core.gguf.model_info import ModelInfo
from specula.core.sizes import byte_size


def memory_note(kind: MemoryKind | None) -> str:
    """One line on what the memory means for speculation."""
    if kind is MemoryKind.RECURRENT:
        return ("recurrent memory: a rejected draft cannot be cut out of the state; speculation "
                "is exact through checkpoints and replay, each rejected step costs a state copy "
                "and a replay; tree drafts run as chains")
    if kind is MemoryKind.HYBRID:
        return ("hybrid memory: speculation is exact through checkpoints and replay; each "
                "rejected step costs a state copy and a replay")
    if kind is MemoryKind.ATTENTION:
        return "attention memory: a rejected draft is cut out of the KV cache exactly, at no cost"
    return "memory kind unknown (no architecture in the header)"


def experts_note(total: int | None, used: int | None) -> str:
    """One line on what mixture-of-experts routing means for speculation."""
    if total is None:
        return "not known"
    if not total:
        return "none (dense: every weight works on every token)"
    active = f"{used} active per token" if used else "active count not given"
    return (f"{total} total, {active}: verifying several drafted tokens reads more experts "
            "than one token does, so drafting gains less than on a dense model")


def draft_memory_note(kind: MemoryKind | None) -> str:
    """One line on what a recurrent or hybrid draft means for speculation."""
    if kind is MemoryKind.RECURRENT:
        return ("recurrent memory: the draft's rejected tokens cannot be cut out of its state, "
                "so after a rejection it restores a checkpoint and is fed the accepted tokens "
                "again (a state copy per drafting step); it holds one sequence, so tree drafts "
                "run as chains")
    if kind is MemoryKind.HYBRID:
        return ("hybrid memory: the draft's rejected tokens cannot be cut out of its recurrent "
                "state, so after a rejection it restores a checkpoint and is fed the accepted "
                "tokens again (a state copy per drafting step)")
    return memory_note(kind)


def draft_experts_note(total: int, used: int | None) -> str:
    """One line on a mixture-of-experts draft."""
    active = f"{used} of {total} active per token" if used else f"{total} experts"
    return (f"{active}: a drafted token costs what its active experts cost, not its whole "
            "size; exactness does not depend on it (the target checks every token)")


def mtp_note(layers: int | None, architecture: str | None) -> str:
    """One line on the model's MTP (NextN) layers."""
    if layers is None:
        return "not known"
    if not layers:
        return "none (drafting needs a draft model or lookup)"
    n = f"{layers} layer" + ("s" if layers != 1 else "")
    if architecture in MTP_ARCHS:
        return f"{n}, a built-in draft, no draft model needed"
    return f"{n} in the file, unused: llama.cpp has no MTP graph for {architecture}"


def recurrent_note(info: ModelInfo) -> str | None:
    """The recurrent state's size per sequence (None on attention-only models)."""
    if not info.recurrent_layers:
        return None
    if info.recurrent_state_bytes is None:
        return f"{info.recurrent_layers} recurrent layers (state size not in the header)"
    return (f"{byte_size(info.recurrent_state_bytes)} per sequence in {info.recurrent_layers} "
            f"of {info.trunk_layers} layers (about the size of one checkpoint)")


def kind_rows(info: ModelInfo) -> list[tuple[str, str]]:
    """(label, text) rows: memory, recurrent state, experts, MTP."""
    rows = [("memory", memory_note(info.memory))]
    state = recurrent_note(info)
    if state:
        rows.append(("recurrent state", state))
    rows.append(("experts", experts_note(info.expert_count, info.expert_used_count)))
    rows.append(("MTP layers", mtp_note(info.nextn_layers, info.architecture)))
    return rows

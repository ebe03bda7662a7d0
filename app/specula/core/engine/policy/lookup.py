"""The "lookup" mode's policy: prompt lookup, then the n-gram cache, and nothing else."""

from __future__ import annotations

from pathlib import Path

from specula.core.engine.config import SpecConfig
from specula.core.engine.policy.adaptive import AdaptivePolicy


class LookupPolicy(AdaptivePolicy):
    """The "lookup" mode: the adaptive policy's cost model and acceptance tables, with
    prompt lookup (then the n-gram cache) as its only source, so it proposes only where
    proposing pays and never costs much more than plain decoding."""

    def __init__(self, cfg: SpecConfig, state_path: Path | None = None) -> None:
        super().__init__(cfg, state_path, allow_draft=False)

"""The n-gram cache of one target on disk: loaded with the target, saved after replies.

One file per target (``<data dir>/ngrams/<hash>.npz``, keyed by the target's
file name and size like the adaptive policy's state), so what one model wrote
never drafts for another tokenizer. Saving happens on a writer thread: the
engine's own thread only copies the table (2.5 MB, about a millisecond), and
the file is written to a temporary name and renamed over the old one, so a
crash mid-write leaves the previous file whole. A file that cannot be read (or
was written by another format) is renamed aside with a notice, and the cache
starts empty: it never stops a model from loading.

``specula ngrams`` lists these files and ``specula ngrams --clear`` deletes them;
deleting the folder by hand is just as good.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from specula.core import files, paths
from specula.core.engine.drafters.ngram_cache import DEFAULT_SLOTS, NgramCache

log = logging.getLogger("specula.engine.ngrams")
FORMAT = 1
SUFFIX = ".npz"


def cache_dir() -> Path:
    return paths.data_dir() / "ngrams"


class NgramStore:
    """A target's :class:`NgramCache` with its file, and what the engine learns into it."""

    def __init__(self, path: Path, label: str, slots: int = DEFAULT_SLOTS) -> None:
        self.path = path
        self.label = label  # the target's file name, shown by ``specula ngrams``
        self.cache = NgramCache(slots)
        self.notice = ""  # a sentence when the file was damaged and set aside
        self.learning = True  # False: replies are not learned (the benchmark isolates runs)
        self._last: list[int] = []  # the sequence learned last (a chat's next turn extends it)
        self._pending: dict[str, np.ndarray] | None = None
        self._pending_learned = 0
        self._lock = threading.Lock()
        self._writer: threading.Thread | None = None
        self._load()

    # -- loading -------------------------------------------------------------

    def _load(self) -> None:
        if not self.path.exists():
            return
        try:
            with np.load(self.path, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
                if meta.get("format") != FORMAT or meta.get("slots") != self.cache.slots:
                    raise ValueError(f"format {meta.get('format')!r} with {meta.get('slots')!r} slots")
                self.cache.load_arrays({k: z[k] for k in ("tag", "tok", "cnt") if k in z.files},
                                       int(meta.get("learned", 0)))
        except Exception as exc:  # any damage: set it aside, start empty, never fail the load
            self.cache.clear()
            try:
                aside = files.set_aside(self.path, str(exc), keep_suffix=True)
                where = f"it was moved to {aside}"
            except OSError as move_exc:
                where = f"it could not be moved aside ({move_exc}) and will be overwritten"
            self.notice = (f"The n-gram cache for {self.label} could not be read ({exc}); "
                           f"{where}, and the cache starts empty.")
            log.warning(self.notice)

    # -- learning ------------------------------------------------------------

    def learn_reply(self, tokens: Sequence[int]) -> None:
        """Learn a finished reply with its prompt, then save in the background.

        The next turn of a chat repeats the earlier turns in its prompt: only what
        follows the part learned last time is counted again, so a long chat does not
        count its first message once per turn.
        """
        if not self.learning or len(tokens) < 2:
            return
        same = 0
        for a, b in zip(self._last, tokens, strict=False):
            if a != b:
                break
            same += 1
        if self.cache.learn(tokens, start=same):
            self._last = list(tokens)
            self.save_soon()

    # -- saving --------------------------------------------------------------

    def save_soon(self) -> None:
        """Hand a copy of the table to the writer thread (one write at a time; a newer
        copy replaces one that has not been written yet)."""
        with self._lock:
            self._pending = self.cache.arrays()
            self._pending_learned = self.cache.learned
            if self._writer is None or not self._writer.is_alive():
                self._writer = threading.Thread(target=self._write_pending, name="ngram-cache-writer",
                                                daemon=True)
                self._writer.start()

    def _write_pending(self) -> None:
        while True:
            with self._lock:
                arrays, learned = self._pending, self._pending_learned
                self._pending = None
                if arrays is None:
                    return
            try:
                self._write(arrays, learned)
            except OSError as exc:
                log.warning("could not save the n-gram cache to %s: %s", self.path, exc)

    def _write(self, arrays: dict[str, np.ndarray], learned: int) -> None:
        meta = {"format": FORMAT, "slots": self.cache.slots, "target": self.label, "learned": learned}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with files.atomic_open(self.path) as f:
            np.savez(f, meta=np.array(json.dumps(meta)), tag=arrays["tag"], tok=arrays["tok"],
                     cnt=arrays["cnt"])

    def flush(self) -> None:
        """Wait until everything learned is on disk (at unload and exit)."""
        writer = self._writer
        if writer is not None:
            writer.join()

    def clear(self) -> None:
        """Forget everything, on disk too."""
        self.flush()
        self.cache.clear()
        self._last = []
        self.path.unlink(missing_ok=True)


@dataclass
class CacheFile:
    path: Path
    target: str
    learned: int
    size: int


def list_caches() -> list[CacheFile]:
    """The n-gram cache files on this machine (a damaged one is listed as unreadable)."""
    out = []
    folder = cache_dir()
    for p in sorted(folder.glob(f"*{SUFFIX}")):
        target, learned = "(unreadable)", 0
        try:
            with np.load(p, allow_pickle=False) as z:
                meta = json.loads(str(z["meta"]))
                target, learned = str(meta.get("target", "?")), int(meta.get("learned", 0))
        except Exception:  # listing must not fail on a damaged file
            pass
        out.append(CacheFile(p, target, learned, p.stat().st_size))
    return out


def clear_caches() -> int:
    """Delete every n-gram cache file (set-aside damaged ones too); how many were removed."""
    n = 0
    for p in cache_dir().glob(f"*{SUFFIX}"):
        p.unlink(missing_ok=True)
        n += 1
    return n

"""A load that fails never breaks the pair in use (issue 45, item 1).

The new target is loaded beside the old pair and swapped in only once it has loaded;
the failure's banner names llama.cpp's own reason. Where the new target does not fit in
memory beside the old pair, the old pair is freed, the new one tried alone, and the old
pair loaded again if that fails too.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, ClassVar

from specula.core.engine.engine import EngineOptions, LoadError
from specula.core.library.load_defaults import LoadDefaults, save_defaults
from specula.gui import engine_worker
from specula.gui.engine_worker import EngineWorker
from tests.gui.conftest import send_and_wait


def _truncated(src: Path, dst: Path) -> Path:
    data = src.read_bytes()
    dst.write_bytes(data[: len(data) - 4096])  # the header whole, the last tensors cut
    return dst


def test_a_failed_load_with_other_options_keeps_the_pair_usable(loaded, tiny, tmp_path, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = loaded
    e, bar = w.ctx.engine, w.chat.model_bar
    target, draft = e.target_info.source, e.draft_info.source
    broken = _truncated(tiny["target"], tmp_path / "broken-target.gguf")
    # Its own context length: the load asks for other engine options than the pair's.
    save_defaults(broken, LoadDefaults(n_ctx=1024))
    with qtbot.waitSignal(e.load_failed, timeout=60000) as failed:
        bar.choose_target(str(broken))
    kind, message = failed.args
    assert kind == "target"
    # llama.cpp's own reason, not a list of possible causes
    assert "not within the file bounds" in message
    banner = w.chat.banner
    assert not banner.isHidden() and any("not within the file bounds" in s
                                         for s in banner.sentences)
    # the old pair: still what the client, the header and the engine hold
    assert e.target_info.source == target and e.draft_info.source == draft
    assert "tiny-target" in bar.status.full_text()
    worker_engine = e._worker._engine  # the worker is idle: its load answered
    assert worker_engine.has_target and worker_engine.has_draft
    assert worker_engine.target_info.source == target
    # ... and usable: a reply comes, drafted by the old draft
    done = send_and_wait(qtbot, w, "Hello")
    assert done.text and done.stats.drafted > 0


class _FakeEngine:
    """An engine whose target load runs out of memory while another engine holds one."""

    alive: ClassVar[list[_FakeEngine]] = []
    too_big_alone = False

    def __init__(self, options: EngineOptions) -> None:
        self.options = options
        self.target_info: Any = None
        self.draft_info: Any = None
        self.compat: Any = None
        self.backend, self.n_threads, self.mtp_layers, self.n_ctx = "CPU", 1, 0, options.n_ctx
        self.ngrams = None
        self.head_info: Any = None  # no draft head in these tests
        self.closed = False
        _FakeEngine.alive.append(self)

    @property
    def has_target(self) -> bool:
        return self.target_info is not None

    @property
    def has_draft(self) -> bool:
        return self.draft_info is not None

    def load_target(self, path: str, progress: Any = None) -> Any:
        others = [x for x in _FakeEngine.alive if x is not self and x.has_target]
        if path.endswith("big.gguf") and (others or _FakeEngine.too_big_alone):
            raise LoadError(f"{path}: llama.cpp could not load this model: failed to "
                            "allocate CPU buffer", "unable to allocate CPU buffer")
        self.target_info = type("Info", (), {"source": path})()
        return self.target_info

    def load_draft(self, path: str, progress: Any = None, measuring: Any = None) -> Any:
        self.draft_info = type("Info", (), {"source": path})()
        self.compat = object()
        return self.compat

    def close(self) -> None:
        self.target_info = self.draft_info = None
        self.closed = True
        _FakeEngine.alive.remove(self)


def _worker(monkeypatch) -> tuple[EngineWorker, dict[str, list[Any]]]:  # type: ignore[no-untyped-def]
    _FakeEngine.alive = []
    _FakeEngine.too_big_alone = False
    monkeypatch.setattr(engine_worker, "Engine", _FakeEngine)
    # the fake paths name no file: the worker's header read (is it a draft head?) answers "no"
    monkeypatch.setattr(engine_worker, "read_model_info", lambda path: None)
    monkeypatch.setattr(engine_worker, "is_head", lambda info: False)
    w = EngineWorker()
    heard: dict[str, list[Any]] = {"loaded": [], "failed": [], "notice": [], "draft": []}
    w.target_loaded.connect(lambda info, *_a: heard["loaded"].append(info.source))
    w.load_failed.connect(lambda kind, msg: heard["failed"].append(msg))
    w.notice.connect(heard["notice"].append)
    w.draft_loaded.connect(lambda info, _r: heard["draft"].append(info.source))
    return w, heard


def test_a_target_too_big_beside_the_pair_is_loaded_alone(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    w, heard = _worker(monkeypatch)
    w.configure(EngineOptions(n_ctx=2048))
    w.load_target("/m/old.gguf", threading.Event())
    w.load_draft("/m/draft.gguf", threading.Event())
    w.configure(EngineOptions(n_ctx=1024))  # other options: a new engine beside the old
    w.load_target("/m/big.gguf", threading.Event())
    assert heard["loaded"] == ["/m/old.gguf", "/m/big.gguf"] and not heard["failed"]
    assert "did not fit in memory beside the models in use" in heard["notice"][0]
    assert [x.target_info.source for x in _FakeEngine.alive] == ["/m/big.gguf"]


def test_a_target_too_big_even_alone_gives_the_old_pair_back(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    w, heard = _worker(monkeypatch)
    w.configure(EngineOptions(n_ctx=2048))
    w.load_target("/m/old.gguf", threading.Event())
    w.load_draft("/m/draft.gguf", threading.Event())
    _FakeEngine.too_big_alone = True
    w.load_target("/m/big.gguf", threading.Event())
    assert "does not fit in memory beside the models in use" in heard["failed"][0]
    assert "The models in use were loaded again" in heard["failed"][0]
    (engine,) = _FakeEngine.alive
    assert engine.target_info.source == "/m/old.gguf" and engine.draft_info.source == "/m/draft.gguf"
    assert engine.options.n_ctx == 2048  # with the options they had
    assert heard["loaded"][-1] == "/m/old.gguf" and heard["draft"][-1] == "/m/draft.gguf"


def test_the_draft_already_loaded_is_not_loaded_or_measured_again(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """Item 7 at the worker: a second request for the draft the target already has answers
    at once, without a load (and so without "Measuring the pair")."""
    w, heard = _worker(monkeypatch)
    loads: list[str] = []
    real = _FakeEngine.load_draft

    def counted(self, path: str, progress: Any = None, measuring: Any = None) -> Any:  # type: ignore[no-untyped-def]
        loads.append(path)
        return real(self, path, progress, measuring)

    monkeypatch.setattr(_FakeEngine, "load_draft", counted)
    w.load_target("/m/old.gguf", threading.Event())
    w.load_draft("/m/draft.gguf", threading.Event())
    w.load_draft("/m/draft.gguf", threading.Event())
    assert loads == ["/m/draft.gguf"] and heard["draft"] == ["/m/draft.gguf"] * 2
    w.load_draft("/m/other-draft.gguf", threading.Event())  # another draft does load
    assert loads == ["/m/draft.gguf", "/m/other-draft.gguf"]

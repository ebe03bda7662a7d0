"""Screenshots of Discover, My Models and Downloads with real Qwen/Gemma GGUF files.

Run from the repository root::

    PYTHONPATH=app python -m tests.gui.models.screenshots docs/screenshots

The files in ``~/.cache/specula-bench`` (or ``SPECULA_BENCH_DIR``) are served,
memory-mapped and never copied into the repository, by the local fake hub
under repositories named as on huggingface.co; the same folder is added to
the library as an extra folder (indexed in place). The app runs offscreen in
a throw-away SPECULA_HOME with the real engine (Qwen2.5-Coder 1.5B target,
0.5B draft). Lives under tests/ because it needs the fake hub.
"""

from __future__ import annotations

import hashlib
import mmap
import os
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

from tests.fixtures.fake_hub import FakeFile, FakeHub

BENCH = Path(os.environ.get("SPECULA_BENCH_DIR", Path.home() / ".cache/specula-bench"))
SIZE = (1440, 900)
Q15 = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
Q05 = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
GEMMA = "gemma-3-270m-q4_k_m.gguf"
CARDS = {
    "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF":
        "Qwen2.5-Coder is the latest series of Code-Specific Qwen large language models. "
        "This repo contains the instruction-tuned 1.5B Qwen2.5-Coder model in the GGUF format.",
    "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF":
        "Qwen2.5-Coder is the latest series of Code-Specific Qwen large language models. "
        "This repo contains the instruction-tuned 0.5B Qwen2.5-Coder model in the GGUF format.",
    "ggml-org/gemma-3-270m-GGUF":
        "Gemma 3 270M, a compact model from Google DeepMind, converted to GGUF for llama.cpp.",
}


class DiskFile(FakeFile):
    """A served file backed by a memory map; its sha256 is computed once, when asked."""

    def __init__(self, path: Path) -> None:
        with path.open("rb") as fh:
            data = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
        super().__init__(data)  # type: ignore[arg-type]
        self._sha: str | None = None
        self._lock = threading.Lock()

    @property
    def sha256(self) -> str:
        with self._lock:
            if self._sha is None:
                self._sha = hashlib.sha256(self.data).hexdigest()
            return self._sha

    @property
    def git_oid(self) -> str:
        return hashlib.sha1(self.sha256.encode()).hexdigest()


def serve() -> FakeHub:
    hub = FakeHub().start()
    files = {name: DiskFile(BENCH / name) for name in (Q15, Q05, GEMMA)}
    hub.add_repo("Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF", {Q15: files[Q15]},
                 downloads=48_213, likes=96)
    hub.add_repo("Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", {Q05: files[Q05]},
                 downloads=31_877, likes=64)
    hub.add_repo("ggml-org/gemma-3-270m-GGUF", {GEMMA: files[GEMMA]}, downloads=12_480, likes=41)
    hub.add_repo("example-org/Llama-3.2-1B-Instruct-GGUF", {"llama-3.2-1b-instruct-q4_k_m.gguf":
                 files[GEMMA]}, downloads=9_120, likes=12, private=True)
    for repo_id, text in CARDS.items():
        hub.repos[repo_id].files["README.md"] = FakeFile(f"# {repo_id}\n\n{text}\n".encode(),
                                                         lfs=False)
    hub.token = "not-set-in-this-session"
    return hub


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0] if args else "docs/screenshots").resolve()
    out.mkdir(parents=True, exist_ok=True)
    missing = [n for n in (Q15, Q05, GEMMA) if not (BENCH / n).is_file()]
    if missing:
        print(f"missing in {BENCH}: {', '.join(missing)}", file=sys.stderr)
        return 2
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    work = Path(tempfile.mkdtemp(prefix="specula-model-shots-"))
    os.environ["SPECULA_HOME"] = str(work / "home")
    os.environ["HF_HOME"] = str(work / "hf")
    os.environ["NO_PROXY"] = "127.0.0.1,localhost"
    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE"):
        os.environ.pop(var, None)
    hub = serve()
    os.environ["HF_ENDPOINT"] = hub.url

    from specula.core.settings import Settings

    settings = Settings()
    settings.extra_model_dirs = [str(BENCH)]
    settings.save()

    from PySide6.QtCore import QEventLoop
    from PySide6.QtWidgets import QApplication

    from specula.gui.app import create_window, ensure_qapp

    app = ensure_qapp()

    def wait(cond: Callable[[], bool], timeout: float = 300.0) -> None:
        end = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > end:
                raise TimeoutError("the app did not get there in time")
            app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 50)

    window = create_window(str(BENCH / Q15), str(BENCH / Q05))
    window.resize(*SIZE)
    window.show()
    ctx = window.ctx
    wait(lambda: ctx.engine.has_draft)

    def shot(name: str) -> None:
        end = time.monotonic() + 0.6
        while time.monotonic() < end:
            app.processEvents()
        path = out / f"{name}.png"
        window.grab().save(str(path))
        print(path)

    # Downloads: one done, one paused, one failed (401), one running.
    downloads = ctx.downloads
    downloads.start("ggml-org/gemma-3-270m-GGUF", GEMMA)
    hub.stall_after[Q15] = 310_000_000
    downloads.start("Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF", Q15)
    wait(lambda: hub.stalled.is_set())
    downloads.pause("Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF", Q15)
    hub.release.set()
    wait(lambda: not downloads.is_running("Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF", Q15))
    wait(lambda: not downloads.is_running("ggml-org/gemma-3-270m-GGUF", GEMMA))
    downloads.start("example-org/Llama-3.2-1B-Instruct-GGUF", "llama-3.2-1b-instruct-q4_k_m.gguf")
    wait(lambda: not downloads.is_running("example-org/Llama-3.2-1B-Instruct-GGUF",
                                          "llama-3.2-1b-instruct-q4_k_m.gguf"))
    hub.stalled, hub.release = threading.Event(), threading.Event()
    hub.stall_after[Q05] = 212_000_000
    downloads.start("Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", Q05)
    wait(lambda: hub.stalled.is_set())

    # Discover: the 1.5B repository with its badges and drafts.
    discover = window.show_page("discover")
    discover.search.setText("qwen")
    discover.run_search()
    wait(lambda: discover.results_model.rowCount() >= 2)
    row = [r.repo_id for r in discover.results_model.results].index(
        "Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF")
    discover.results.selectRow(row)
    wait(lambda: discover.files_model.rowCount() > 0 and discover.files_model.busy_count() == 0)
    wait(lambda: discover.drafts.status.text().startswith(("0 in", "1 in", "2 in", "No ")))
    shot("discover-0.5b")
    row = [r.repo_id for r in discover.results_model.results].index(
        "Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF")
    discover.results.selectRow(row)
    wait(lambda: discover.files_model.rowCount() > 0 and discover.files_model.busy_count() == 0)
    wait(lambda: discover.drafts.result is not None and "hub" in discover.drafts.status.text()
             and discover.drafts._task is not None and discover.drafts._task.done)
    shot("discover")

    library = window.show_page("models")
    wait(lambda: not ctx.library.scanning and library.proxy.rowCount() >= 4)
    library.select_path(str(BENCH / Q15))
    wait(lambda: "draft(s) for it" in library.details.pairs_status.text()
             or "No library" in library.details.pairs_status.text())
    shot("my-models")

    downloads_page = window.show_page("downloads")
    downloads_page.select("Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", Q05)
    shot("downloads")

    from specula.gui import theme

    theme.apply("light")
    window.show_page("discover")
    shot("discover-light")
    theme.apply("dark")
    hub.release.set()
    downloads.pause("Qwen/Qwen2.5-Coder-0.5B-Instruct-GGUF", Q05)
    ctx.close()
    hub.stop()
    QApplication.processEvents()
    return 0


if __name__ == "__main__":
    sys.exit(main())

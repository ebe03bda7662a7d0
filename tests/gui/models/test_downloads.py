"""The Downloads page against the fake hub: progress to done, pause/resume, cancel, checksum, restart."""

from __future__ import annotations

from pathlib import Path

from specula.core.hub.download import DownloadState
from specula.core.hub.partial_files import part_file
from specula.gui.downloads.manager import DownloadManager
from specula.gui.downloads.page import DownloadsPage
from tests.fixtures.fake_hub import STALL_GUARD_S, FakeHub
from tests.fixtures.hub_repos import SMALL_FILE, SMALL_REPO, SPLIT_FIRST, TARGET_FILE, TARGET_REPO


def _page(ctx, qtbot) -> DownloadsPage:  # type: ignore[no-untyped-def]
    ctx.downloads.options = {"chunk_size": 4096, "progress_interval": 0.0}
    page = DownloadsPage(ctx)
    qtbot.addWidget(page)
    page.show()
    return page


def _state(ctx, repo: str, name: str) -> DownloadState:  # type: ignore[no-untyped-def]
    item = ctx.downloads.item(repo, name)
    assert item is not None
    return item.state


def test_download_with_progress_to_done(ctx, fake_hub: FakeHub, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = _page(ctx, qtbot)
    seen: list[tuple[str, str]] = []
    model = ctx.downloads.model
    model.dataChanged.connect(lambda a, _b, _r=None: seen.append(
        (model.items[a.row()].record.state, model.items[a.row()].status_text())))
    with (qtbot.waitSignal(ctx.library.scanned, timeout=30000),  # the library picks it up
          qtbot.waitSignal(ctx.downloads.download_finished, timeout=30000) as done):
        ctx.downloads.start(TARGET_REPO, TARGET_FILE)
    path = Path(done.args[2])
    assert path.is_file() and path == ctx.library.models_dir / TARGET_REPO / TARGET_FILE
    states = [s for s, _t in seen]
    assert "running" in states and "verifying" in states and states[-1] == "done"
    assert any(" left" in t and "/s" in t for _s, t in seen)  # speed and ETA while running
    assert any("Checking the sha256" in t for _s, t in seen)
    row = page.row(TARGET_REPO, TARGET_FILE)
    assert row.status.text().startswith("Done:")
    assert row.reveal_button.isEnabled() and not row.pause_button.isEnabled()
    assert any(m.path == path for m in ctx.library.models)


def test_pause_resume_and_restart(ctx, fake_hub: FakeHub, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = _page(ctx, qtbot)
    fake_hub.stall_after[TARGET_FILE] = 30_000
    ctx.downloads.start(TARGET_REPO, TARGET_FILE)
    assert fake_hub.stalled.wait(STALL_GUARD_S)
    row = page.row(TARGET_REPO, TARGET_FILE)
    qtbot.waitUntil(lambda: row.pause_button.isEnabled(), timeout=60000)
    row.pause_button.click()
    fake_hub.release.set()
    qtbot.waitUntil(lambda: _state(ctx, TARGET_REPO, TARGET_FILE) is DownloadState.PAUSED,
                    timeout=10000)
    final = ctx.library.models_dir / TARGET_REPO / TARGET_FILE
    kept = part_file(final).stat().st_size
    assert 0 < kept < len(fake_hub.repos[TARGET_REPO].files[TARGET_FILE].data)
    assert not final.exists()
    assert row.resume_button.isEnabled() and "Paused at" in row.status.text()

    # "after a restart": a new manager reads the saved list; the paused download is still there
    again = DownloadManager(ctx.library.models_dir)
    item = again.item(TARGET_REPO, TARGET_FILE)
    assert item is not None and item.state is DownloadState.PAUSED
    again.deleteLater()

    with qtbot.waitSignal(ctx.downloads.download_finished, timeout=30000):
        row.resume_button.click()
    assert fake_hub.requests_to("/cdn/")[-1].headers["range"] == f"bytes={kept}-"
    assert final.is_file() and _state(ctx, TARGET_REPO, TARGET_FILE) is DownloadState.DONE


def test_cancel_deletes_the_part(ctx, fake_hub: FakeHub, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = _page(ctx, qtbot)
    fake_hub.stall_after[SMALL_FILE] = 20_000
    ctx.downloads.start(SMALL_REPO, SMALL_FILE)
    assert fake_hub.stalled.wait(STALL_GUARD_S)
    row = page.row(SMALL_REPO, SMALL_FILE)
    qtbot.waitUntil(lambda: row.cancel_button.isEnabled(), timeout=60000)
    row.cancel_button.click()
    fake_hub.release.set()
    qtbot.waitUntil(lambda: _state(ctx, SMALL_REPO, SMALL_FILE) is DownloadState.CANCELLED,
                    timeout=10000)
    folder = ctx.library.models_dir / SMALL_REPO
    assert not any(folder.iterdir())
    assert "Cancelled" in row.status.text()
    assert row.resume_button.text() == "Retry"


def test_checksum_failure_is_shown(ctx, fake_hub: FakeHub, qtbot) -> None:  # type: ignore[no-untyped-def]
    page = _page(ctx, qtbot)
    fake_hub.repos[SMALL_REPO].files[SMALL_FILE].claimed_sha256 = "0" * 64
    with qtbot.waitSignal(ctx.downloads.download_failed, timeout=30000) as failed:
        ctx.downloads.start(SMALL_REPO, SMALL_FILE)
    assert "checksum mismatch" in failed.args[2]
    row = page.row(SMALL_REPO, SMALL_FILE)
    text = row.status.text()
    assert text.startswith("Failed: checksum mismatch") and "download it again" in text
    assert row.resume_button.text() == "Retry" and row.resume_button.isEnabled()


def test_http_errors_and_split_models(ctx, fake_hub: FakeHub, qtbot) -> None:  # type: ignore[no-untyped-def]
    _page(ctx, qtbot)
    with qtbot.waitSignal(ctx.downloads.download_failed, timeout=30000) as failed:
        ctx.downloads.start("specula-test/Private-GGUF", "secret-q4_0.gguf")
    assert "needs access (401)" in failed.args[2]
    with qtbot.waitSignal(ctx.downloads.download_finished, timeout=30000) as done:
        ctx.downloads.start(TARGET_REPO, SPLIT_FIRST.replace("00001", "00002"))  # any part
    assert done.args[1] == SPLIT_FIRST
    folder = ctx.library.models_dir / TARGET_REPO
    assert len(list(folder.glob("*-of-00003.gguf"))) == 3


def test_nav_badge_while_running(make_window, fake_hub: FakeHub, qtbot) -> None:  # type: ignore[no-untyped-def]
    w = make_window()
    nav_item = w.nav.item(next(i for i in range(w.nav.count())
                           if w.nav.item(i).text() == "Downloads"))
    fake_hub.stall_after[SMALL_FILE] = 10_000
    w.ctx.downloads.start(SMALL_REPO, SMALL_FILE)
    assert nav_item.text() == "Downloads (1)"
    assert fake_hub.stalled.wait(STALL_GUARD_S)
    fake_hub.release.set()
    qtbot.waitUntil(lambda: nav_item.text() == "Downloads", timeout=15000)


def test_every_row_has_its_own_buttons(ctx, fake_hub: FakeHub, qtbot) -> None:  # type: ignore[no-untyped-def]
    """A running download is actionable where it is shown; a button acts on its own row."""
    page = _page(ctx, qtbot)
    with qtbot.waitSignal(ctx.downloads.download_finished, timeout=30000):
        ctx.downloads.start(SMALL_REPO, SMALL_FILE)
    fake_hub.stall_after[TARGET_FILE] = 30_000
    ctx.downloads.start(TARGET_REPO, TARGET_FILE)
    assert fake_hub.stalled.wait(STALL_GUARD_S)
    done_row, running = page.row(SMALL_REPO, SMALL_FILE), page.row(TARGET_REPO, TARGET_FILE)
    assert running is not None and done_row is not None and running is not done_row
    qtbot.waitUntil(lambda: running.pause_button.isEnabled(), timeout=60000)  # nothing selected
    assert running.cancel_button.isEnabled() and not running.pause_button.isHidden()
    assert running.resume_button.isHidden()  # one of Pause / Resume at a time
    assert done_row.pause_button.isHidden() and done_row.resume_button.isHidden()
    assert done_row.reveal_button.isEnabled()
    assert done_row.remove_button.isEnabled() and not running.remove_button.isEnabled()
    running.pause_button.click()
    fake_hub.release.set()
    qtbot.waitUntil(lambda: _state(ctx, TARGET_REPO, TARGET_FILE) is DownloadState.PAUSED,
                    timeout=10000)
    assert _state(ctx, SMALL_REPO, SMALL_FILE) is DownloadState.DONE  # the other row untouched
    running = page.row(TARGET_REPO, TARGET_FILE)
    assert running.resume_button.isEnabled() and running.resume_button.text() == "Resume"
    assert running.pause_button.isHidden() and not running.resume_button.isHidden()
    page.row(SMALL_REPO, SMALL_FILE).remove_button.click()
    assert page.row(SMALL_REPO, SMALL_FILE) is None and page.row(TARGET_REPO, TARGET_FILE)
    page.row(TARGET_REPO, TARGET_FILE).cancel_button.click()
    assert _state(ctx, TARGET_REPO, TARGET_FILE) is DownloadState.CANCELLED

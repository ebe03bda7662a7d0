"""Screenshots of the chat's everyday habits: a chat past its context with an attachment,
a message's menu, the presets dialog, folders, and My Models' load-defaults gear.

Run under a display that can grab pop-up menus (Xvfb), from the repository root::

    xvfb-run -s "-screen 0 1280x800x24" env PYTHONPATH=app \\
        python -m specula_tools.habit_screenshots docs/screenshots --pair real

``--pair real`` loads the Qwen2.5-Coder 1.5B target and 0.5B draft from
``~/.cache/specula-bench``; ``--pair tiny`` builds the tiny test models. The
target gets a small context as its own load default (``--ctx``), so a few
turns and an attached file overflow it; the app runs in a throw-away
SPECULA_HOME. Writes ``chat-overflow``, ``chat-message-menu``,
``chat-presets`` and ``models-load-defaults`` at ``--size`` (default 1280x800).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

BENCH = Path(os.environ.get("SPECULA_BENCH_DIR", Path.home() / ".cache/specula-bench"))
REAL = ("qwen2.5-coder-1.5b-instruct-q4_k_m.gguf", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
TURNS = ["What does `config_dir` in the attached file return, in one sentence?",
         "Add a `logs_dir()` function like `cache_dir()`; show only the new function.",
         "Which function would you test first, in one sentence?",
         "Write that test with pytest, in a few lines.",
         "Name one risk of creating folders when a path is asked for, in one sentence.",
         "Suggest a clearer name for `_ensure`, in one line."]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--pair", choices=("real", "tiny"), default="real")
    p.add_argument("--ctx", type=int, default=768)
    p.add_argument("--max-tokens", type=int, default=64)
    p.add_argument("--size", default="1280x800")
    a = p.parse_args(sys.argv[1:] if argv is None else argv)
    width, height = (int(x) for x in a.size.split("x"))
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="specula-habits-"))
    os.environ["SPECULA_HOME"] = str(work / "home")
    os.environ["HF_ENDPOINT"] = "http://127.0.0.1:9"  # nothing listens: no hub
    if a.pair == "real":
        target, draft = BENCH / REAL[0], BENCH / REAL[1]
    else:
        from specula_tools.tiny_models import build_family

        fam = build_family(work / "models")
        target, draft = fam["target"], fam["draft"]

    from specula.core.library.load_defaults import LoadDefaults, save_defaults
    from specula.core.settings import Settings

    settings = Settings()
    settings.extra_model_dirs = [str(target.parent)]
    settings.generation.max_tokens = a.max_tokens
    settings.n_threads = 1
    settings.save()
    save_defaults(target, LoadDefaults(n_ctx=a.ctx, draft=str(draft), mode="adaptive"))

    from PySide6.QtCore import QPoint

    from specula.gui.app import create_window, ensure_qapp
    from specula_tools.qt_waits import Waits, grab

    def shoot(name: str) -> None:  # once the window below is up
        settle()
        print(grab(window, out / f"{name}-{width}x{height}.png"))

    app = ensure_qapp()

    waits = Waits(app, timeout=900.0, settle_s=0.6)
    wait, settle = waits.wait, waits.settle

    window = create_window(str(target))
    window.resize(width, height)
    window.move(0, 0)
    window.show()
    ctx = window.ctx
    page = window.chat
    wait(lambda: ctx.engine.has_draft and page.meter.ready)
    store = ctx.store
    work_folder = store.create_folder("Work")
    ideas = store.create_folder("Ideas")
    for title, folder in (("Release notes draft", work_folder.id), ("Regex for log lines", None),
                          ("Trip packing list", ideas.id), ("SQL index question", work_folder.id)):
        c = store.create(title)
        store.add_message(c.id, "user", title)
        store.move(c.id, folder)
    page.conversations.reload()
    page.new_chat()
    page.side.presets.choose("Document editing")
    page.settings_panel.max_tokens.setValue(a.max_tokens)
    page.settings_panel.spec.mode.setCurrentIndex(page.settings_panel.spec.mode.findData("adaptive"))
    attached = Path(__file__).resolve().parents[1] / "core" / "paths.py"
    page.attach_bar.add_file(str(attached))
    for text in TURNS:
        page.composer.setPlainText(text)
        page.send_button.click()
        wait(lambda: page.reply is None and not ctx.engine.busy)
        if page.banner.isVisible():
            break
    page.ctx.store.move(page.conversation_id, work_folder.id)
    page.conversations.reload()
    page.composer.setPlainText("And a test for logs_dir?")
    wait(lambda: "+" in page.context_bar.tokens.text(), 10)
    page.transcript.verticalScrollBar().setValue(0)
    shoot("chat-overflow")

    msg = page.transcript.messages[-1]
    page.transcript.ensureWidgetVisible(msg)
    settle()
    page.actions.show_menu(msg, msg.more_button.mapToGlobal(QPoint(0, msg.more_button.height())))
    shoot("chat-message-menu")
    if page.actions.last_menu is not None:
        page.actions.last_menu.close()

    from specula.gui.chat.presets_dialog import PresetsDialog

    dialog = PresetsDialog(page.settings_panel, window)
    dialog.show()
    dialog.list.setCurrentRow(0)
    dialog.move(window.geometry().center() - dialog.rect().center())
    shoot("chat-presets")
    dialog.close()

    from specula.gui.models.load_defaults_dialog import LoadDefaultsDialog

    ctx.page_requested.emit("models")
    wait(lambda: not ctx.library.scanning and ctx.library.find(str(target)) is not None)
    local = ctx.library.find(str(target))
    from specula.gui.models.library_page import LibraryPage

    library_page = window.findChild(LibraryPage)
    if library_page is not None and local is not None:
        for r in range(library_page.proxy.rowCount()):
            library_page.table.selectRow(r)
            if library_page.selected() == local:
                break
    if local is not None:
        gear = LoadDefaultsDialog(local, ctx.library.models, window)
        gear.show()
        gear.move(window.geometry().center() - gear.rect().center())
        shoot("models-load-defaults")
        gear.close()
    ctx.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

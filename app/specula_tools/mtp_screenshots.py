"""Screenshots of the built-in MTP draft in the app: the picker, and a reply it drafted.

Run under a virtual X server (the picker is a popup: the screen is grabbed)::

    PYTHONPATH=app QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1024x700x24" \\
        python -m specula_tools.mtp_screenshots docs/screenshots

writes ``chat-mtp-picker-1024x700.png`` and ``chat-mtp-reply-1024x700.png`` with the
tiny qwen35 that has one NextN layer (:mod:`specula_tools.tiny_families`), in a
throw-away SPECULA_HOME.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

SIZE = (1024, 700)


def main(out_dir: str) -> int:
    os.environ["SPECULA_HOME"] = tempfile.mkdtemp(prefix="specula-mtp-shots-")
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from specula.gui.app import create_window
    from specula_tools.tiny_families import build_qwen35_mtp

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model = build_qwen35_mtp(Path(os.environ["SPECULA_HOME"]) / "Qwen3.5-tiny-MTP-F32.gguf")
    app = QApplication(sys.argv)
    app.setOrganizationName("Specula")
    app.setApplicationName("Specula")
    w: Any = create_window(str(model))
    w.resize(*SIZE)
    w.show()
    name = f"{SIZE[0]}x{SIZE[1]}.png"

    def loaded() -> None:
        bar = w.chat.model_bar
        if not (w.ctx.engine.has_target and bar.draft_model.rowCount() > 1):
            QTimer.singleShot(200, loaded)
            return
        bar.draft_combo.showPopup()
        QTimer.singleShot(800, picker)

    def picker() -> None:
        app.primaryScreen().grabWindow(0, 0, 0, *SIZE).save(str(out / f"chat-mtp-picker-{name}"))
        w.chat.model_bar.draft_combo.hidePopup()
        w.chat.settings_panel.max_tokens.setValue(60)
        form = w.chat.settings_panel.spec
        form.mode.setCurrentIndex(form.mode.findData("mtp"))
        w.chat.reply_finished.connect(lambda _done: QTimer.singleShot(1500, reply))
        w.chat.composer.setPlainText("hello world, the model and the token")
        w.chat.send_button.click()

    def reply() -> None:
        w.grab().save(str(out / f"chat-mtp-reply-{name}"))
        w.close()
        w.ctx.close()
        app.quit()

    QTimer.singleShot(500, loaded)
    return int(app.exec())


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default="docs/screenshots", help="where the PNGs go")
    sys.exit(main(ap.parse_args().out_dir))

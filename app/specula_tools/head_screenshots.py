"""Screenshots of draft heads in the app: the picker offering them, and a reply one drafted.

Run under a virtual X server (the picker is a popup: the screen is grabbed)::

    PYTHONPATH=app QT_QPA_PLATFORM=xcb xvfb-run -a -s "-screen 0 1024x700x24" \\
        python -m specula_tools.head_screenshots docs/screenshots

writes ``picker-heads.png`` (the tiny llama target, with a fitting EAGLE-3 and DFlash
head and a DSpark head that reads a layer the target lacks in its library) and
``chat-head-reply-1024x700.png`` (a reply drafted by the EAGLE-3 head), in a throw-away
SPECULA_HOME.
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
    home = Path(tempfile.mkdtemp(prefix="specula-head-shots-"))
    os.environ["SPECULA_HOME"] = str(home)
    from PySide6.QtWidgets import QApplication

    from specula.gui.app import create_window
    from specula_tools.qt_waits import Waits
    from specula_tools.tiny_heads import build_head, spec_for
    from specula_tools.tiny_models import TARGET, build_tiny_model

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    models = home / "models"
    target = build_tiny_model(models / "tiny" / "tiny-llama-F32.gguf", TARGET)
    heads = models / "tiny-heads"
    build_head(heads / "tiny-llama-eagle3.gguf", spec_for("eagle3", TARGET.n_layers))
    build_head(heads / "tiny-llama-dflash.gguf", spec_for("dflash", TARGET.n_layers))
    build_head(heads / "tiny-llama-dspark-l9.gguf", spec_for("dspark", TARGET.n_layers, layer_ids=(0, 9)))
    app = QApplication(sys.argv)
    app.setOrganizationName("Specula")
    app.setApplicationName("Specula")
    waits = Waits(app, timeout=120.0, settle_s=0.8)
    w: Any = create_window(str(target))
    w.resize(*SIZE)
    w.show()
    bar = w.chat.model_bar
    waits.wait(lambda: w.ctx.engine.has_target and not w.ctx.library.scanning)
    bar.refresh_drafts()
    waits.wait(lambda: bar.draft_entry(str(heads / "tiny-llama-dspark-l9.gguf")) is not None)
    eagle = bar.draft_entry(str(heads / "tiny-llama-eagle3.gguf"))
    bar.draft_combo.activated.emit(eagle.row())
    waits.wait(lambda: w.ctx.engine.has_head)
    waits.settle()
    bar.draft_combo.showPopup()
    waits.settle()
    app.primaryScreen().grabWindow(0, 0, 0, *SIZE).save(str(out / "picker-heads.png"))
    bar.draft_combo.hidePopup()
    w.chat.settings_panel.max_tokens.setValue(60)
    done: list[object] = []
    w.chat.reply_finished.connect(done.append)
    w.chat.composer.setPlainText("hello world, the model and the token")
    w.chat.send_button.click()
    waits.wait(lambda: bool(done))
    waits.settle(1.5)
    w.grab().save(str(out / f"chat-head-reply-{SIZE[0]}x{SIZE[1]}.png"))
    w.close()
    w.ctx.close()
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default="docs/screenshots", help="where the PNGs go")
    sys.exit(main(ap.parse_args().out_dir))

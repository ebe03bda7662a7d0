"""Screenshots of a first run and of pairing in My Models, with tiny models on a fake home.

Run under Xvfb, from the repository root (the tiny models' specs are the tests')::

    xvfb-run -s "-screen 0 1280x800x24" env PYTHONPATH=app \\
        python -m specula_tools.first_run_screenshots docs/screenshots

A throw-away home holds LM Studio's models folder (a "7B", "1.5B" and "0.5B"
of one family and a "0.5B" with another tokenizer) and a Hugging Face cache
(one file); SPECULA_HOME is empty. Writes ``first-run-welcome`` (the welcome
screen offering the two folders), ``models-pairing`` (My Models with the
"1.5B" loaded as the target: the list's "With target" column and the
incompatible model's details with why and the fit estimate) and
``models-load-defaults-pairing`` (its "Draft to pair" list opened) at ``--size``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

LM_FILES = {  # spec key -> (repository, file) under LM Studio's models folder
    "big": ("lmstudio-community/Tiny-Coder-7B-Instruct-GGUF", "tiny-coder-7b-instruct-q4_k_m.gguf"),
    "medium": ("lmstudio-community/Tiny-Coder-1.5B-Instruct-GGUF",
               "tiny-coder-1.5b-instruct-q4_k_m.gguf"),
    "small": ("lmstudio-community/Tiny-Coder-0.5B-Instruct-GGUF",
              "tiny-coder-0.5b-instruct-q4_k_m.gguf"),
    "zebra": ("other-org/Zebra-0.5B-GGUF", "zebra-0.5b-q4_k_m.gguf"),
}


def _home(work: Path) -> dict[str, Path]:
    """The fake home: LM Studio's folder with four models, a Hugging Face cache with one."""
    try:
        from tests.fixtures.hub_repos import BIG, MEDIUM, SMALL, ZEBRA
    except ImportError as exc:
        raise SystemExit("run from the repository root (the specs are tests/fixtures/)") from exc
    from specula_tools.tiny_models import build_tiny_model

    built = work / "built"
    built.mkdir(parents=True)
    specs = {"big": BIG, "medium": MEDIUM, "small": SMALL, "zebra": ZEBRA}
    lm = work / "home" / ".lmstudio" / "models"
    out: dict[str, Path] = {}
    for key, (repo, name) in LM_FILES.items():
        src = build_tiny_model(built / f"{key}.gguf", specs[key])
        dest = lm / repo / name
        dest.parent.mkdir(parents=True)
        shutil.copyfile(src, dest)
        out[key] = dest
    repo_dir = work / "hf" / "hub" / "models--Tiny--Tiny-Coder-0.5B-Instruct-GGUF"
    blob = repo_dir / "blobs" / "5e1f0c"
    blob.parent.mkdir(parents=True)
    shutil.copyfile(out["small"], blob)
    link = repo_dir / "snapshots" / "main" / "tiny-coder-0.5b-instruct-q8_0.gguf"
    link.parent.mkdir(parents=True)
    os.symlink(os.path.relpath(blob, link.parent), link)
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out")
    p.add_argument("--size", default="1280x800")
    a = p.parse_args(sys.argv[1:] if argv is None else argv)
    width, height = (int(x) for x in a.size.split("x"))
    out = Path(a.out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="specula-first-run-"))
    files = _home(work)
    os.environ["SPECULA_HOME"] = str(work / "specula")
    os.environ["HF_ENDPOINT"] = "http://127.0.0.1:9"  # nothing listens: no hub
    os.environ["HOME"] = str(work / "home")
    os.environ["HF_HOME"] = str(work / "hf")
    for var in ("HF_HUB_CACHE", "XDG_CACHE_HOME"):
        os.environ.pop(var, None)


    from specula.gui.app import create_window, ensure_qapp
    from specula.gui.models.library_page import LibraryPage
    from specula.gui.models.load_defaults_dialog import LoadDefaultsDialog
    from specula_tools.qt_waits import Waits, grab

    app = ensure_qapp()
    waits = Waits(app, timeout=300.0, settle_s=0.6)
    wait, settle = waits.wait, waits.settle

    def shoot(name: str) -> None:
        settle()
        print(grab(window, out / f"{name}-{width}x{height}.png"))

    window = create_window()
    window.resize(width, height)
    window.move(0, 0)
    window.show()
    ctx = window.ctx
    offers = window.chat.empty.offers
    assert offers is not None
    wait(lambda: len(offers.buttons) == 2)  # type: ignore[attr-defined]
    shoot("first-run-welcome")

    offers.buttons[0].click()  # type: ignore[attr-defined]  # LM Studio's folder
    wait(lambda: not ctx.library.scanning and len(ctx.library.models) == len(LM_FILES))
    window.chat.model_bar.choose_target(str(files["medium"]))
    wait(lambda: ctx.engine.has_target and not ctx.engine.is_loading("target"))
    page = window.findChild(LibraryPage)
    assert page is not None
    shown: list[bool] = []
    page.pairing_shown.connect(lambda: shown.append(True))
    window.show_page("models")
    page._judge_pairing()
    wait(lambda: bool(shown))
    done: list[bool] = []
    page.details.pairs_ready.connect(lambda _p: done.append(True))
    page.select_path(str(files["zebra"]))
    wait(lambda: bool(done))
    shoot("models-pairing")

    medium = ctx.library.find(str(files["medium"]))
    assert medium is not None
    gear = LoadDefaultsDialog(medium, ctx.library.models, window)
    judged: list[bool] = []
    gear.drafts_judged.connect(lambda: judged.append(True))
    gear.show()
    gear.move(window.geometry().center() - gear.rect().center())
    wait(lambda: bool(judged))
    gear.draft.showPopup()
    shoot("models-load-defaults-pairing")
    gear.draft.hidePopup()
    gear.close()
    ctx.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

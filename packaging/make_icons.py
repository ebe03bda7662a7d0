"""Render resources/icons/specula.svg into the per-OS icon files (a build step, never at runtime).

Qt's SVG renderer (already a dependency) draws the PNGs; Pillow, needed only
here, packs them into Windows' .ico and macOS' .icns. Outputs go to
packaging/icons/ (generated, not committed):

    python packaging/make_icons.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SVG = ROOT / "resources" / "icons" / "specula.svg"
OUT = ROOT / "packaging" / "icons"
LINUX_SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def render_png(size: int, dest: Path) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtGui import QImage, QPainter
    from PySide6.QtSvg import QSvgRenderer

    img = QImage(size, size, QImage.Format.Format_ARGB32)
    img.fill(Qt.GlobalColor.transparent)
    painter = QPainter(img)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    QSvgRenderer(str(SVG)).render(painter)
    painter.end()
    if not img.save(str(dest)):
        raise OSError(f"could not write {dest}")


def main() -> int:
    from PIL import Image
    from PySide6.QtGui import QGuiApplication

    _app = QGuiApplication.instance() or QGuiApplication([*sys.argv[:1], "-platform", "offscreen"])
    OUT.mkdir(parents=True, exist_ok=True)
    for size in (*LINUX_SIZES, 1024):
        render_png(size, OUT / f"specula-{size}.png")
    big = Image.open(OUT / "specula-1024.png")
    big.save(OUT / "specula.ico", sizes=[(s, s) for s in (16, 24, 32, 48, 64, 128, 256)])
    big.save(OUT / "specula.icns")  # Pillow writes the 16-1024 px variants it needs
    print(f"icons written to {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

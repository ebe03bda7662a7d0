"""Copies the top-level ``resources/`` folder (QSS themes, icons) into the built package.

Metadata lives in pyproject.toml; this only extends the build step, so an
installed wheel finds ``specula/resources`` next to its code (a source
checkout reads ``resources/`` directly).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithResources(build_py):
    def run(self) -> None:
        super().run()
        src = Path(__file__).resolve().parent / "resources"
        if src.is_dir() and not self.editable_mode:
            dest = Path(self.build_lib) / "specula" / "resources"
            shutil.copytree(src, dest, dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildWithResources})

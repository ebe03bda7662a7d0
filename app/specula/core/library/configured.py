"""The one library the app and the command line share: the settings' folders.

Why: the app indexes the models folder and the extra folders the user added
(saved in the settings); ``specula models list`` used to build its own library
from the default folder, so the two listed different models. Both now build
it here, from the same settings; a folder given on the command line is added
for that run only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from specula.core.library.scan import Library
from specula.core.settings import Settings


def configured_library(settings: Settings | None = None,
                       models_dir: str | os.PathLike[str] | None = None,
                       extra_dirs: Sequence[str | os.PathLike[str]] = ()) -> Library:
    """The settings' models folder and extra folders, plus ``extra_dirs``; ``models_dir``
    (the command line's ``--models-dir``) replaces the settings' models folder."""
    s = settings if settings is not None else Settings.load()
    folders: list[str | os.PathLike[str]] = [*s.extra_model_dirs]
    known = {str(Path(f).expanduser()) for f in folders}
    for d in extra_dirs:
        if str(Path(d).expanduser()) not in known:
            folders.append(d)
            known.add(str(Path(d).expanduser()))
    return Library(models_dir if models_dir is not None else (s.models_dir or None),
                   extra_dirs=folders)

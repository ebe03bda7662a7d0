"""The one reader for every JSON file Specula reads: bounded, typed, never fatal.

Why one reader: the user's files (settings, presets, the chat panel's values,
per-model defaults, the library index, the downloads list) and the JSON kept in
the conversations database are read at every start. ``json.loads`` trusts what
it is given: 100,000 ``[`` is a RecursionError, a 2 GB file is read whole, and a
value of the wrong kind reaches code that expects a number. Each of those
stopped the app. Here:

* :func:`parse` bounds the size and the nesting depth *before* decoding (the
  depth is counted in one pass over brackets outside strings), and refuses
  anything else that is not JSON, always as :class:`JsonError` (a ``ValueError``);
* :func:`load` reads one file through :func:`parse` and checks its top level
  against a small schema (:class:`JsonFile`: the kind of the whole value and
  the kind of each known key). A file that cannot be used is set aside as
  ``<name>.bad-<UTC time>`` (:func:`specula.core.files.set_aside`), a notice
  says so and where the old file is, and the caller uses its defaults. A
  missing file is not a problem: the defaults, no notice.

Notices are kept in :func:`notices` too, so the app can show every file set
aside at start in one dialog, whichever part of Specula read it.

What each value inside means (a preset's ranges, a setting's kind) stays with
the module that owns the file; this reader guarantees that what reaches it is
a bounded JSON value of the expected shape.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from specula.core import files

log = logging.getLogger("specula.json_files")

MAX_BYTES = 16 * 1024 * 1024
"""The largest JSON file Specula reads (its own files are kilobytes; a library index
of thousands of models is a few megabytes)."""
MAX_DEPTH = 32
"""The deepest nesting Specula's own files use is 6 (a reply's versions of tokens)."""

# A JSON string (with its escapes) or one bracket: strings are skipped whole, in C.
_TOKENS = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_OPEN = frozenset("[{")
_CLOSE = frozenset("]}")

Kind = type | tuple[type, ...]


class JsonError(ValueError):
    """Text or a file that is not a bounded JSON value of the expected shape; the
    message says why in words a user can read."""


def nesting_depth(text: str, limit: int) -> int:
    """The deepest nesting of ``text``'s arrays and objects; stops counting (and
    returns ``limit + 1``) as soon as ``limit`` is passed."""
    depth = deepest = 0
    for m in _TOKENS.finditer(text):
        ch = m.group()
        if ch in _OPEN:
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif ch in _CLOSE:
            depth -= 1
    return deepest


def parse(data: str | bytes, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value in ``data`` (bytes: UTF-8, -16 or -32, as ``json.loads`` reads
    them); :class:`JsonError` when it is larger than ``max_bytes``, nested deeper than
    ``max_depth``, or not JSON."""
    if len(data) > max_bytes:
        raise JsonError(f"it is larger than {max_bytes:,} bytes ({len(data):,})")
    if isinstance(data, (bytes, bytearray)):
        try:
            text = bytes(data).decode(json.detect_encoding(data), "surrogatepass")
        except UnicodeDecodeError as exc:
            raise JsonError(f"it is not text ({exc.reason} at byte {exc.start})") from None
        text = text.removeprefix("\ufeff")
    else:
        text = data
    if nesting_depth(text, max_depth) > max_depth:
        raise JsonError(f"it is nested more than {max_depth} levels deep")
    try:
        return json.loads(text)
    except RecursionError:  # cannot happen under the depth bound; kept as a last guard
        raise JsonError(f"it is nested more than {max_depth} levels deep") from None
    except ValueError as exc:
        raise JsonError(f"it is not valid JSON ({exc})") from None


def kind_name(kind: Kind) -> str:
    kinds = kind if isinstance(kind, tuple) else (kind,)
    names = {dict: "an object", list: "a list", str: "text", int: "a whole number",
             float: "a number", bool: "true or false", type(None): "null"}
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def is_kind(value: object, kind: Kind) -> bool:
    """``isinstance`` as JSON means it: true/false is not a number, and a whole number
    is a number where a float is asked for."""
    kinds = kind if isinstance(kind, tuple) else (kind,)
    if isinstance(value, bool):
        return bool in kinds
    if float in kinds and isinstance(value, int):
        return True
    return isinstance(value, kinds)


def check_fields(value: Mapping[str, object], fields: Mapping[str, Kind]) -> None:
    """Raise :class:`JsonError` naming the first known key whose value has the wrong kind
    (absent keys are fine: each owner has defaults)."""
    for key, kind in fields.items():
        if key in value and not is_kind(value[key], kind):
            shown = repr(value[key])
            shown = shown if len(shown) <= 40 else shown[:37] + "..."
            raise JsonError(f"\"{key}\" should be {kind_name(kind)}, found {shown}")


@dataclass(frozen=True)
class JsonFile:
    """One of Specula's JSON files and the shape its top level must have."""

    path: Path
    what: str  # "settings file", "presets file": the notice's words
    fields: Mapping[str, Kind] = field(default_factory=dict)
    """Top-level keys and the kinds their values must have."""
    top: Kind = dict
    max_bytes: int = MAX_BYTES
    max_depth: int = MAX_DEPTH
    consequence: str = "Specula uses its defaults"
    """What happens instead, for the notice ("the library reads the headers again")."""


@dataclass
class Loaded:
    """What :func:`load` found: the value (None when missing or set aside) and, when the
    file could not be used, a sentence for the user."""

    value: Any = None
    notice: str | None = None


_notices: list[str] = []
_lock = threading.Lock()


def notices() -> list[str]:
    """Every notice :func:`load` gave in this process, oldest first."""
    with _lock:
        return list(_notices)


def take_notices() -> list[str]:
    """The notices not taken yet (the app shows each once)."""
    with _lock:
        out = list(_notices)
        _notices.clear()
        return out


def _remember(notice: str) -> None:
    with _lock:
        _notices.append(notice)
        del _notices[:-50]


def read(spec: JsonFile) -> Any:
    """The checked value of the file; ``FileNotFoundError`` when it is missing,
    :class:`JsonError` (or another ``OSError``) when it cannot be used. Nothing is
    moved: :func:`load` is the call that sets a bad file aside."""
    size = spec.path.stat().st_size  # FileNotFoundError: the caller's defaults
    if size > spec.max_bytes:
        raise JsonError(f"it is larger than {spec.max_bytes:,} bytes ({size:,})")
    with spec.path.open("rb") as fh:  # a folder at the path raises here (IsADirectoryError)
        data = fh.read(spec.max_bytes + 1)
    value = parse(data, max_bytes=spec.max_bytes, max_depth=spec.max_depth)
    if not is_kind(value, spec.top):
        raise JsonError(f"it holds {kind_name(type(value))}, not {kind_name(spec.top)}")
    if isinstance(value, dict):
        check_fields(value, spec.fields)
    return value


def load(spec: JsonFile) -> Loaded:
    """Read ``spec``'s file; a file that cannot be used is set aside with a notice.

    Never raises: a missing file is ``Loaded(None)``; an unreadable, oversized, too
    deep, invalid or wrongly shaped one is moved to ``<name>.bad-<UTC time>`` (left in
    place when it cannot be moved; the notice says so) and ``Loaded(None, notice)``."""
    try:
        return Loaded(read(spec))
    except FileNotFoundError:
        return Loaded(None)
    except (OSError, JsonError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return Loaded(None, set_aside(spec, why))


def set_aside(spec: JsonFile, why: str) -> str:
    """Move ``spec``'s file aside because of ``why``; the notice that says so (logged
    and remembered)."""
    try:
        backup = files.set_aside(spec.path, why)
    except OSError as exc:
        notice = (f"Your {spec.what} {spec.path} could not be used: {why}. "
                  f"{spec.consequence}; the file could not be moved aside "
                  f"({exc.strerror or exc}) and is left as it is.")
    else:
        notice = (f"Your {spec.what} could not be used: {why}. {spec.consequence}; "
                  f"the old file is kept as {backup}.")
    log.warning("%s", notice)
    _remember(notice)
    return notice

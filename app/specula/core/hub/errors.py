"""One error type for everything that can go wrong talking to the hub or downloading.

Why one type with a ``kind``: the CLI prints one clear line and the GUI shows
one dialog, whatever the transport (huggingface_hub uses httpx or httpx2
depending on its version, our ranged bodies use requests). Every transport
exception is translated here, once, into a sentence a user can act on.
"""

from __future__ import annotations

import errno
from enum import Enum

import requests


class ErrorKind(str, Enum):
    OFFLINE = "offline"  # the hub cannot be reached at all
    NOT_FOUND = "not_found"  # 404: no such repository or file
    UNAUTHORIZED = "unauthorized"  # 401/403: private or gated, token missing or refused
    SERVER = "server"  # 5xx or 429
    NETWORK = "network"  # the connection broke mid-transfer (resumable)
    BAD_REPLY = "bad_reply"  # the hub answered something we cannot use
    DISK_FULL = "disk_full"
    CHECKSUM = "checksum"  # the downloaded bytes do not match the hub's sha256
    INVALID = "invalid"  # a request we refuse before sending (bad name, bad path)


class HubError(Exception):
    """A hub or download failure with a one-line message fit for a user."""

    def __init__(self, kind: ErrorKind, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.status = status

    def to_dict(self) -> dict[str, object]:
        return {"kind": self.kind.value, "message": self.message, "status": self.status}



def _transport_errors() -> tuple[type[BaseException], ...]:
    """Connection-level exception types of every HTTP stack huggingface_hub may use."""
    found: list[type[BaseException]] = [requests.ConnectionError, requests.Timeout]
    for module_name in ("httpx2", "httpx"):
        try:
            module = __import__(module_name)
        except ImportError:
            continue
        for attr in ("TransportError", "TimeoutException"):
            cls = getattr(module, attr, None)
            if isinstance(cls, type) and issubclass(cls, BaseException):
                found.append(cls)
    return tuple(found)


_TRANSPORT_ERRORS = _transport_errors()


def _status_of(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    return status if isinstance(status, int) else None


def for_status(status: int, what: str) -> HubError:
    """The error for an HTTP status answered while fetching ``what``."""
    if status == 404:
        return HubError(ErrorKind.NOT_FOUND, f"{what} was not found on the hub (404)", status)
    if status in (401, 403):
        return HubError(
            ErrorKind.UNAUTHORIZED,
            f"{what} needs access ({status}): the repository is private or gated; "
            "set HF_TOKEN to a token that may read it",
            status,
        )
    if status == 429:
        return HubError(ErrorKind.SERVER, f"the hub is rate-limiting requests for {what} (429); "
                        "try again later", status)
    if status >= 500:
        return HubError(ErrorKind.SERVER, f"the hub failed to answer for {what} ({status}); "
                        "try again later", status)
    return HubError(ErrorKind.BAD_REPLY, f"unexpected answer {status} for {what}", status)


def translate(exc: BaseException, what: str, endpoint: str | None = None) -> HubError:
    """Turn any exception raised while talking to the hub into a :class:`HubError`."""
    if isinstance(exc, HubError):
        return exc
    status = _status_of(exc)
    if status is not None and status >= 400:
        return for_status(status, what)
    if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
        return HubError(ErrorKind.DISK_FULL, f"the disk is full while writing {what}")
    name = type(exc).__name__
    if name == "OfflineModeIsEnabled":
        return HubError(ErrorKind.OFFLINE, f"offline mode is on (HF_HUB_OFFLINE); cannot fetch {what}")
    if isinstance(exc, requests.exceptions.ChunkedEncodingError):
        return HubError(ErrorKind.NETWORK, f"the connection broke while fetching {what}")
    if isinstance(exc, _TRANSPORT_ERRORS):
        where = endpoint or "the hub"
        return HubError(ErrorKind.OFFLINE, f"cannot reach {where} to fetch {what} "
                        f"({name}); check the network or HF_ENDPOINT")
    if isinstance(exc, (KeyError, TypeError, ValueError, AttributeError)):
        return HubError(ErrorKind.BAD_REPLY, f"the hub sent a malformed reply for {what} ({name})")
    return HubError(ErrorKind.BAD_REPLY, f"failed to fetch {what}: {name}: {exc}")

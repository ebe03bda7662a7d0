"""What a web browser may do with the local server: by default, nothing.

A server on 127.0.0.1 without a key is reachable by any page the user opens: a
cross-site ``POST`` with ``Content-Type: text/plain`` needs no preflight, and DNS
rebinding (a name that first resolves to the page's server, then to 127.0.0.1)
makes the page same-origin with the server. Three checks on every request head,
before authentication and before any body is read, close both:

* the ``Host`` header must name this server: ``localhost``, a loopback address, the
  bound address (any IP address when bound to all interfaces), or a name given with
  ``--allow-host`` (a rebinding attack always sends its own name);
* a request with an ``Origin`` header (a browser's fetch or form) is refused unless
  ``--cors-origin`` names that origin (``*``: every origin); then the replies carry
  ``Access-Control-Allow-Origin`` and a preflight ``OPTIONS`` is answered;
* ``Transfer-Encoding`` is refused (the server reads ``Content-Length`` bodies only;
  a request with both would be read two ways by a proxy in front, and bytes past
  the body could be read as a second request).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from dataclasses import dataclass, field

from specula.server.errors import OpenAIError

LOCAL_NAMES = ("localhost", "localhost.")
PREFLIGHT_MAX_AGE_S = 600
ALLOWED_METHODS = "GET, POST, OPTIONS"
ALLOWED_HEADERS = "Authorization, Content-Type"


def host_name(header: str) -> str:
    """The name in a ``Host`` header, without its port, lower case (IPv6 in brackets)."""
    value = header.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        return value[: end + 1] if end > 0 else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _ip(name: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return None


@dataclass(frozen=True)
class BrowserPolicy:
    """The bound address and the two allow-lists (``--allow-host``, ``--cors-origin``)."""

    bind: str = "127.0.0.1"
    allowed_hosts: Sequence[str] = ()
    cors_origins: Sequence[str] = field(default_factory=tuple)

    def host_allowed(self, header: str | None) -> bool:
        """Whether a request with this ``Host`` header is meant for this server (no
        header: not a browser, which always sends one)."""
        if header is None:
            return True
        name = host_name(header)
        if "*" in self.allowed_hosts or name in LOCAL_NAMES:
            return True
        if name in (h.lower() for h in self.allowed_hosts):
            return True
        ip = _ip(name)
        if ip is None:
            return False
        if ip.is_loopback:
            return True
        bound = _ip(self.bind)
        return bound is not None and (bound.is_unspecified or bound == ip)

    def origin_allowed(self, origin: str) -> bool:
        return "*" in self.cors_origins or origin.rstrip("/") in (
            o.rstrip("/") for o in self.cors_origins)

    def check(self, host: str | None, origin: str | None, headers: Sequence[tuple[str, str]]
              ) -> None:
        """Refuse the request head (an OpenAIError: 421, 403 or 400) or let it through."""
        if not self.host_allowed(host):
            raise OpenAIError(421, f"This server does not answer for the host {host!r}; start "
                              "it with --allow-host NAME to add a name.", code="host_not_allowed")
        if origin is not None and not self.origin_allowed(origin):
            raise OpenAIError(403, f"Requests from the web origin {origin!r} are refused; start "
                              "the server with --cors-origin ORIGIN to allow a page.",
                              code="origin_not_allowed")
        names = [k.lower() for k, _ in headers]
        if "transfer-encoding" in names:
            raise OpenAIError(400, "Transfer-Encoding is not supported: send the body with a "
                              "Content-Length.", code="unsupported_transfer_encoding")
        if names.count("content-length") > 1:
            raise OpenAIError(400, "The request has more than one Content-Length header.",
                              code="invalid_content_length")

    def cors_headers(self, origin: str | None) -> dict[str, str]:
        """The headers an allowed origin's replies carry."""
        if origin is None:
            return {}
        return {"Access-Control-Allow-Origin": origin, "Vary": "Origin",
                "Access-Control-Expose-Headers": "X-Specula-Stats"}

    def preflight_headers(self, origin: str | None) -> dict[str, str]:
        """An allowed preflight's answer (what a browser asks before a JSON POST)."""
        out = {"Allow": ALLOWED_METHODS}
        if origin is not None:
            out.update(self.cors_headers(origin))
            out.update({"Access-Control-Allow-Methods": ALLOWED_METHODS,
                        "Access-Control-Allow-Headers": ALLOWED_HEADERS,
                        "Access-Control-Max-Age": str(PREFLIGHT_MAX_AGE_S)})
        return out

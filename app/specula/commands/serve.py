"""`specula serve`: the OpenAI-compatible local server with speculative decoding."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from specula.commands._common import fail, say
from specula.commands._engine_args import (
    add_model_args,
    add_sampling_args,
    add_spec_args,
    load_engine,
    sampling_params,
)
from specula.commands._load_defaults import apply_load_defaults, defer_defaults
from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.engine import LoadError
from specula.server.connections import HEAD_TIMEOUT_S


def add_arguments(p: argparse.ArgumentParser) -> None:
    from specula.server import DEFAULT_HOST, DEFAULT_PORT

    add_model_args(p)
    add_sampling_args(p, max_tokens=1024)
    add_spec_args(p)
    defer_defaults(p)  # a model's own load defaults fill what is not given
    g = p.add_argument_group("server")
    g.add_argument("--host", default=DEFAULT_HOST, help=f"address to bind (default {DEFAULT_HOST})")
    g.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    g.add_argument("--allow-remote", action="store_true",
                   help="allow binding to a non-loopback address (needs an API key)")
    g.add_argument("--api-key", default=None,
                   help="require 'Authorization: Bearer KEY' (default: $SPECULA_API_KEY)")
    g.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                   help="also answer requests whose Host header is NAME (repeatable; "
                        "localhost, loopback and the bound address always are)")
    g.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN",
                   help="let web pages from ORIGIN (http://host:port, or * for any) call the "
                        "server (repeatable; default: browsers are refused)")
    g.add_argument("--verbose", action="store_true", help="log every request")
    g.add_argument("--head-timeout", type=float, default=HEAD_TIMEOUT_S, metavar="S",
                   help="seconds a new connection has to send its whole request head, "
                        f"after which it is closed (default {HEAD_TIMEOUT_S:g})")


def _spec(a: argparse.Namespace) -> SpecConfig | None:
    """The defaults for requests: adaptive (drafts only where it pays), unless --mode."""
    if a.mode is None:
        return SpecConfig(mode=Mode.ADAPTIVE, draft_max=a.draft_max,
                          draft_min=a.draft_min, p_min=a.p_min)
    return SpecConfig(mode=Mode(a.mode), draft_max=a.draft_max, draft_min=a.draft_min,
                      p_min=a.p_min)


def run(a: argparse.Namespace) -> int:
    from specula.server import (
        BadApiKey,
        EngineThread,
        LocalServer,
        RemoteBindingRefused,
        ServedModel,
    )

    logging.basicConfig(level=logging.INFO if a.verbose else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    api_key = a.api_key if a.api_key is not None else os.environ.get("SPECULA_API_KEY")
    api_key = api_key or None  # "" = no key
    apply_load_defaults(a)
    try:  # refuse a bad key or binding before spending a minute loading models
        from specula.server.local import check_api_key, check_binding

        check_api_key(api_key)
        check_binding(a.host, a.allow_remote, api_key)
    except (BadApiKey, RemoteBindingRefused) as exc:
        return fail(str(exc))
    try:
        engine = load_engine(a)
    except LoadError as exc:
        return fail(str(exc))
    host = EngineThread(engine, ServedModel.from_engine(engine, a.target, a.draft))
    server = LocalServer(host, bind=a.host, port=a.port, api_key=api_key,
                         allow_remote=a.allow_remote, sampling=sampling_params(a), spec=_spec(a),
                         head_timeout_s=a.head_timeout, allowed_hosts=a.allow_host,
                         cors_origins=a.cors_origin)
    served = host.served()
    assert served is not None
    try:
        server.start()
    except OSError as exc:
        host.close()
        return fail(f"cannot listen on {a.host}:{a.port}: {exc}")
    draft = f", draft {served.draft_id}" if served.draft_id else ""
    o = engine.options
    layers = f"GPU layers: target {o.n_gpu_layers_target}, draft {o.n_gpu_layers_draft}"
    if o.rpc_servers:
        layers += f"; RPC workers {', '.join(o.rpc_servers)}"
    say(layers, file=sys.stderr)
    say(f"serving '{served.id}'{draft} on {server.url}/v1 ({engine.backend}, "
          f"{engine.n_threads} threads, one request at a time). Ctrl-C stops.", file=sys.stderr)
    sys.stderr.flush()
    try:
        threading_wait()
    except KeyboardInterrupt:
        say("stopping", file=sys.stderr)
    finally:
        server.stop()
        host.close()
    return 0


def threading_wait() -> None:
    """Block the main thread (Ctrl-C interrupts it) while the server threads work."""
    import threading

    threading.Event().wait()

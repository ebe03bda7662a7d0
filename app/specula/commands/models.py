"""`specula models ...`: search the hub, list files, pull, list, rm, drafts-for, fit.

Every subcommand takes ``--json``. Failures (offline, 404, 401, disk full,
checksum mismatch, a bad GGUF) print one line on stderr, never a traceback,
and exit 2; ``fit`` exits 1 when the model does not fit.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from specula.commands import _models_text as text
from specula.commands._common import fail, print_json, say
from specula.core.gguf.model_info import GGUFError
from specula.core.hardware.fit import FitVerdict, GiB, estimate, format_estimate
from specula.core.hub.client import SORTS, HubClient
from specula.core.hub.download import Download, DownloadState
from specula.core.hub.errors import HubError
from specula.core.hub.remote_header import read_remote_info
from specula.core.hub.targets import resolve_model
from specula.core.library.configured import configured_library
from specula.core.library.scan import Library, LibraryError
from specula.core.pairing.badges import detected_gpu_free
from specula.core.pairing.drafts import hub_drafts, library_drafts
from specula.core.sizes import byte_size


def add_arguments(p: argparse.ArgumentParser) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print JSON")
    common.add_argument("--models-dir", help="the models folder (default: the settings' folder; "
                        "SPECULA_MODELS_DIR overrides); the app's extra folders are "
                        "indexed too")
    sub = p.add_subparsers(dest="models_command", metavar="ACTION", required=True)

    s = sub.add_parser("search", parents=[common], help="search GGUF repositories on the hub")
    s.add_argument("text")
    s.add_argument("--sort", choices=sorted(SORTS), default="downloads")
    s.add_argument("--limit", type=int, default=20)
    s.set_defaults(action=_search)

    s = sub.add_parser("files", parents=[common], help="list a repository's GGUF models")
    s.add_argument("repo", help="owner/name")
    s.add_argument("--headers", action="store_true",
                   help="also read each model's header remotely (tokenizer, context, parameters)")
    s.set_defaults(action=_files)

    s = sub.add_parser("pull", parents=[common], help="download a model (resumes automatically)")
    s.add_argument("repo", help="owner/name")
    s.add_argument("file", help="file in the repository (any part of a split model)")
    s.add_argument("--quiet", action="store_true", help="no progress bar")
    s.set_defaults(action=_pull)

    s = sub.add_parser("list", parents=[common], help="models in the library")
    s.add_argument("--extra", action="append", default=[], metavar="DIR",
                   help="also index GGUF files in DIR (repeatable)")
    s.set_defaults(action=_list)

    s = sub.add_parser("rm", parents=[common], help="remove a downloaded model")
    s.add_argument("model", help="a path, or owner/repo/file inside the models folder")
    s.set_defaults(action=_rm)

    s = sub.add_parser("drafts-for", parents=[common], help="drafts for a target, ranked")
    s.add_argument("target", help="a local GGUF or owner/repo/file.gguf on the hub")
    s.add_argument("--no-hub", action="store_true", help="only look in the library")
    s.add_argument("--extra", action="append", default=[], metavar="DIR")
    s.set_defaults(action=_drafts_for)

    s = sub.add_parser("fit", parents=[common],
                       help="will TARGET (and --draft) fit in memory? exit 1 if not")
    s.add_argument("target", help="a local GGUF or owner/repo/file.gguf on the hub")
    s.add_argument("--draft", help="a draft GGUF (local or owner/repo/file.gguf)")
    s.add_argument("--ctx", type=int, help="context length (default: min(model's, 4096))")
    s.add_argument("--cache-type", default="f16", help="KV cache type: f16, q8_0, q4_0...")
    s.add_argument("--gpu-free", type=float, action="append", metavar="GIB",
                   help="free memory of a GPU in GiB (repeatable); default: CPU backend")
    s.add_argument("--ram", type=float, metavar="GIB", help="available RAM in GiB (default: now)")
    s.set_defaults(action=_fit)


def run(args: argparse.Namespace) -> int:
    action: Callable[[argparse.Namespace], int] = args.action
    try:
        return action(args)
    except HubError as exc:
        return _error(args, exc.kind.value, exc.message)
    except GGUFError as exc:
        return _error(args, "bad_gguf", str(exc))
    except LibraryError as exc:
        return _error(args, "library", str(exc))
    except ValueError as exc:
        return _error(args, "invalid", str(exc))
    except OSError as exc:
        return _error(args, "os", f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": "))


def _error(args: argparse.Namespace, kind: str, message: str) -> int:
    if getattr(args, "json", False):
        print_json({"error": {"kind": kind, "message": message}})
    return fail(message)


def _library(args: argparse.Namespace) -> Library:
    """The app's library (the settings' models folder and extra folders), plus --extra."""
    return configured_library(models_dir=args.models_dir, extra_dirs=getattr(args, "extra", []))


def _search(args: argparse.Namespace) -> int:
    results = HubClient().search(args.text, sort=args.sort, limit=args.limit)
    if args.json:
        print_json([r.to_dict() for r in results])
    else:
        say(text.search_table(results) if results else f"no GGUF repositories match {args.text!r}")
    return 0


def _files(args: argparse.Namespace) -> int:
    hub = HubClient()
    listing = hub.list_files(args.repo)
    headers: dict[str, dict[str, object]] = {}
    if args.headers:
        for model in listing.models:
            try:
                info = read_remote_info(args.repo, model.filename, hub)
            except (HubError, GGUFError) as exc:
                headers[model.filename] = {"error": str(exc)}
                continue
            headers[model.filename] = info.to_dict()
            model.quantization = info.quantization or model.quantization
    if args.json:
        d = listing.to_dict()
        if args.headers:
            for m in d["models"]:  # type: ignore[attr-defined]
                m["header"] = headers.get(m["filename"])
        print_json(d)
    else:
        say(text.files_table(listing, headers))
    return 0


def _pull(args: argparse.Namespace) -> int:
    bar = None if (args.quiet or args.json) else text.ProgressBar(sys.stderr)
    library = _library(args)
    dl = Download(args.repo, args.file, models_dir=library.models_dir,
                  on_progress=bar.update if bar else None)
    try:
        result = dl.run()
    except KeyboardInterrupt:
        if bar:
            bar.finish()
        say("paused: the incomplete file is kept; run the same command to resume",
              file=sys.stderr)
        return 130
    finally:
        if bar:
            bar.finish()
    if args.json:
        print_json(result.to_dict())
    elif result.state is DownloadState.DONE:
        resumed = f" (resumed at {byte_size(result.resumed_from)})" if result.resumed_from else ""
        say(f"downloaded {result.paths[0]}{resumed}")
        for extra in result.paths[1:]:
            say(f"           {extra}")
        for name in result.without_checksum:
            say(f"{name}: {result.verified[name]}")
    return 0 if result.state is DownloadState.DONE else 1


def _list(args: argparse.Namespace) -> int:
    library = _library(args)
    scan = library.scan()
    pending = library.incomplete()
    if args.json:
        print_json({"models_dir": str(library.models_dir),
                    "folders": [str(r) for r in library.roots],
                    "models": [m.to_dict() for m in scan.models], "incomplete": pending,
                    "vanished": scan.vanished, "read": scan.read, "reused": scan.reused})
    else:
        say(text.library_table(library, scan.models, pending))
    return 0


def _rm(args: argparse.Namespace) -> int:
    removed = _library(args).remove(args.model)
    if args.json:
        print_json({"removed": [str(p) for p in removed]})
    else:
        for p in removed:
            say(f"removed {p}")
    return 0


def _drafts_for(args: argparse.Namespace) -> int:
    library = _library(args)
    target = resolve_model(args.target, models_dir=library.models_dir)
    local = library_drafts(target.info, library.scan().models, target.path)
    remote = None if args.no_hub else hub_drafts(target.info, target.repo_id)
    if args.json:
        print_json({"target": target.info.to_dict(),
                    "library": [c.to_dict() for c in local],
                    "hub": remote.to_dict() if remote else None})
    else:
        say(text.drafts_text(target.info.display_name, local, remote))
    return 0


def _fit(args: argparse.Namespace) -> int:
    models_dir = _library(args).models_dir
    target = resolve_model(args.target, models_dir=models_dir)
    draft = resolve_model(args.draft, models_dir=models_dir) if args.draft else None
    gpu = [int(g * GiB) for g in args.gpu_free] if args.gpu_free else detected_gpu_free()
    est = estimate(target.info, draft.info if draft else None, n_ctx=args.ctx,
                   cache_type=args.cache_type, target_weights=target.weights,
                   draft_weights=draft.weights if draft else None,
                   ram_available=int(args.ram * GiB) if args.ram else None, gpu_free=gpu)
    if args.json:
        print_json(est.to_dict())
    else:
        say(format_estimate(est))
    return 1 if est.verdict is FitVerdict.NO else 0


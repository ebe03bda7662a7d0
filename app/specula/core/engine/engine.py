"""The engine as the app, the CLI and the server use it.

An :class:`Engine` owns a target model and an optional draft model with their
contexts, checks a draft's tokenizer before loading it, renders chats with the
model's own template, and runs replies through one :class:`Generator`. It is
not thread-safe: one owner thread (the GUI's engine worker, the CLI, the
server's queue) calls it.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from specula.core import paths
from specula.core.cancel import Cancelled
from specula.core.chat.template import ChatTemplate, TemplateError
from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.drafters import MAX_TREE_SEQS, DraftModel
from specula.core.engine.drafters.heads import DFlashHead, Eagle3Head
from specula.core.engine.drafters.heads import open_head as open_draft_head
from specula.core.engine.drafters.mtp import MTPHead, open_head
from specula.core.engine.drafters.ngram_store import NgramStore, cache_dir
from specula.core.engine.events import Done, Event, TokenOrigin
from specula.core.engine.grammar.compile import validate_grammar
from specula.core.engine.grammar.state import GrammarState
from specula.core.engine.loop.calibration import Calibration, measure
from specula.core.engine.loop.generator import Generator
from specula.core.engine.native.backend import backend_name, default_threads
from specula.core.engine.native.context import Context
from specula.core.engine.native.devices import add_rpc_servers, local_gpu_handles
from specula.core.engine.native.llama import LoadError, Model
from specula.core.engine.native.mtp import has_mtp_graph
from specula.core.engine.policy import registry
from specula.core.engine.policy.fixed import DraftPolicy
from specula.core.engine.policy.head_choice import HEAD_MODES
from specula.core.engine.sampling.rules import SamplingParams
from specula.core.engine.verdict import PolicyVerdict
from specula.core.gguf.compat import CompatReport, check
from specula.core.gguf.draft_head import HeadInfo, head_misfits, is_head, read_head_info
from specula.core.gguf.model_info import GGUFError, ModelInfo, read_model_info

__all__ = [
    "Cancelled",
    "Engine",
    "EngineOptions",
    "IncompatibleDraft",
    "IncompatibleHead",
    "LoadError",
]

log = logging.getLogger("specula.engine")
Progress = Callable[[float], bool]
MAX_VERIFY_TOKENS = 64  # n_outputs_max: the largest verify batch (chain or tree) plus margin


class IncompatibleHead(LoadError):
    """A draft head that does not fit the loaded target; ``reasons`` says why (nothing was loaded)."""

    def __init__(self, path: str | Path, reasons: list[str]) -> None:
        super().__init__(f"{path}: this head cannot draft for the target: {'; '.join(reasons)}")
        self.reasons = reasons


class IncompatibleDraft(LoadError):
    """The draft's tokenizer cannot serve the target; ``report`` says why."""

    def __init__(self, report: CompatReport) -> None:
        super().__init__(f"This draft cannot be used with the target: {report.reason()}")
        self.report = report


@dataclass
class EngineOptions:
    n_ctx: int = 4096
    n_threads: int | None = None
    n_gpu_layers_target: int = 0
    n_gpu_layers_draft: int = 0
    n_batch: int = 512
    # Read weights into process memory instead of mapping the file. Mapped pages can be
    # dropped under memory pressure (or by proactive reclaim) and re-read mid-reply,
    # which makes decode times erratic; reading costs a slower load.
    use_mmap: bool = False
    # Remote workers ("host:port" of llama.cpp rpc-server processes): offloaded layers are
    # split over them, so a target too big for this machine can still run. Needs a
    # llama-cpp-python built with -DGGML_RPC=on.
    rpc_servers: tuple[str, ...] = ()
    # Time verify batches of 1..8 tokens and draft decodes right after a draft loads
    # (core/engine/loop/calibration.py): a pair without saved adaptive state starts from them.
    calibrate: bool = True
    # Load a target's MTP (NextN) layers when it has them, as a draft that needs no draft
    # model (docs/engine.md, "MTP"); off: they are skipped at load (less memory).
    mtp: bool = True


class Engine:
    def __init__(self, options: EngineOptions | None = None) -> None:
        self.options = options or EngineOptions()
        if self.options.rpc_servers:
            add_rpc_servers(self.options.rpc_servers)  # LoadError when absent or unreachable
        self.n_threads = self.options.n_threads or default_threads()
        self.backend = backend_name()
        self.target_info: ModelInfo | None = None
        self.draft_info: ModelInfo | None = None
        self.compat: CompatReport | None = None
        self._target: Model | None = None
        self._draft_weights: Model | None = None  # the draft GGUF's weights and vocabulary
        self._gen: Generator | None = None
        self._draft_model: DraftModel | None = None  # its context, mirrored: what the drafters use
        self._mtp: MTPHead | None = None
        self._head: Eagle3Head | DFlashHead | None = None  # a loaded draft head (EAGLE-3, DFlash)
        self.head_info: HeadInfo | None = None
        self._template: ChatTemplate | None = None
        self._policies: dict[str, DraftPolicy] = {}
        self.calibration: Calibration | None = None
        # The target's persistent n-gram cache (lookup's fallback), learned from every reply.
        self.ngrams: NgramStore | None = None

    # -- loading -------------------------------------------------------------

    @property
    def has_target(self) -> bool:
        return self._gen is not None

    @property
    def has_draft(self) -> bool:
        return self._draft_model is not None

    @property
    def mtp_layers(self) -> int:
        """The loaded target's MTP layers that draft (0: none, or not loaded)."""
        return self._mtp.n_layers if self._mtp is not None else 0

    @property
    def target_model(self) -> Model | None:
        return self._target

    @property
    def generator(self) -> Generator | None:
        return self._gen

    @property
    def n_ctx(self) -> int:
        """The context length a request can use: the loaded target's, else the one it will get."""
        return self._gen.ctx.n_ctx if self._gen is not None else self.options.n_ctx

    @property
    def _load_mode(self) -> int:
        return 1 if self.options.use_mmap else 0  # LLAMA_LOAD_MODE_MMAP / _NONE

    def _context(self, model: Model) -> Context:
        n_ctx = min(self.options.n_ctx, model.n_ctx_train) if model.n_ctx_train > 0 else self.options.n_ctx
        return Context(
            model, n_ctx=n_ctx, n_threads=self.n_threads, n_batch=self.options.n_batch,
            # Token trees: one sequence per branch, in one unified KV cache. Recurrent memory
            # holds a whole state per sequence and cannot decode a tree: one sequence.
            n_seq_max=MAX_TREE_SEQS + 1 if model.memory_kind.runs_trees else 1,
            kv_unified=True, n_outputs_max=MAX_VERIFY_TOKENS,
        )

    @staticmethod
    def _info(path: str | Path) -> ModelInfo:
        try:
            return read_model_info(path)
        except GGUFError as exc:
            raise LoadError(str(exc)) from exc

    def _load(self, path: str | Path, info: ModelInfo, gpu_layers: int,
              progress: Progress | None, devices: Sequence[int] | None = None,
              load_mtp: bool = False) -> tuple[Model, Context]:
        model = Model(path, n_gpu_layers=gpu_layers, progress=progress,
                      quantization=info.quantization, load_mode=self._load_mode, devices=devices,
                      load_mtp=load_mtp)
        try:
            return model, self._context(model)
        except LoadError:
            model.close()
            raise

    def load_target(self, path: str | Path, progress: Progress | None = None) -> ModelInfo:
        """Load (or replace) the target; the draft is unloaded with the old target."""
        info = self._info(path)
        if is_head(info):  # llama.cpp would fail with a misleading "not enough memory?"
            raise LoadError(f"{path}: this is a draft head ({info.architecture}), not a model: "
                            "load its target, then the head as the draft")
        load_mtp = self.options.mtp and has_mtp_graph(info.architecture)
        model, ctx = self._load(path, info, self.options.n_gpu_layers_target, progress,
                                load_mtp=load_mtp)
        try:
            template = ChatTemplate.for_model(model)
        except TemplateError as exc:  # a template that does not compile fails the load
            ctx.close()
            model.close()
            raise LoadError(f"{path}: {exc}") from None
        try:
            head = open_head(model, ctx)  # None: no MTP layers (no MTP context is opened)
        except LoadError as exc:  # the target still serves; it drafts without its head
            log.warning("%s: the MTP layers cannot draft (%s)", path, exc)
            head = None
        self.unload()
        self._target, self.target_info = model, info
        self._template = template
        self.ngrams = NgramStore(self._ngram_path(info), Path(info.source).name)
        self._gen = Generator(model, ctx, ngram_cache=self.ngrams.cache)
        self._mtp = head
        self._gen.set_mtp(head)
        self._policies = {}
        return info

    def load_draft(self, path: str | Path, progress: Progress | None = None,
                   measuring: Callable[[float], None] | None = None) -> CompatReport:
        """Load a draft model after checking that its tokenizer can serve the target;
        ``measuring`` hears the calibration's progress (a step of its own, after the load)."""
        if self._target is None or self.target_info is None or self._gen is None:
            raise LoadError("Load a target model before a draft model.")
        info = self._info(path)
        report = check(self.target_info, info)
        if not report.usable:
            raise IncompatibleDraft(report)
        # With RPC workers the draft stays on this machine: a network round trip per
        # draft token would cost more than drafting saves.
        local = local_gpu_handles() if self.options.rpc_servers else None
        model, ctx = self._load(path, info, self.options.n_gpu_layers_draft, progress, devices=local)
        self.unload_draft()
        self._draft_weights, self.draft_info, self.compat = model, info, report
        self._draft_model = DraftModel(ctx, self._target.n_vocab)
        self._gen.set_draft(self._draft_model)
        self._policies = {}
        if self.options.calibrate:
            n_vocab = min(self._target.n_vocab, self._draft_model.n_vocab)
            self.calibration = measure(self._gen.kv, self._draft_model.kv, n_vocab,
                                       progress=measuring)
        return report

    def unload_draft(self) -> None:
        if self._gen is not None:
            self._gen.set_draft(None)
        if self._draft_model is not None:
            self._draft_model.ctx.close()
        if self._draft_weights is not None:
            self._draft_weights.close()
        self._draft_model = self._draft_weights = None
        self.draft_info = self.compat = None
        self.calibration = None
        self._policies = {}

    def load_head(self, path: str | Path) -> HeadInfo:
        """Load a draft head (EAGLE-3, DFlash, DSpark) for the loaded target, after its
        header says it fits (IncompatibleHead with the reasons, before anything loads);
        the modes ``eagle3`` / ``dflash`` / ``dspark`` draft with it."""
        if self._target is None or self.target_info is None or self._gen is None:
            raise LoadError("Load a target model before a draft head.")
        try:
            info = read_head_info(path)
        except GGUFError as exc:
            raise LoadError(str(exc)) from exc
        reasons = head_misfits(self.target_info, info)
        if reasons:
            raise IncompatibleHead(path, reasons)
        head = open_draft_head(str(path), self._target, self._gen.ctx, info,
                               gpu_layers=self.options.n_gpu_layers_draft)
        self.unload_head()
        self._head, self.head_info = head, info
        self._policies = {}  # what the policies draft with changed
        return info

    def unload_head(self) -> None:
        if self._head is not None:
            if self._gen is not None and self._gen.mtp is self._head:
                self._gen.set_mtp(self._mtp)
            self._head.close()
            self._policies = {}
        self._head, self.head_info = None, None

    def unload(self) -> None:
        self.unload_draft()
        self.unload_head()
        if self.ngrams is not None:
            self.ngrams.flush()
            self.ngrams = None
        if self._mtp is not None:  # before the target's context it was opened beside
            self._mtp.close()
            self._mtp = None
        if self._gen is not None:
            self._gen.ctx.close()
        if self._target is not None:
            self._target.close()
        self._gen = self._target = None
        self.target_info = None
        self._template = None

    def close(self) -> None:
        self.unload()

    # -- generation ----------------------------------------------------------

    def policy_for(self, spec: SpecConfig) -> DraftPolicy:
        """The draft policy a reply with ``spec`` uses (policy/registry.py chooses it from what
        is loaded); one per mode, kept until a model is loaded, so adaptive keeps learning."""
        pol = self._policies.get(spec.mode.value)
        if pol is None:
            pol = registry.build(spec, self._loaded())
            self._policies[spec.mode.value] = pol
        pol.cfg = spec
        return pol

    def _loaded(self) -> registry.Loaded:
        """What the policies can draft with: the target's MTP head, a draft head, the draft."""
        drafters = (*(["mtp"] if self._mtp is not None else []),
                    *([self._head.kind] if self._head is not None else []),
                    *(["draft"] if self._draft_model is not None else []))
        caps = {self._head.kind: self._head.max_draft} if self._head is not None else {}
        return registry.Loaded(tuple(drafters), self.calibration, self._policy_state_path, caps)

    def _policy_state_path(self, mode: str) -> Path:
        """Where the adaptive policy's models for this pair on this machine are kept."""
        def ident(info: ModelInfo | None) -> str:
            if info is None:
                return "none"
            return f"{Path(info.source).name}:{info.file_size}"

        draft = ident(self.draft_info) if mode == "adaptive" else "none"
        raw = f"{ident(self.target_info)}|{draft}|{self.backend}|{self.n_threads}|{mode}"
        digest = hashlib.sha256(raw.encode()).hexdigest()[:20]
        return paths.data_dir() / "adaptive" / f"{digest}.json"

    @staticmethod
    def _ngram_path(info: ModelInfo) -> Path:
        """The target's n-gram cache file (per target: token ids mean nothing to another)."""
        raw = f"{Path(info.source).name}:{info.file_size}"
        return cache_dir() / f"{hashlib.sha256(raw.encode()).hexdigest()[:20]}.npz"

    def render(self, messages: Sequence[dict[str, str]]) -> str:
        if self._template is None:
            raise LoadError("No target model is loaded.")
        return self._template.render(messages)

    def tokenize_chat(self, messages: Sequence[dict[str, str]]) -> list[int]:
        if self._template is None or self._target is None:
            raise LoadError("No target model is loaded.")
        return self._template.tokenize(self._target, messages)

    def chat(
        self,
        messages: Sequence[dict[str, str]],
        sampling: SamplingParams,
        spec: SpecConfig,
        cancel: threading.Event | None = None,
    ) -> Iterator[Event]:
        """Reply to ``messages`` (role/content dicts) with the model's chat template."""
        return self.generate_tokens(self.tokenize_chat(messages), sampling, spec, cancel)

    def complete(
        self, prompt: str, sampling: SamplingParams, spec: SpecConfig, cancel: threading.Event | None = None
    ) -> Iterator[Event]:
        """Continue raw text (no chat template)."""
        if self._target is None:
            raise LoadError("No target model is loaded.")
        return self.generate_tokens(self._target.tokenize(prompt), sampling, spec, cancel)

    def generate_tokens(
        self,
        prompt: Sequence[int],
        sampling: SamplingParams,
        spec: SpecConfig,
        cancel: threading.Event | None = None,
        grammar: GrammarState | None = None,
    ) -> Iterator[Event]:
        """The reply's events. A grammar that does not parse raises GrammarError here,
        before anything is generated (the engine stays usable). ``grammar``: the
        request's grammar as :meth:`open_grammar` parsed it (a caller that checked it
        first passes it on instead of having it parsed again); the reply closes it."""
        if self._gen is None or self._target is None:
            raise LoadError("No target model is loaded.")
        if grammar is None and sampling.grammar:
            grammar = self.open_grammar(sampling.grammar, sampling.grammar_root)
        policy = self.policy_for(spec)
        # One head is fed by the target's decodes: a loaded draft head in its modes and in
        # adaptive (the registry plans with it in the MTP layers' place), the MTP layers else.
        head = (self._head if self._head is not None
                and spec.mode in (*HEAD_MODES, Mode.ADAPTIVE) else self._mtp)
        for other in (self._mtp, self._head):
            if other is not None and other is not head:
                other.watch(False)
        if self._gen.mtp is not head:
            self._gen.set_mtp(head)
        if head is not None:  # it follows the target's decodes only when it may draft
            head.watch(TokenOrigin.MTP in policy.wants)
        events = self._with_verdict(self._gen.generate(prompt, sampling, spec, policy, cancel, grammar),
                                    policy)
        return events if self.ngrams is None else self._learning(prompt, events, self.ngrams)

    @staticmethod
    def _with_verdict(events: Iterator[Event], policy: DraftPolicy) -> Iterator[Event]:
        """Pass the events on; Done carries the policy's judgement after the reply (None from
        a mode that judges nothing)."""
        for ev in events:
            if isinstance(ev, Done):
                ev.verdict = policy.verdict()
            yield ev

    def adaptive_verdict(self) -> PolicyVerdict | None:
        """The adaptive policy's judgement for the loaded pair (None before it has run)."""
        pol = self._policies.get(Mode.ADAPTIVE.value)
        return pol.verdict() if pol is not None else None

    def clear_adaptive_verdict(self) -> None:
        """Forget the loaded pair's measured costs (the saved ones too) and with them a
        "slower than plain" verdict, whatever drafts (a draft model, the MTP head, both):
        the next adaptive reply starts from the calibration at load and probes again.
        What was learnt about acceptance is kept."""
        if self._gen is not None:
            self.policy_for(SpecConfig(mode=Mode.ADAPTIVE)).clear()

    def open_grammar(self, text: str, root: str = "root") -> GrammarState:
        """``text`` parsed once over the target's vocabulary, for :meth:`generate_tokens`
        (GrammarError with llama.cpp's reason); close it if it is not passed on."""
        if self._gen is None or self._target is None:
            raise LoadError("No target model is loaded.")
        return GrammarState.open(self._target.vocab, self._gen.ctx.n_vocab, text, root, owner=self._target)

    def validate_grammar(self, text: str, root: str = "root") -> None:
        """GrammarError (with llama.cpp's reason) unless ``text`` parses over the target's
        vocabulary (token references included); without a target, over none."""
        validate_grammar(text, root, self._target.vocab if self._target is not None else None)

    @staticmethod
    def _learning(prompt: Sequence[int], events: Iterator[Event], store: NgramStore) -> Iterator[Event]:
        """Pass the events on; the finished reply (any mode) teaches the n-gram cache
        before Done is handed over, and the cache is saved on its writer thread."""
        for ev in events:
            if isinstance(ev, Done):
                store.learn_reply([*prompt, *ev.token_ids])
            yield ev

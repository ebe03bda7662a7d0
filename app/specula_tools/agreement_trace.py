"""Where the draft agrees with the target, token by token: the traces the adaptive
policy's replay tests run on (``tests/core/engine/adaptive_sim.py``).

    python -m specula_tools.agreement_trace --target T.gguf --draft D.gguf \\
        --prompts-file docs/lab/peer-prompts.jsonl --max-tokens 96 --out traces.json

For each prompt the target's greedy reply (plain decoding, the engine's chat
template), then the draft fed the prompt and that reply in one batch: at each
reply position, whether the draft's greedy token given the true prefix is the
target's, and the draft's top probability and entropy there; and whether the target's
token is the draft's second choice, and that choice's probability (what a sibling in a
token tree would have had). Writes ``{prompt id: {"ok": [...], "p_top": [...],
"entropy": [...], "second": [...], "p_second": [...]}}``; with
``--target-confidence`` also the target's own top probability and entropy at each
position (``target_p_top``, ``target_entropy``: the target fed the same way), to ask
whether what the target knows adds to the draft's confidence; with ``--windows 32,128``
also the draft's greedy agreement when it is fed only the view of the prompt a probe
drafts on with a window of W, from an empty cache (``window_ok``: {W: [...]}: the prompt's
first ``SINK`` tokens and its last W before the pending one, ``DraftModel.begin``). No
timing is taken, so it may run on a busy machine.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from specula.core.bench import load_prompts
from specula.core.engine.config import Mode, SpecConfig
from specula.core.engine.drafters.model import skipped_stretch
from specula.core.engine.events import Done
from specula.core.engine.native.batch import Batch
from specula.core.engine.native.context import Context
from specula.core.engine.native.llama import Model
from specula.core.engine.sampling.rules import SamplingParams
from specula_tools.lab.pair_args import open_pair, pair_parser


def agreement(draft: Model, prompt: list[int], reply: list[int], threads: int | None) -> dict[str, list[object]]:
    """Per reply position: the draft right (greedy, true prefix), its top probability, its
    entropy; the target's token the draft's second choice, that choice's probability."""
    seq = [*prompt, *reply[:-1]]
    ctx = Context(draft, n_ctx=len(seq) + 8, n_threads=threads or os.cpu_count() or 1,
                  n_batch=max(512, len(seq)), n_outputs_max=len(seq))
    try:
        batch = Batch(len(seq), 1)
        batch.fill(seq, 0, outputs="all")
        ctx.decode(batch)
        ok: list[object] = []
        p_top: list[object] = []
        entropy: list[object] = []
        second: list[object] = []
        p_second: list[object] = []
        for j, tok in enumerate(reply):
            row = np.asarray(ctx.logits(len(prompt) - 1 + j), dtype=np.float64)
            p = np.exp(row - row.max())
            p /= p.sum()
            best, runner_up = (int(i) for i in np.argsort(-row, kind="stable")[:2])
            ok.append(best == tok)
            p_top.append(float(p[best]))
            entropy.append(float(-(p * np.log(np.maximum(p, 1e-300))).sum()))
            second.append(runner_up == tok)
            p_second.append(float(p[runner_up]))
    finally:
        ctx.close()
    return {"ok": ok, "p_top": p_top, "entropy": entropy, "second": second, "p_second": p_second}


def window_view(prompt: Sequence[int], window: int) -> list[int]:
    """The prompt as a probe with ``window`` feeds it to an empty draft, the pending token
    included (the engine's own rule: ``skipped_stretch``)."""
    gap = skipped_stretch(len(prompt), 0, window)
    if gap is None:
        return list(prompt)
    start, resume = gap
    return [*prompt[:start], *prompt[resume:]]


def main(argv: Sequence[str] | None = None) -> int:
    ap = pair_parser(__doc__, threads=None)
    ap.add_argument("--prompts", help="only these prompt ids (comma-separated)")
    ap.add_argument("--target-confidence", action="store_true",
                    help="also record the target's top probability and entropy per position")
    ap.add_argument("--windows", default="",
                    help="also the draft's agreement fed only the prompt's first tokens and "
                         "its last W, for each W (comma-separated)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    prompts = load_prompts(a.prompts_file)
    if a.prompts:
        wanted = a.prompts.split(",")
        prompts = [p for p in prompts if p.id in wanted]
    eng = open_pair(a, calibrate=False, draft=False)
    draft = Model(a.draft)
    target = Model(a.target) if a.target_confidence else None
    out: dict[str, dict[str, object]] = {}
    try:
        for p in prompts:
            done = None
            for ev in eng.chat(p.messages, SamplingParams(temperature=0.0, max_tokens=a.max_tokens),
                               SpecConfig(mode=Mode.PLAIN)):
                if isinstance(ev, Done):
                    done = ev
            assert done is not None
            prompt_ids, reply = list(done.prompt_token_ids), list(done.token_ids)
            rec = agreement(draft, prompt_ids, reply, a.threads)
            out[p.id] = dict(rec)
            if target is not None:  # the target's greedy token is the reply's: its top
                own = agreement(target, prompt_ids, reply, a.threads)
                out[p.id]["target_p_top"], out[p.id]["target_entropy"] = own["p_top"], own["entropy"]
            window_ok: dict[str, list[object]] = {}
            for w in (int(x) for x in a.windows.split(",") if x.strip()):
                window_ok[str(w)] = agreement(draft, window_view(prompt_ids, w), reply, a.threads)["ok"]
            if window_ok:
                out[p.id]["window_ok"] = window_ok
            right = sum(bool(x) for x in rec["ok"]) / max(len(reply), 1)
            print(f"{p.id}: {len(reply)} tokens, draft right {right:.2f}", file=sys.stderr)
    finally:
        eng.close()
        draft.close()
        if target is not None:
            target.close()
    Path(a.out).write_text(json.dumps(out), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

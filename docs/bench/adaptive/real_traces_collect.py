# Run from the repository root: PYTHONPATH=app python docs/bench/adaptive/real_traces_collect.py docs/bench/adaptive/f16-oracle8.json docs/bench/adaptive/real-traces-f16-code.json
"""Per reply position of the F16 code prompts: whether the 0.5B draft's greedy token (given
the true prefix) is the target's, and the draft's top probability and entropy there."""
import json, os, sys
import numpy as np
from specula.core.engine.native.batch import Batch
from specula.core.engine.native.llama import Context, Model
D = os.path.expanduser("~/.cache/specula-bench/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf")
d = json.load(open(sys.argv[1]))
plain = {}
for r in d["runs"]:
    if r["mode"] == "plain" and r["repeat"] == 0:
        plain[r["prompt_id"]] = (r["prompt_token_ids"], r["token_ids"])
m = Model(D)
out = {}
for pid, (prompt, reply) in plain.items():
    ctx = Context(m, n_ctx=1024, n_threads=1, n_outputs_max=512)
    seq = list(prompt) + list(reply[:-1])
    b = Batch(len(seq), 1)
    b.fill(seq, 0, outputs="all")
    ctx.decode(b)
    ok, ptop, ent = [], [], []
    for j, tok in enumerate(reply):
        row = np.asarray(ctx.logits(len(prompt) - 1 + j), dtype=np.float64)
        x = row - row.max(); p = np.exp(x); p /= p.sum()
        a = int(row.argmax())
        ok.append(a == tok); ptop.append(float(p[a])); ent.append(float(-(p * np.log(np.maximum(p, 1e-300))).sum()))
    ctx.close()
    out[pid] = {"ok": ok, "p_top": ptop, "entropy": ent}
    print(pid, len(reply), "draft right", round(sum(ok) / len(ok), 2))
json.dump(out, open(sys.argv[2], "w"))

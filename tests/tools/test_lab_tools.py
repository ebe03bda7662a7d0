"""The lab's tools (app/specula_tools/lab) still run, each on its smallest case: the replays
on the pair simulator, the measurements on the tiny GGUF pair, and the two table tools on
the traces kept beside their note, where they must print that note's stored output again.

A tool is the command behind a note's figures; one that no longer runs leaves the note's
command broken, and a table tool that prints something else from the same input means the
note's figures can no longer be traced to its data."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "docs" / "lab" / "data"
SIX = ROOT / "docs" / "lab" / "peer-prompts-six.jsonl"


def run_tool(name: str, *args: str) -> str:
    """``python -m specula_tools.lab.NAME ARGS`` from the repository root, as the notes run it;
    its output, after checking that it exited 0."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "app")}
    r = subprocess.run([sys.executable, "-m", f"specula_tools.lab.{name}", *args], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout


# the replays on the simulator, each with its smallest case and a line its output must have
REPLAYS = {
    "real_traces_replay": ((), r"^current .* median \d\.\d{3} min \d\.\d{3}$"),
    "replay_oracle": ((), r"best fixed chain:\d .* adaptive .*\(\d\.\d\dx\)"),
    "replay_text_switch": ((), r"^0 hard  adaptive / chain:5 \d\.\d\d  drafting steps \d+ of \d+$"),
    "sibling_replay": ((), r"^\d+ positions, \d+ misses, the second choice right at \d+ of them$"),
    "replay_short_answer": ((), r"^  after  mean \d\.\d{3} min \d\.\d\d: csv-stats"),
    "sim_stop_rule_compare": ((), r"^Q4 rate 0\.9 bursty True : best k=\d .* ratio \d\.\d{3}$"),
    "stop_rule_ceiling": ((), r"adaptive, acceptance known \(set\) +\d\.\d{3}"),
    "replay_sessions": (("--sessions", "1"), r"^F16, second VM +replies: mean \d\.\d{3}"),
    "replay_probe_evidence": (("1",), r"^  Q4_K_M +switch h \d\.\d{3} \(min \d\.\d\d\) e "),
}


@pytest.mark.parametrize("name", sorted(REPLAYS))
def test_the_replay_runs_its_smallest_case(name: str) -> None:
    args, line = REPLAYS[name]
    out = run_tool(name, *args)
    assert re.search(line, out, re.MULTILINE), out[-2000:]


def test_stop_loss_variants_replays_its_two_cases() -> None:
    """The tool's two scripted cases at the slack the policy has (its replays are the slow part)."""
    from specula_tools.lab import stop_loss_variants as v

    with v.variant(4.0):
        wrong, stale = v.confidently_wrong(), v.stale_costs()
    cell = re.compile(r"^\d+\.\d{3}x/\d+$")  # the reply over plain / its drafting steps
    assert len(wrong) == 3 and all(cell.match(c) for c in wrong), wrong
    assert len(stale) == 4 and all(cell.match(c) for c in stale), stale


@pytest.fixture()
def one_prompt(tmp_path: Path) -> Path:
    path = tmp_path / "one.jsonl"
    path.write_text(SIX.read_text("utf-8").splitlines()[0] + "\n", "utf-8")
    return path


# the measurements on the tiny pair: (arguments past the models, a line their output must have)
MEASUREMENTS = {
    "reply_losses": (("--repeat", "1", "--max-tokens", "8"),
                     r"^0 unseen-csv-stats +tokens +\d+ .* => \d+\.\d{3}x of plain"),
    "probe_cost": (("--repeat", "1", "--max-tokens", "8", "--categories", "code"),
                   r"^whole: median \d+\.\d\dx of plain, .* over 1 replies$"),
    "follow_up": (("--max-tokens", "8", "--categories", "code"),
                  r"^unseen-csv-stats +reply 2 .* adaptive .*x"),
    "plain_drift": (("--pairs", "1"), r"^0 adaptive +\d+\.\d\d tok/s  plain steps \d+"),
}


@pytest.mark.parametrize("name", sorted(MEASUREMENTS))
def test_the_measurement_runs_on_the_tiny_pair(name: str, tiny: dict[str, Path],
                                               one_prompt: Path) -> None:
    args, line = MEASUREMENTS[name]
    out = run_tool(name, "--target", str(tiny["target"]), "--draft", str(tiny["draft"]),
                   "--prompts-file", str(one_prompt), *args)
    assert re.search(line, out, re.MULTILINE), out[-2000:]


def test_probe_steps_runs_on_the_tiny_pair(tiny: dict[str, Path]) -> None:
    """probe_steps names its six prompts, so it runs on the six peer prompts, one token deep."""
    out = run_tool("probe_steps", "--target", str(tiny["target"]), "--draft", str(tiny["draft"]),
                   "--prompts-file", str(SIX), "--repeat", "1", "--max-tokens", "4")
    assert re.search(r"^0 unseen-go-server ", out, re.MULTILINE), out[-2000:]


def test_target_confidence_prints_its_notes_table_again() -> None:
    """The note's table (target-confidence.txt) comes back from the traces kept beside it."""
    from specula_tools.lab.target_confidence import table

    here = DATA / "2026-12-02-target-confidence"
    stored = (here / "target-confidence.txt").read_text("utf-8")
    section = stored.split("## ")[1].split("\n", 1)[1].strip()  # the first file's table
    traces = json.loads((here / "target-confidence-q4-six.json").read_text("utf-8"))
    assert table(traces).strip() == section


def test_window_agreement_prints_its_notes_table_again(capsys: pytest.CaptureFixture[str]) -> None:
    from specula_tools.lab.window_agreement import main

    here = DATA / "2026-12-03-probe-window"
    main(str(here / "window-traces-q4.json"))
    assert capsys.readouterr().out == (here / "window-agreement.txt").read_text("utf-8")


def test_window_share_is_the_right_share_of_the_first_n() -> None:
    from specula_tools.lab.window_agreement import share

    assert share([True, False, True, True], 2) == 0.5
    assert share([True, False, True, True]) == 0.75
    assert share([]) == 0.0


def test_auc_is_the_share_of_right_wrong_pairs_ordered() -> None:
    """Mann-Whitney AUC against the pairs counted one by one."""
    from specula_tools.lab.target_confidence import auc

    rng = np.random.default_rng(3)
    score = rng.permutation(40).astype(float)  # no ties
    y = (rng.random(40) < 0.6).astype(int)
    pairs = [s1 > s0 for s1, t1 in zip(score, y, strict=True) if t1
             for s0, t0 in zip(score, y, strict=True) if not t0]
    assert auc(score, y) == pytest.approx(sum(pairs) / len(pairs))


def test_a_replys_loss_is_its_time_less_its_tokens_at_the_plain_step() -> None:
    from specula_tools.lab.reply_losses import _loss

    steps = [SimpleNamespace(step_s=0.30, emitted=4), SimpleNamespace(step_s=0.10, emitted=1)]
    # 0.30 - 4 * 0.1 + 0.10 - 1 * 0.1 = -0.10
    assert _loss(steps, 0.1) == pytest.approx(-0.10)  # type: ignore[arg-type]

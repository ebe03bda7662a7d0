"""A draft head is recognised from its header and checked against the target before
anything loads: `specula info` says what it is, `specula compat` whether it fits and why
not, the engine refuses a misfit with the reasons (no weights read), a corrupt head is
one `specula: error:` line; the bindings fail closed on a library without the calls; the
CLI's `--draft HEAD` says which head it drafts with, and the stats line counts its
drafted and accepted tokens."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from specula.cli import main
from specula.core.engine.engine import Engine, EngineOptions, IncompatibleHead, LoadError
from specula.core.engine.native import heads as native
from specula.core.gguf.draft_head import read_head_info
from specula.core.gguf.model_info import GGUFError
from tests.core.engine.heads_support import head_path

APP = Path(__file__).resolve().parents[3] / "app"


@pytest.fixture(scope="module")
def hdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fit-heads")


def _engine(target: Path) -> Engine:
    eng = Engine(EngineOptions(n_ctx=256, n_threads=1, calibrate=False))
    eng.load_target(target)
    return eng


# -- the header -----------------------------------------------------------------------------


def test_info_says_what_each_head_is(hdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    want = {
        "eagle3": "an EAGLE-3 head reading target layers 0, 1, 1, for targets of hidden size 64 "
                  "and a vocabulary of 398 tokens",
        "dflash": "a DFlash head with block size 4 (mask token 3) reading target layers 0, 1, "
                  "for targets of hidden size 64",
        "dspark": "a DSpark head with block size 4",
    }
    for kind, line in want.items():
        assert main(["info", str(head_path(hdir, "llama", kind))]) == 0
        out = capsys.readouterr().out
        assert line in out, out
        assert f"--mode {kind}" in out


def test_a_d2t_map_is_read(hdir: Path) -> None:
    info = read_head_info(head_path(hdir, "llama", "eagle3", draft_vocab=64))
    assert info.draft_vocab == 64
    assert "drafting over 64 of them through its d2t map" in info.describe()


def test_compat_fitting_and_misfitting_heads(tiny: dict[str, Path], families: dict[str, Path],
                                            hdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = str(tiny["target"])
    assert main(["compat", target, str(head_path(hdir, "llama", "eagle3"))]) == 0
    assert "It fits the target." in capsys.readouterr().out
    cases = {
        head_path(hdir, "llama", "eagle3", target_hidden=32): "the head is for targets of hidden size 32, the target's is 64",
        head_path(hdir, "llama", "dflash", n_embd=32): "the head is for targets of hidden size 32, the target's is 64",
        head_path(hdir, "llama", "eagle3", layer_ids=(0, 1, 2)): "the head reads target layer 2, the target has layers 0..1",
        head_path(hdir, "llama", "dflash", layer_ids=(0, 5)): "the head reads target layer 5, the target has layers 0..1",
        head_path(hdir, "llama", "dflash", mask_token=9999): "the mask token 9999 is outside the vocabulary (398 tokens)",
    }
    for head, reason in cases.items():
        assert main(["compat", target, str(head)]) == 1, head
        out = capsys.readouterr().out
        assert "It cannot draft for the target:" in out and reason in out, out
    assert main(["compat", str(families["mamba"]), str(head_path(hdir, "mamba", "eagle3"))]) == 1
    assert "of a mamba target (its graph does not record layer inputs" in capsys.readouterr().out


def test_a_head_llama_cpp_would_refuse_is_a_header_error(hdir: Path) -> None:
    with pytest.raises(GGUFError, match="exactly 3 target layers, this one 2"):
        read_head_info(head_path(hdir, "llama", "eagle3", layer_ids=(0, 1)))


def test_a_corrupt_head_is_one_error_line(hdir: Path, tmp_path: Path) -> None:
    good = head_path(hdir, "llama", "eagle3").read_bytes()
    bad = tmp_path / "corrupt-head.gguf"
    bad.write_bytes(good[:300])  # cut inside the header
    env = {**os.environ, "PYTHONPATH": str(APP)}
    code = "import sys; from specula.cli import main; sys.exit(main(sys.argv[1:]))"
    for args in (["info", str(bad)], ["compat", str(bad), str(bad)]):
        r = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                           env=env, timeout=120, check=False)
        assert r.returncode == 2
        lines = r.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("specula: error:"), r.stderr


# -- the engine -------------------------------------------------------------------------------


def test_a_misfit_is_refused_before_anything_loads(tiny: dict[str, Path], families: dict[str, Path],
                                                   hdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from specula.core.engine import engine as engine_module

    def never(*a: Any, **kw: Any) -> None:
        raise AssertionError("the head's weights were loaded")

    monkeypatch.setattr(engine_module, "open_draft_head", never)
    eng = _engine(tiny["target"])
    try:
        with pytest.raises(IncompatibleHead, match="hidden size 32"):
            eng.load_head(head_path(hdir, "llama", "eagle3", target_hidden=32))
        with pytest.raises(IncompatibleHead, match="reads target layer 2"):
            eng.load_head(head_path(hdir, "llama", "eagle3", layer_ids=(0, 1, 2)))
        assert eng.head_info is None
    finally:
        eng.close()
    mamba = _engine(families["mamba"])
    try:  # llama.cpp would abort at the first decode: refused with the reason
        with pytest.raises(IncompatibleHead, match="mamba target"):
            mamba.load_head(head_path(hdir, "mamba", "dflash"))
    finally:
        mamba.close()


def test_the_bindings_fail_closed() -> None:
    """Each call is looked up by its C name, its Itanium name and its MSVC name in turn; a
    library with none of them gives a sentence naming them, and nothing is bound."""

    class Lib:  # as ctypes.CDLL's lib[name]: a new function object, AttributeError if absent
        def __init__(self, names: set[str]) -> None:
            self.names = names

        def __getitem__(self, name: str) -> Any:
            if name in self.names:
                return type("F", (), {"argtypes": None, "restype": None})()
            raise AttributeError(name)

    itanium = {names[1] for names, _, _ in native._SIGNATURES.values()}
    found, why = native.bind_all(Lib(itanium))
    assert why == "" and set(found) == set(native._SIGNATURES)
    found, why = native.bind_all(Lib(itanium - {"_Z30llama_set_embeddings_layer_inpP13llama_contextjb"}))
    assert found == {}
    assert "no draft-head support" in why and "llama_set_embeddings_layer_inp" in why
    assert "?llama_set_embeddings_layer_inp@@YAXPEAUllama_context@@I_N@Z" in why
    assert native.missing() == ""  # this build has them all


def test_binding_the_heads_calls_leaves_the_mtp_bindings_as_they_were() -> None:
    """The heads' bindings type function objects of their own: the MTP head's calls
    (llama_cpp_ext, the same library) still return a float pointer after them. Typing the
    library's cached objects made the MTP head read a plain integer as its rows, and every
    MTP reply after a head had been loaded in the process failed."""
    from llama_cpp import llama_cpp as lib
    from llama_cpp import llama_cpp_ext as ext

    before = ext.llama_get_embeddings_nextn.restype
    found, why = native.bind_all(lib._lib)
    assert why == "" and found
    assert ext.llama_get_embeddings_nextn.restype is before
    assert before is not ctypes.c_void_p


def test_a_library_without_the_calls_loads_no_head(tiny: dict[str, Path], hdir: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native, "_missing", "this llama.cpp library has no draft-head support (test)")
    eng = _engine(tiny["target"])
    try:
        with pytest.raises(LoadError, match="no draft-head support"):
            eng.load_head(head_path(hdir, "llama", "dflash"))
        assert eng.head_info is None
    finally:
        eng.close()


# -- the CLI ----------------------------------------------------------------------------------


def _chat(target: Path, *args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(APP), "SPECULA_HOME": str(home)}
    code = "import sys; from specula.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, "chat", "--model", str(target), "--threads", "1",
                           "--ctx", "256", "--max-tokens", "12", *args],
                          input="hello world\n/quit\n", capture_output=True, text=True, env=env,
                          timeout=180, check=False)


def test_chat_with_a_head_says_which_and_counts_its_tokens(tiny: dict[str, Path], hdir: Path,
                                                           specula_home: Path) -> None:
    head = head_path(hdir, "llama", "dflash")
    r = _chat(tiny["target"], "--draft", str(head), home=specula_home)
    assert r.returncode == 0, r.stderr
    assert f"{head}: a DFlash head with block size 4" in r.stderr
    assert "drafting with it in mode dflash" in r.stderr
    assert "draft tokens accepted" in r.stdout + r.stderr and "dflash" in r.stdout + r.stderr
    r = _chat(tiny["target"], "--draft", str(head), "--mode", "eagle3", home=specula_home)
    assert r.returncode != 0
    assert "mode eagle3 drafts with a eagle3 head" in r.stderr and "the head given is dflash" in r.stderr


def test_bench_runs_a_head_mode_beside_plain(tiny: dict[str, Path], hdir: Path, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    import json

    prompts = tmp_path / "p.jsonl"
    prompts.write_text(json.dumps({"id": "p1", "category": "test", "prompt": "hello world the model"}) + "\n")
    out = tmp_path / "bench.json"
    assert main(["bench", "--target", str(tiny["target"]), "--draft", str(head_path(hdir, "llama", "eagle3")),
                 "--prompts", str(prompts), "--modes", "plain,eagle3", "--max-tokens", "16",
                 "--threads", "1", "--no-calibrate", "--repeat", "1", "--json", str(out)]) == 0
    err = capsys.readouterr().err
    assert "an EAGLE-3 head reading target layers 0, 1, 1" in err
    runs = json.loads(out.read_text())["runs"]
    by_mode = {r["mode"]: r for r in runs}
    assert by_mode["eagle3"]["drafted"] > 0
    assert by_mode["eagle3"]["identical"] is True

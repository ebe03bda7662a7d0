"""The load-options widget: context length, "N / M layers" offload slider, fit estimate."""

from __future__ import annotations

from specula.core import gpu_layers
from specula.core.engine.native.devices import GGMLDevice
from specula.core.hardware import fit
from specula.core.sizes import byte_size
from specula.gui.load_options import LayerSpin, LoadChoice, LoadOptions

GiB = 1024**3


def gpu(free: int) -> GGMLDevice:
    return GGMLDevice(1, "CUDA0", "test card", "gpu", "CUDA", free, free)


def test_slider_reads_layers_and_the_split(qtbot, qwen7b, qwen05b) -> None:  # type: ignore[no-untyped-def]
    opts = LoadOptions(4096, 10, gpu_layers.AUTO, qwen7b, qwen05b, devices=[gpu(3 * GiB)])
    qtbot.addWidget(opts)
    assert opts.slider.maximum() == 29  # 28 blocks + the output layer
    assert opts.layers_label.text() == "10 / 29 layers"
    with qtbot.waitSignal(opts.options_changed) as blocker:
        opts.slider.setValue(14)
    assert blocker.args[0] == LoadChoice(4096, 14, gpu_layers.AUTO)
    assert opts.layers_label.text() == "14 / 29 layers"
    # independent arithmetic: weights + KV spread evenly over 29 layers, compute goes along
    mem = fit.model_memory(qwen7b, 4096)
    vram = int(14 * (mem.weights + mem.kv_cache) / 29) + mem.compute
    assert f"{byte_size(vram)} in VRAM, {byte_size(mem.total - vram)} in RAM" in opts.fit_text()
    assert "Partially offloaded" in opts.fit_text()
    opts.slider.setValue(29)
    assert opts.choice().target_layers == gpu_layers.ALL


def test_context_changes_the_fit(qtbot, qwen7b) -> None:  # type: ignore[no-untyped-def]
    opts = LoadOptions(4096, 0, 0, qwen7b, None, devices=[])
    qtbot.addWidget(opts)
    short = opts.fit_text()
    assert "CPU" in short and "No GPU" in short
    opts.n_ctx.setValue(32768)
    expected = fit.estimate(qwen7b, None, n_ctx=32768, gpu_free=[]).message
    assert expected in opts.fit_text() and opts.fit_text() != short
    assert opts.choice().n_ctx == 32768


def test_auto_shows_what_it_would_offload(qtbot, qwen7b, qwen05b) -> None:  # type: ignore[no-untyped-def]
    opts = LoadOptions(4096, gpu_layers.AUTO, gpu_layers.AUTO, qwen7b, qwen05b,
                       devices=[gpu(200 * GiB)])
    qtbot.addWidget(opts)
    assert opts.auto.isChecked() and not opts.slider.isEnabled()
    assert opts.layers_label.text() == "29 / 29 layers"  # everything fits in 200 GiB
    assert opts.choice().target_layers == gpu_layers.AUTO
    opts.auto.setChecked(False)
    assert opts.slider.isEnabled() and opts.choice().target_layers != gpu_layers.AUTO


def test_without_a_model(qtbot) -> None:  # type: ignore[no-untyped-def]
    opts = LoadOptions(4096, gpu_layers.AUTO, 0, devices=[])
    qtbot.addWidget(opts)
    assert opts.layers_label.text() == "auto"
    assert "Load a model" in opts.fit_text()


def test_layer_spin_words(qtbot) -> None:  # type: ignore[no-untyped-def]
    spin = LayerSpin(gpu_layers.AUTO)
    qtbot.addWidget(spin)
    assert spin.text() == "auto"
    spin.setValue(-1)
    assert spin.text() == "all"
    spin.setValue(0)
    assert spin.text() == "CPU only"
    spin.setValue(12)
    assert spin.text() == "12"
    assert spin.valueFromText("auto") == gpu_layers.AUTO


def test_dialog_saves_the_choice(make_window, qwen7b, qtbot) -> None:  # type: ignore[no-untyped-def]
    from specula.core.settings import Settings
    from specula.gui.load_options import LoadOptionsDialog

    w = make_window()
    dialog = LoadOptionsDialog(w.ctx, qwen7b, None, w)
    qtbot.addWidget(dialog)
    dialog.options.n_ctx.setValue(8192)
    dialog.options.auto.setChecked(False)
    dialog.options.slider.setValue(5)
    dialog.accept()
    saved = Settings.load()
    assert (saved.n_ctx, saved.n_gpu_layers_target) == (8192, 5)
    assert w.ctx.settings.n_ctx == 8192

"""Ctrl-C during tpusim.run: the simulation checks Python's signals between windows of
simulated time (about a millisecond of it each) while the GIL is released, so a
KeyboardInterrupt stops a run there instead of when it returns."""
import os
import pathlib
import signal
import threading
import time

import pytest

import tpusim

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_a_keyboard_interrupt_stops_a_long_run_before_it_returns():
    """Ctrl-C while ResNet-50 compiles: the simulation, the first place that checks, stops at
    its start, so the call ends well before an uninterrupted one (compile is about a third of it;
    simulating and reporting the rest)."""
    model = str(ROOT / "traces" / "resnet50.onnx")
    started = time.monotonic()
    tpusim.run(model, batch=128, instructions=False, progress=False)
    whole = time.monotonic() - started
    timer = threading.Timer(0.1, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        tpusim.run(model, batch=128, instructions=False, progress=False)
    stopped = time.monotonic() - started
    timer.join()
    assert stopped < 0.75 * whole, (whole, stopped)


def test_a_run_after_an_interrupt_is_whole():
    report = tpusim.run(str(ROOT / "traces" / "mlp.onnx"), batch=8, progress=False)
    assert report["total_cycles"] > 0

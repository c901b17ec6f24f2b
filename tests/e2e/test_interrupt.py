"""A run stopped while it writes its outputs leaves each output whole or absent, never
truncated: outputs go to a temporary name and are renamed when complete
(sim/common/atomic_file.hpp). Ctrl-C (SIGINT) and SIGTERM stop the run at once, remove the
file being written, say so in one line and exit 128 + the signal; SIGKILL, which nothing can
catch, may leave a temporary but no truncated output. A run that exhausts this machine's memory
stops with a one-line error, not a crash."""
import json
import pathlib
import resource
import signal
import subprocess
import time

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


def start(tpusim_bin, out):
    # ResNet-50 with its instruction timeline writes about 5 MB of outputs, long enough to be caught in the act.
    return subprocess.Popen([tpusim_bin, "run", str(ROOT / "traces" / "resnet50.onnx"), "--batch", "1", "--mode",
                             "inference", "--out", str(out)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)


def signal_while_writing(process, out, sig, written=0):
    """Sends `sig` once a temporary output appears after `written` outputs are whole (or the run
    ends first); whether it caught a write."""
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        names = [path.name for path in out.glob("*")]
        if any(".partial-" in name for name in names) and len(names) > written:
            process.send_signal(sig)
            return True
        time.sleep(0.0005)
    return False


def expect_whole_outputs(out):
    for path in out.glob("*"):
        if ".partial-" in path.name:
            continue
        if path.suffix == ".json":
            json.loads(path.read_text())  # a truncated file does not parse
        elif path.suffix == ".csv":
            assert path.read_text().endswith("\n"), path
        elif path.suffix == ".html":
            assert path.read_text().rstrip().endswith("</html>"), path


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_writing_leaves_whole_outputs_and_no_temporary(tpusim_bin, tmp_path, sig):
    caught = 0
    for attempt in range(5):
        out = tmp_path / f"run{attempt}"
        process = start(tpusim_bin, out)
        caught += signal_while_writing(process, out, sig, written=attempt)  # report.json first, then the views
        _, stderr = process.communicate(timeout=120)
        if process.returncode == 0:
            continue  # it finished before the signal landed
        assert process.returncode == 128 + sig, stderr
        assert stderr.count("\n") == 1 and "no output file is left half written" in stderr, stderr
        assert not any(".partial-" in path.name for path in out.glob("*"))
        expect_whole_outputs(out)
    assert caught > 0, "no run was caught writing"


def test_sigkill_never_leaves_a_truncated_output(tpusim_bin, tmp_path):
    out = tmp_path / "killed"
    process = start(tpusim_bin, out)
    signal_while_writing(process, out, signal.SIGKILL)
    process.communicate(timeout=120)
    expect_whole_outputs(out)


def test_ctrl_c_stops_a_long_run_within_a_second(tpusim_bin, tmp_path):
    process = subprocess.Popen([tpusim_bin, "run", str(ROOT / "traces" / "resnet50.onnx"), "--batch", "128",
                                "--no-instructions", "--out", str(tmp_path / "long")], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
    time.sleep(1.0)
    sent = time.monotonic()
    process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=30)
    assert time.monotonic() - sent < 1.0
    assert process.returncode == 130, stderr
    assert stderr == "tpusim: interrupted (SIGINT); no output file is left half written\n"


def test_running_out_of_this_machines_memory_is_a_one_line_error(tpusim_bin, tmp_path):
    def limit_memory():
        resource.setrlimit(resource.RLIMIT_AS, (1500 << 20, 1500 << 20))  # 1.5 GiB: the libraries map, the run does not fit

    done = subprocess.run([tpusim_bin, "run", str(ROOT / "traces" / "resnet50.onnx"), "--batch", "128", "--out",
                           str(tmp_path / "out")], capture_output=True, text=True, timeout=300,
                          preexec_fn=limit_memory)
    assert done.returncode == 5, done.stderr
    assert done.stderr.count("\n") == 1 and "out of memory on this machine" in done.stderr, done.stderr
    assert not (tmp_path / "out" / "report.json").exists()

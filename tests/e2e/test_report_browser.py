"""report.html in a real browser: headless Chromium (Debian's `chromium`) loads the page
from disk, its script draws every section, and the DOM it leaves says so. Skips where
Chromium is absent (scripts/setup.sh installs it)."""
import json
import os
import re
import shutil
import subprocess

import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium (Debian package chromium) is not installed")

PLOTS = ("utilization-plot", "roofline-plot", "memory-plot", "interconnect-plot")
TABLES = ("per-op-table", "layers-table")


def chromium(page, *args):
    # --virtual-time-budget lets the page's script finish before the DOM is dumped.
    command = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
               "--virtual-time-budget=10000", *args, page.as_uri()]
    # Without the ASan runtime that scripts/sanitize.sh preloads for the Python module:
    # Chromium is not tpusim's, and with it preloaded it hangs.
    env = {name: value for name, value in os.environ.items() if name != "LD_PRELOAD"}
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    return result.stdout


def sections(dom):
    """id -> (data-rendered of the element, its HTML up to the next heading)."""
    found = {}
    for match in re.finditer(r'<div id="([a-z-]+)"([^>]*)>', dom):
        rendered = re.search(r'data-rendered="([a-z]+)"', match.group(2))
        found[match.group(1)] = (rendered and rendered.group(1), dom[match.end():].split("<h2>")[0])
    return found


def run_report(tpusim_bin, mlp_path, out, *extra):
    result = subprocess.run([tpusim_bin, "run", mlp_path, "--hw", "tpuv4", "--out", str(out), *extra],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_every_section_renders_without_script_errors(tpusim_bin, mlp_path, tmp_path):
    out = tmp_path / "run"
    run_report(tpusim_bin, mlp_path, out)
    page = out / "report.html"
    dom = chromium(page, "--dump-dom")
    assert re.search(r'<body[^>]*data-rendered="ok"', dom), dom[:2000]
    assert re.search(r'<pre id="script-errors" hidden="">\s*</pre>', dom)
    found = sections(dom)
    for section in ("verdict",) + PLOTS + TABLES:
        assert found[section][0] == "ok", section
    for section in ("utilization-plot", "roofline-plot", "memory-plot"):
        assert "<svg" in found[section][1], section
    # Every execution unit has a row in the utilization plot; every op a point or a note.
    report = json.loads((out / "report.json").read_text())
    for unit, stats in report["units"].items():
        if "instructions" in stats:
            assert ">" + unit + "</text>" in found["utilization-plot"][1], unit
    assert found["roofline-plot"][1].count("<circle") > 0
    assert 'class="memory-over-time"' in found["memory-plot"][1]
    for section, rows in (("per-op-table", report["per_op"]), ("layers-table", report["layers"])):
        table = found[section][1].split("</table>")[0]
        assert table.count("<tr>") == len(rows) + 1, section
    assert "No interconnect in this run." in found["interconnect-plot"][1]
    assert "HBM-bound by the roofline" in found["verdict"][1]

    shot = tmp_path / "report.png"
    chromium(page, f"--screenshot={shot}", "--window-size=1150,2600")
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 20000  # a blank page is a few KB


def test_link_heatmap_and_missing_timeline(tpusim_bin, mlp_path, tmp_path):
    out = tmp_path / "run"
    # A data-parallel run on a ring of four chips: both directions of each of its 4 cables.
    run_report(tpusim_bin, mlp_path, out, "--no-instructions", "--topology", "4", "--set", "ici.topology=ring")
    report = json.loads((out / "report.json").read_text())
    assert len(report["interconnect"]["links"]) == 8
    dom = chromium(out / "report.html", "--dump-dom")
    assert re.search(r'<body[^>]*data-rendered="ok"', dom)
    found = sections(dom)
    heatmap = found["interconnect-plot"]
    assert heatmap[0] == "ok"
    assert heatmap[1].count('class="cell"') == 8
    assert "columns: destination chip" in heatmap[1]
    assert "No instruction timeline in this run" in found["utilization-plot"][1]

    # Past 64 chips the columns are the link dimensions: a 100-chip ring in x has one cell
    # per chip (its + and - links together).
    report["interconnect"] = {"links": [
        {"src": i, "dst": (i + step) % 100, "dim": "x", "dir": "+" if step == 1 else "-", "x": i, "y": 0, "z": 0,
         "bytes": 10, "busy_cycles": 1, "utilization": 0.5}
        for i in range(100) for step in (1, 99)]}
    (out / "report.json").write_text(json.dumps(report))
    assert subprocess.run([tpusim_bin, "report", str(out)], capture_output=True, timeout=120).returncode == 0
    heatmap = sections(chromium(out / "report.html", "--dump-dom"))["interconnect-plot"]
    assert heatmap[0] == "ok"
    assert heatmap[1].count('class="cell"') == 100
    assert "columns: link dimension" in heatmap[1]


def test_script_errors_are_caught_into_the_page(tpusim_bin, mlp_path, tmp_path):
    out = tmp_path / "run"
    run_report(tpusim_bin, mlp_path, out)
    page = out / "report.html"
    text = page.read_text()
    # Break one section's data: the others still render and the error is shown on the page.
    broken = text.replace('"roofline":{', '"roofline":null,"unused":{', 1)
    assert broken != text
    page.write_text(broken)
    dom = chromium(page, "--dump-dom")
    assert re.search(r'<body[^>]*data-rendered="error"', dom)
    errors = re.search(r'<pre id="script-errors">([^<]*)</pre>', dom)
    assert errors and errors.group(1).startswith("roofline-plot: "), dom[:3000]
    assert sections(dom)["per-op-table"][0] == "ok"


def test_compare_page_draws_simulated_against_measured(tpusim_bin, mlp_path, tmp_path):
    """tpusim compare writes compare.html: the simulation's page with the comparison's sections."""
    common = ["--batch", "8", "--seed", "3"]
    run_report(tpusim_bin, mlp_path, tmp_path / "sim", "--functional", "--no-instructions", *common)
    for step in (["reference", mlp_path, "--backend", "cpu", "--numerics", "mxu", "--repeats", "1",
                  "--out", str(tmp_path / "ref"), *common],
                 ["compare", str(tmp_path / "sim" / "report.json"), str(tmp_path / "ref" / "report.json"),
                  "--out", str(tmp_path / "cmp")]):
        result = subprocess.run([tpusim_bin, *step], capture_output=True, text=True, timeout=300)
        assert result.returncode == 0, result.stderr
    comparison = json.loads((tmp_path / "cmp" / "compare.json").read_text())
    dom = chromium(tmp_path / "cmp" / "compare.html", "--dump-dom")
    assert re.search(r'<body[^>]*data-rendered="ok"', dom), dom[:2000]
    found = sections(dom)
    for section in ("verdict", "per-op-table", "compare-plot", "compare-table", "numerics-table"):
        assert found[section][0] == "ok", section
    timed = [row for row in comparison["per_op"]
             if row["status"] == "matched" and row["sim_time_s"] > 0 and row["ref_time_s"] > 0]
    assert len(timed) > 0
    assert found["compare-plot"][1].count("<circle") == len(timed)
    assert "numerics mxu" in found["compare-plot"][1]
    table = found["compare-table"][1].split("</table>")[0]
    assert table.count("<tr>") == len(comparison["per_op"]) + 1
    numerics = found["numerics-table"][1].split("</table>")[0]
    assert numerics.count("<tr>") == len(comparison["numerics"]["outputs"]) + 1

"""tpusim.sweep: one simulation per case of a sweep spec (as tpusim sweep), or per point of a grid."""
import itertools
import os

from tpusim import _core, session
from tpusim.progress import Progress


def _listed(value):
    return [value] if isinstance(value, (str, bytes, os.PathLike)) else list(value)


def _variation(entry):
    """A variation as configs/sweep.proto's message: {"set": [...]} as it is, a list of "key=value"
    strings, or a dict of parameters to values."""
    if isinstance(entry, dict) and set(entry) <= {"set"}:
        return {"set": _listed(entry.get("set", []))}
    if isinstance(entry, dict):
        return {"set": [f"{key}={value}" for key, value in entry.items()]}
    return {"set": _listed(entry)}


def _spec_dict(spec):
    """The dict form of a spec with its conveniences spelt out: a single model or preset for a
    list of one, variations as lists or parameter dicts."""
    spec = dict(spec)
    for key in ("model", "preset"):
        if key in spec:
            spec[key] = [os.fspath(item) for item in _listed(spec[key])]
    if "variation" in spec:
        spec["variation"] = [_variation(entry) for entry in spec["variation"]]
    if "strategy" in spec:
        spec["strategy"] = [dict(entry) for entry in spec["strategy"]]
    return spec


def _spec_sweep(spec, jobs, out, reports, progress):
    if not isinstance(spec, dict):
        path = os.fspath(spec)
        if path.endswith((".onnx", ".hlo", ".tpuprog")):
            raise ValueError(f"{path} is a model: sweep it over a grid (sweep(model, grid)) or name it in a spec")
        spec = path
    else:
        spec = _spec_dict(spec)
    shown = {}
    if progress is None or progress is True:
        def progress(row, total):
            if "bar" not in shown:
                shown["bar"] = Progress(total)
            sets = ",".join(row["sets"]) or "preset"
            label = f"{row['model']} {row['preset']} {sets} {row['strategy']}"
            shown["bar"].step(label, row["step_cycles"] or 0)
    return _core.sweep_spec(spec, jobs=jobs, out=None if out is None else os.fspath(out), reports=reports,
                            progress=progress or None)


def sweep(spec, grid=None, hw="tpuv4", overrides=None, progress=None, jobs=1, out=None, reports=False, **options):
    """Runs a sweep and returns its results, in order.

    With a sweep spec (no grid): `spec` is a .textproto file or a dict of the same fields
    (configs/sweep.proto, docs/sweep.md); the cases are models x presets x variations x
    strategies. Returns the rows of sweep.json, one dict per case, the same for any `jobs`
    (worker processes); `out` writes sweep.json and sweep.csv there, with reports=True each
    case's run directory too. progress: None shows a line per case on stderr, False none, or
    a function(row, total).

    With a grid: simulates the model `spec` (a path or a tpusim.keras model) at every point of
    `grid`: names mapped to lists of values. A dotted name ("mxu.rows") is a hardware
    parameter, applied like an override; any other name ("batch", "hw", "precision",
    "optimizer", ...) is a keyword argument of tpusim.run. The points are the product of
    the lists, the last name varying fastest. overrides, options: fixed for every point (a
    grid name wins over them). progress: None shows progress on stderr (a bar on a terminal,
    lines otherwise), False shows none, or a tpusim.progress.Progress. Each result is
    {"point": {name: value}, "report": the report.json dict}.
    """
    if grid is None:
        if overrides or options or hw != "tpuv4":
            raise ValueError("a spec sweep takes its presets, sets and run options from the spec")
        return _spec_sweep(spec, jobs, out, reports, progress)
    if jobs != 1 or out is not None or reports:
        raise ValueError("jobs, out and reports apply to a spec sweep (sweep(spec)), not a grid")
    path = spec
    if not grid:
        raise ValueError("sweep needs at least one grid entry: a name and its list of values")
    names = list(grid)
    values = []
    for name in names:
        choices = list(grid[name]) if not isinstance(grid[name], (str, bytes)) else None
        if not choices:
            raise ValueError(f"grid entry '{name}' needs a non-empty list of values")
        values.append(choices)
    points = [dict(zip(names, combination)) for combination in itertools.product(*values)]
    if progress is None:
        progress = Progress(len(points))
    results = []
    for point in points:
        run_overrides = dict(overrides or {})
        kwargs = dict(options)
        kwargs["hw"] = hw
        for name, value in point.items():
            if "." in name:
                run_overrides[name] = value
            else:
                kwargs[name] = value
        report = session.run(path, overrides=run_overrides, progress=False, **kwargs)
        results.append({"point": point, "report": report})
        if progress:
            progress.step(" ".join(f"{k}={v}" for k, v in point.items()), report["total_cycles"])
    return results

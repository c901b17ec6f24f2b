"""tpusim.sweep: one simulation per point of a grid of parameters and run options."""
import itertools

from tpusim import session
from tpusim.progress import Progress


def sweep(path, grid, hw="tpuv4", overrides=None, progress=None, **options):
    """Simulates `path` (or a tpusim.keras model) at every point of `grid` and returns a list of results, in order.

    grid: names mapped to lists of values. A dotted name ("mxu.rows") is a hardware
    parameter, applied like an override; any other name ("batch", "hw", "precision",
    "optimizer", ...) is a keyword argument of tpusim.run. The points are the product of
    the lists, the last name varying fastest.
    overrides, options: fixed for every point (a grid name wins over them).
    progress: None shows progress on stderr (a bar on a terminal, lines otherwise),
    False shows none, or a tpusim.progress.Progress.
    Each result is {"point": {name: value}, "report": the report.json dict}.
    """
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

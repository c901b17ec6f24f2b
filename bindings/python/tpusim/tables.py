"""A report's tables as numpy arrays: the per-op table as a dict of columns, and the
utilization over time of each execution unit (the extension's utilization_timeline)."""
import numpy

from tpusim import _core


def per_op_table(report):
    """report["per_op"] as {column: numpy array}, one entry per op in the report's order.
    Text columns are str arrays, counts int64, fractions and seconds float64; a column
    that some rows lack is filled with "" or NaN."""
    rows = report["per_op"]
    columns = []
    for row in rows:
        columns.extend(name for name in row if name not in columns)
    table = {}
    for name in columns:
        values = [row.get(name) for row in rows]
        present = [v for v in values if v is not None]
        if all(isinstance(v, str) for v in present):
            table[name] = numpy.array(["" if v is None else v for v in values], dtype=str)
        elif all(isinstance(v, int) and not isinstance(v, bool) for v in present) and len(present) == len(values):
            table[name] = numpy.array(values, dtype=numpy.int64)
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
            table[name] = numpy.array([numpy.nan if v is None else v for v in values], dtype=numpy.float64)
        else:
            table[name] = numpy.array(values, dtype=object)
    return table


def utilization_timeline(report):
    """{"window_cycles": int, "start_cycle": array, "units": {unit: array of utilization per window}}
    (report/utilization_windows.hpp: at most 100 equal windows of the step)."""
    return _core.utilization_timeline(report)

"""ResNet-50 training step time against the MXU size (mxu.rows = mxu.cols), with a plot.

Smaller systolic arrays take more passes over each convolution; bigger ones leave PEs
idle on small channel counts. Prints a table and writes an SVG line plot.

    PYTHONPATH=build/bindings /usr/bin/python3 examples/resnet_mxu_sweep.py --batch 8 --sizes 64 128 256 --plot mxu.svg
"""
import argparse
import pathlib

import tpusim

MODEL = pathlib.Path(__file__).resolve().parents[1] / "traces" / "resnet50.onnx"


def svg_plot(xs, ys, x_label, y_label, title):
    """A self-contained SVG line plot of ys against xs (log2 x axis)."""
    import math
    width, height, margin = 480, 320, 60
    lx = [math.log2(x) for x in xs]
    x0, x1 = min(lx), max(lx) if max(lx) > min(lx) else min(lx) + 1
    y0, y1 = 0.0, max(ys) * 1.1

    def px(v):
        return margin + (v - x0) / (x1 - x0) * (width - 2 * margin)

    def py(v):
        return height - margin - (v - y0) / (y1 - y0) * (height - 2 * margin)

    points = " ".join(f"{px(a):.1f},{py(b):.1f}" for a, b in zip(lx, ys))
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
             f'font-size="12">',
             f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
             f'<line x1="{margin}" y1="{height - margin}" x2="{width - margin}" y2="{height - margin}" stroke="black"/>',
             f'<line x1="{margin}" y1="{margin}" x2="{margin}" y2="{height - margin}" stroke="black"/>',
             f'<polyline fill="none" stroke="steelblue" stroke-width="2" points="{points}"/>']
    for x, a, b in zip(xs, lx, ys):
        parts.append(f'<circle cx="{px(a):.1f}" cy="{py(b):.1f}" r="3" fill="steelblue"/>')
        parts.append(f'<text x="{px(a):.1f}" y="{height - margin + 16}" text-anchor="middle">{x}</text>')
    for i in range(5):
        v = y0 + (y1 - y0) * i / 4
        parts.append(f'<text x="{margin - 6}" y="{py(v) + 4:.1f}" text-anchor="end">{v:.3g}</text>')
    parts.append(f'<text x="{width / 2}" y="{height - 15}" text-anchor="middle">{x_label}</text>')
    parts.append(f'<text x="15" y="{height / 2}" text-anchor="middle" transform="rotate(-90 15 {height / 2})">'
                 f'{y_label}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=str(MODEL))
    parser.add_argument("--hw", default="tpuv4")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--sizes", type=int, nargs="+", default=[32, 64, 128, 256])
    parser.add_argument("--plot", default="resnet_mxu_sweep.svg", help="SVG file to write")
    args = parser.parse_args()

    # rows and cols move together: one grid entry would vary them independently.
    step_ms = []
    print(f"{args.model.split('/')[-1]} training on {args.hw}, batch {args.batch}")
    print(f"{'MXU':>9} {'step ms':>9} {'MXU busy %':>10} {'MAC util %':>10}")
    for size in args.sizes:
        report = tpusim.run(args.model, hw=args.hw, batch=args.batch, overrides={"mxu.rows": size, "mxu.cols": size},
                            instructions=False)
        mxus = [unit for name, unit in report["units"].items() if ".mxu" in name]
        busy = 100.0 * sum(unit["utilization"] for unit in mxus) / len(mxus)
        macs = 100.0 * sum(unit["mac_utilization"] for unit in mxus) / len(mxus)
        step_ms.append(report["step_time_s"] * 1e3)
        print(f"{size:>4}x{size:<4} {step_ms[-1]:>9.3f} {busy:>10.1f} {macs:>10.1f}")
    pathlib.Path(args.plot).write_text(svg_plot(args.sizes, step_ms, "MXU size (rows = cols)", "step time (ms)",
                                                f"ResNet-50 training step, batch {args.batch}"))
    print(f"plot         {args.plot}")


if __name__ == "__main__":
    main()

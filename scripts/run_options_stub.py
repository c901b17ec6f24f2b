"""The run options' keyword arguments in the type stub bindings/python/tpusim/_core.pyi.

Every function of the stub that takes the run options has, after its own parameters, a block
between the lines BEGIN and END below: its keyword-only arguments, one per run option
(api/run_options.cpp, tpusim._core.run_options()) that is not one of its own parameters.
`python3 scripts/run_options_stub.py STUB` rewrites the blocks from the built module
(scripts/update-golden.sh runs it); tests/python/test_run_options.py checks them.
"""
import re
import sys

BEGIN = "    # run options (docs/run-options.md): written by scripts/update-golden.sh"
END = "    # end of run options"
PYTHON_TYPES = {"int": "int", "uint": "int", "float": "float", "bool": "bool", "str": "str"}


def block_lines(options, own_parameters):
    """The block of a function whose own parameters are `own_parameters`."""
    lines = [BEGIN]
    for option in options:
        if option["name"] not in own_parameters:
            lines.append(f"    {option['name']}: {PYTHON_TYPES[option['type']]} = ...,")
    lines.append(END)
    return lines


def own_parameters(header_lines):
    """The parameter names of a function's lines before its block."""
    names = []
    for line in header_lines:
        match = re.match(r"\s+(\w+)\s*:", line)
        if match:
            names.append(match.group(1))
    return names


def rewrite(text, options):
    """`text` with each block made again from `options`."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line != BEGIN:
            out.append(line)
            i += 1
            continue
        start = max(j for j in range(len(out)) if out[j].startswith("def "))
        out.extend(block_lines(options, own_parameters(out[start + 1:])))
        i = lines.index(END, i) + 1
    return "\n".join(out)


def main():
    import tpusim._core
    path = sys.argv[1]
    with open(path) as f:
        text = f.read()
    with open(path, "w") as f:
        f.write(rewrite(text, tpusim._core.run_options()))


if __name__ == "__main__":
    main()

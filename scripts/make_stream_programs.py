#!/usr/bin/env python3
"""Writes the hand-written DMA-only Programs of docs/memory.md ("Streaming through the chip")
into a folder, as text Programs that `tpusim run FILE.tpuprog.txt` reads:
  stream1     one 32 MiB read
  stream4     four 8 MiB reads on one engine
  readwrite   a 16 MiB read (engine 0) and a 16 MiB write (engine 1) at once
Usage: scripts/make_stream_programs.py OUT_DIR"""
import pathlib
import sys

MIB = 1 << 20


def program(name, transfers):
    body = []
    for i, (address, size, engine, load) in enumerate(transfers):
        src, dst = ("HBM", "VMEM") if load else ("VMEM", "HBM")
        body.append(f'  instructions {{ id: {i} name: "t{i}" op: "t" op_type: "DMA" unit: DMA core: 0 '
                    f'unit_index: {engine} dma {{ src: {src} dst: {dst} bytes: {size} hbm_address: {address} }} }}')
    return (f'format: "tpusim.Program"\nschema_version: 1\nmodel: "{name}"\nmode: "inference"\n'
            f'target_hw: "tpuv4"\nbatch: 1\nchips {{\n  chip: 0\n' + "\n".join(body) + "\n}\n")


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    programs = {
        "stream1": [(0, 32 * MIB, 0, True)],
        "stream4": [(i * 8 * MIB, 8 * MIB, 0, True) for i in range(4)],
        "readwrite": [(0, 16 * MIB, 0, True), (64 * MIB, 16 * MIB, 1, False)],
    }
    for name, transfers in programs.items():
        (out / f"{name}.tpuprog.txt").write_text(program(name, transfers))


if __name__ == "__main__":
    main()

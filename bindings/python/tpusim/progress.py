"""Progress of a sweep on stderr: a bar that redraws itself on a terminal, plain lines otherwise."""
import sys
import time


class Progress:
    """Reports `total` steps; call step(label, cycles) after each one."""

    def __init__(self, total, stream=None, bar=None, clock=time.monotonic):
        self.total = total
        self.stream = stream if stream is not None else sys.stderr
        self.bar = self.stream.isatty() if bar is None else bar
        self.clock = clock
        self.start = clock()
        self.done = 0

    def step(self, label, cycles):
        self.done += 1
        elapsed = self.clock() - self.start
        eta = elapsed / self.done * (self.total - self.done)
        text = (f"[{self.done}/{self.total}] {label}: {cycles:,} simulated cycles, "
                f"{elapsed:.1f} s elapsed, ETA {eta:.1f} s")
        if self.bar:
            width = 24
            filled = width * self.done // self.total
            end = "\n" if self.done == self.total else ""
            self.stream.write("\r\033[K[" + "#" * filled + "." * (width - filled) + "] " + text + end)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

"""A one-line progress bar on stderr for ``svd_lowrank(progress=True)`` (no tqdm needed)."""

import sys
import time

BAR_WIDTH = 30


class ProgressBar:
    """``update(done, note)`` redraws ``label [####----] done/total note elapsed``."""

    def __init__(self, label, total, stream=None):
        self.label = label
        self.total = max(total, 1)
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.perf_counter()
        self.done = 0

    def update(self, done=None, note=""):
        if done is not None:
            self.done = done
        filled = round(BAR_WIDTH * min(self.done, self.total) / self.total)
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        elapsed = time.perf_counter() - self.start
        self.stream.write(f"\r{self.label} [{bar}] {self.done}/{self.total} {note} "
                          f"{elapsed:.1f}s\x1b[K")
        self.stream.flush()

    def close(self):
        self.stream.write("\n")
        self.stream.flush()


class NoProgress:
    """Stands in for :class:`ProgressBar` when no progress is wanted."""

    def update(self, done=None, note=""):
        pass

    def close(self):
        pass

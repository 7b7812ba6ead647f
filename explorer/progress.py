"""A "compiling… 3 s" label shown under a running ``%%tcompile``/``%%tcompile_compare`` cell."""
from __future__ import annotations

import contextlib
import threading
import time


class Progress:
    """A "compiling… 3 s" label while a block runs, in a Jupyter frontend (a kernel with widgets);
    nothing elsewhere. It is removed when the block ends and never raises."""

    def __init__(self, shell, text: str):
        self.shell, self.text = shell, text
        self.label = self.handle = self.thread = None
        self.stop = threading.Event()
        self.start = time.perf_counter()

    def __enter__(self):
        if getattr(self.shell, "kernel", None) is None:
            return self
        try:
            import ipywidgets
            from IPython.display import display

            self.label = ipywidgets.Label(f"{self.text}…")
            self.handle = display(self.label, display_id=True)
            self.thread = threading.Thread(target=self._tick, daemon=True)
            self.thread.start()
        except Exception:  # noqa: BLE001 — progress is cosmetic
            pass
        return self

    def set(self, text: str) -> None:
        """Say what runs now (the clock restarts)."""
        self.text, self.start = text, time.perf_counter()
        if self.label is not None:
            self.label.value = f"{text}…"

    def _tick(self):
        while not self.stop.wait(1.0):
            self.label.value = f"{self.text}… {time.perf_counter() - self.start:.0f} s"

    def __exit__(self, *exc):
        self.stop.set()
        with contextlib.suppress(Exception):
            if self.thread:
                self.thread.join(timeout=2)
            if self.handle:
                self.handle.update({"text/plain": ""}, raw=True)
            if self.label:
                self.label.close()
        return False

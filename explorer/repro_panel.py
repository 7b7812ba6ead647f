"""Minify and Bisect drift buttons, under the error box: torch's minifier on a failing compile, torch's
CompilerBisector on the captured calls (``Capture.minify`` / ``Capture.bisect_drift``), each in a child process, run
from a worker thread like Try all — progress lines as the child prints them, Stop (the child's process group is
stopped), the answer drawn when it comes (``explorer.views.repro``) and kept in the capture (saved with it). A loaded
capture has no live function: the buttons are disabled and say so."""
from __future__ import annotations

import threading

import ipywidgets as widgets

from .html import esc, view_frame
from .views.repro import bisection_section, minified_section

TIMEOUT_S = 300.0


class ReproPanel(widgets.VBox):
    def __init__(self, capture, timeout: float = TIMEOUT_S):
        self.capture, self.timeout = capture, timeout
        self.worker: threading.Thread | None = None
        self.stop_requested = threading.Event()
        live = capture.live is not None and (capture.live.compiled_fn is not None or bool(capture.live.calls))
        self.minify = widgets.Button(description="Minify", tooltip="torch's minifier on the failing compile, in a "
                                     "child process: the smallest graph that still fails", disabled=not live)
        self.bisect = widgets.Button(description="Bisect drift", tooltip="torch's CompilerBisector: the backend, "
                                     "subsystem and pass where compiled outputs first differ from eager",
                                     disabled=not live)
        self.stop = widgets.Button(description="Stop", button_style="warning", layout=widgets.Layout(display="none"))
        self.status = widgets.HTML(esc("" if live else "Minify and Bisect need the live function: this capture was "
                                       "loaded from a file or made with compiler.capture() — run cap.minify(fn=..., "
                                       "calls=[...]) or cap.bisect_drift(...) where the function is."))
        self.answer = widgets.HTML()
        self.minify.on_click(lambda _: self.run("minify"))
        self.bisect.on_click(lambda _: self.run("bisect"))
        self.stop.on_click(lambda _: self.stop_requested.set())
        super().__init__([widgets.HBox([self.minify, self.bisect, self.stop]), self.status, self.answer])
        self.add_class("tc-repro-panel")

    @property
    def running(self) -> bool:
        return self.worker is not None and self.worker.is_alive()

    def run(self, what: str, wait: bool = False) -> None:
        """Start the child from a worker thread (``wait``: join it, for scripts and tests)."""
        if self.running:
            return
        self.stop_requested.clear()
        self.minify.disabled = self.bisect.disabled = True
        self.stop.layout.display = None
        self.status.value = esc(f"{what}: starting a child process (at most {self.timeout:.0f} s)…")

        def progress(line: str) -> None:
            self.status.value = esc(f"{what}: {line[:300]}")

        def work():
            try:
                method = self.capture.minify if what == "minify" else self.capture.bisect_drift
                found = method(timeout=self.timeout, progress=progress, should_stop=self.stop_requested.is_set)
                self.status.value = esc(f"{what}: done in {found.seconds or 0:.0f} s"
                                        + (f" — {found.stopped}" if found.stopped else "")
                                        + (f" — {found.reason}" if not found.available and found.reason else ""))
            except Exception as exc:  # noqa: BLE001 — said in the panel, never a traceback in the cell
                self.status.value = esc(f"{what} failed: {type(exc).__name__}: {exc}")
            finally:
                self.minify.disabled = self.bisect.disabled = False
                self.stop.layout.display = "none"
                self.show_answers()

        self.worker = threading.Thread(target=work, daemon=True)
        self.worker.start()
        if wait:
            self.worker.join()

    def show_answers(self) -> None:
        parts = [p for p in (minified_section(self.capture), bisection_section(self.capture)) if p]
        self.answer.value = view_frame("".join(str(p) for p in parts)) if parts else ""

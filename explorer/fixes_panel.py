"""The Fixes tab's controls: Try (one fix) and Try all (each alone, then the recommended together), with a
progress bar. A click runs the experiments in the kernel (``Capture.try_fixes``); the kernel's interrupt
(■ in JupyterLab) stops them and keeps what finished. A loaded capture has no live function: the
buttons are disabled and say so."""
from __future__ import annotations

import ipywidgets as widgets

from .html import esc


class FixesPanel(widgets.VBox):
    def __init__(self, capture, on_done=None):
        self.capture, self.on_done = capture, on_done
        fixes = _fixes(capture)
        applicable = [f for f in fixes if f.applicable] if fixes is not None else []
        live = capture.live is not None and (capture.live.compiled_fn is not None or bool(capture.live.calls))
        self.choice = widgets.Dropdown(options=[(f"{f.id}: {f.kind}", f.id) for f in applicable],
                                       layout=widgets.Layout(width="min(100%, 420px)"))
        self.try_one = widgets.Button(description="Try", tooltip="re-run the captured calls with this change")
        self.try_all = widgets.Button(description="Try all", button_style="primary",
                                      tooltip="each change alone, then the recommended ones together")
        self.progress = widgets.IntProgress(value=0, min=0, max=max(1, len(applicable) + 1),
                                            layout=widgets.Layout(width="200px", visibility="hidden"))
        self.status = widgets.HTML()
        if not applicable:
            self.status.value = esc("No change to try: the proposals are code changes, shown with their snippets.")
        elif not live:
            self.status.value = esc("Try needs the live function: this capture was loaded from a file or made "
                                    "with compiler.capture() — run cap.try_fixes(fn=..., calls=[...]) where the "
                                    "function is.")
        for button in (self.try_one, self.try_all):
            button.disabled = not (applicable and live)
        self.choice.disabled = not (applicable and live)
        self.try_one.on_click(lambda _: self.run([self.choice.value]))
        self.try_all.on_click(lambda _: self.run(None))
        super().__init__([widgets.HBox([self.choice, self.try_one, self.try_all, self.progress]), self.status])
        self.add_class("tc-fixes-panel")
        if not applicable and fixes is not None and not fixes.items:
            self.layout.display = "none"

    def run(self, only) -> None:
        self.progress.layout.visibility = "visible"
        self.progress.value = 0
        for button in (self.try_one, self.try_all):
            button.disabled = True

        def told(done, total, text):
            self.progress.max, self.progress.value = total, done
            self.status.value = esc(text + " — interrupt the kernel (■) to stop; what finished is kept")

        try:
            self.capture.try_fixes(only=only, progress=told)
            self.status.value = esc("done: the measured results are below")
        except KeyboardInterrupt:
            self.status.value = esc("stopped: the fixes tried so far keep their results")
        except Exception as exc:  # noqa: BLE001 — shown, never raised into the notebook
            self.status.value = esc(f"could not try: {type(exc).__name__}: {exc}")
        finally:
            for button in (self.try_one, self.try_all):
                button.disabled = False
            self.progress.layout.visibility = "hidden"
            if self.on_done:
                self.on_done()


def _fixes(capture):
    try:
        return capture.fixes()
    except Exception:  # noqa: BLE001
        return None

"""The Fixes tab's controls: Try (one fix) and Try all (each alone, then the recommended together) with a
progress bar and Stop, Copy snippet, and Before/after (the experiment's before and after captures side
by side, in the diff view of ``explorer.views.diff``).

A click runs the experiments in a worker thread (``Capture.try_fixes``), so the kernel keeps answering and
Stop can be clicked: the running experiment finishes (a compile is not cut off half way), the rest are
not tried, and what finished is kept. Wait for the experiments before compiling in another cell: they
record every compile of this process while they run. A loaded capture has no live function: Try is
disabled and says so; its proposals, snippets and any saved results are still shown."""
from __future__ import annotations

import threading

import ipywidgets as widgets

from .copy_button import CopyButton
from .html import esc, join


class FixesPanel(widgets.VBox):
    def __init__(self, capture, on_done=None):
        self.capture, self.on_done = capture, on_done
        self.worker: threading.Thread | None = None
        self.stop_requested = threading.Event()
        fixes = _fixes(capture)
        self.fixes = list(fixes) if fixes is not None else []
        applicable = [f for f in self.fixes if f.applicable]
        self.live = capture.live is not None and (capture.live.compiled_fn is not None or bool(capture.live.calls))
        self.choice = widgets.Dropdown(
            options=[(f"{f.id}: {f.kind}" + ("" if f.applicable else " (code change)"), f.id) for f in self.fixes],
            layout=widgets.Layout(width="min(100%, 420px)"))
        self.try_one = widgets.Button(description="Try", tooltip="re-run the captured calls with this change")
        self.try_all = widgets.Button(description="Try all", button_style="primary",
                                      tooltip="each change alone, then the recommended ones together")
        self.stop = widgets.Button(description="Stop", button_style="warning",
                                   tooltip="finish the running experiment, keep what finished, try no more",
                                   layout=widgets.Layout(display="none"))
        self.compare = widgets.ToggleButton(description="Before/after",
                                            tooltip="the experiment's before and after captures, side by side")
        self.copy = CopyButton()
        self.progress = widgets.IntProgress(value=0, min=0, max=max(1, len(applicable) + 1),
                                            layout=widgets.Layout(width="200px", visibility="hidden"))
        self.status = widgets.HTML()
        self.diff = widgets.HTML(layout=widgets.Layout(display="none"))
        self.try_one.on_click(lambda _: self.run([self.choice.value]))
        self.try_all.on_click(lambda _: self.run(None))
        self.stop.on_click(lambda _: self.request_stop())
        self.choice.observe(lambda _: self.refresh(), names="value")
        self.compare.observe(lambda _: self.show_diff(), names="value")
        super().__init__([widgets.HBox([self.choice, self.try_one, self.try_all, self.stop, self.progress]),
                          widgets.HBox([self.copy, self.compare]), self.status, self.diff])
        self.add_class("tc-fixes-panel")
        if not applicable:
            self.status.value = esc("No change to try: the proposals are code changes, shown with their snippets.")
        elif not self.live:
            self.status.value = esc("Try needs the live function: this capture was loaded from a file or made "
                                    "with compiler.capture() — run cap.try_fixes(fn=..., calls=[...]) where the "
                                    "function is.")
        if not self.fixes:
            self.layout.display = "none"
        self.refresh()

    @property
    def chosen(self):
        return next((f for f in self.fixes if f.id == self.choice.value), None)

    @property
    def running(self) -> bool:
        return self.worker is not None and self.worker.is_alive()

    def refresh(self) -> None:
        """Buttons and copy text for the chosen fix."""
        fix = self.chosen
        self.copy.text = fix.snippet if fix else ""
        self.copy.label = f"Copy {fix.id}'s snippet" if fix else "Copy snippet"
        can_try = bool(self.live and not self.running)
        self.try_one.disabled = not (can_try and fix is not None and fix.applicable)
        self.try_all.disabled = not (can_try and any(f.applicable for f in self.fixes))
        self.choice.disabled = not self.fixes
        self.compare.disabled = self._diff() is None
        self.compare.tooltip = _compare_tip(fix, self.compare.disabled, self.live)
        if self.compare.disabled and self.compare.value:
            self.compare.value = False
        self.show_diff()

    def _diff(self):
        fix = self.chosen
        if fix is None or fix.result is None:
            return None
        from compiler.analyses.fix_experiments import diff_of

        try:
            return diff_of(fix.result, labels=("before", f"after {fix.id}"))
        except Exception:  # noqa: BLE001 — a diff that cannot be made is not offered
            return None

    def show_diff(self) -> None:
        if not self.compare.value:
            self.diff.layout.display = "none"
            return
        from .html import style_tag, view_frame
        from .views.diff import compare_style_tag, render_diff

        capture_diff = self._diff()
        if capture_diff is None:
            self.diff.layout.display = "none"
            return
        self.diff.value = str(join([style_tag(), compare_style_tag(), view_frame(render_diff(capture_diff))]))
        self.diff.layout.display = None

    def request_stop(self) -> None:
        self.stop_requested.set()
        self.stop.disabled = True
        self.status.value = esc("stopping after the running experiment — what finished is kept")

    def run(self, only, wait: bool = False) -> None:
        """Try ``only`` (fix ids; None: all) in a worker thread; ``wait``: join it (tests, scripts)."""
        if self.running:
            return
        self.stop_requested.clear()
        self.progress.layout.visibility = "visible"
        self.progress.value = 0
        self.stop.layout.display = None
        self.stop.disabled = False
        for button in (self.try_one, self.try_all):
            button.disabled = True
        self.worker = threading.Thread(target=self._work, args=(only,), name="tcompile-fixes", daemon=True)
        self.worker.start()
        if wait:
            self.worker.join()

    def _work(self, only) -> None:
        def told(done, total, text):
            self.progress.max, self.progress.value = total, done
            if not self.stop_requested.is_set():
                self.status.value = esc(text + " — Stop keeps what finished")

        try:
            fixes = self.capture.try_fixes(only=only, progress=told, should_stop=self.stop_requested.is_set)
            stopped = self.stop_requested.is_set() and fixes.note and fixes.note.startswith("stopped")
            self.status.value = esc(f"{fixes.note}: the measured results are below" if stopped
                                    else "done: the measured results are below")
        except Exception as exc:  # noqa: BLE001 — shown, never raised into the notebook
            self.status.value = esc(f"could not try: {type(exc).__name__}: {exc}")
        finally:
            self.stop.layout.display = "none"
            self.progress.layout.visibility = "hidden"
            self.worker = None
            self.refresh()
            if self.on_done:
                self.on_done()


def _fixes(capture):
    try:
        return capture.fixes()
    except Exception:  # noqa: BLE001
        return None


def _compare_tip(fix, disabled: bool, live: bool) -> str:
    """What Before/after shows, or, disabled, why not (issue 46: on a loaded capture it said nothing)."""
    if not disabled:
        return "the experiment's before and after captures, side by side"
    if fix is None:
        return "Before/after: no fix to show"
    if fix.result is None:
        return (f"Before/after: {fix.id} has not been tried — "
                + ("Try makes its before and after captures" if live else
                   "Try needs the live function (this capture was loaded from a file or made with compiler.capture())"))
    return f"Before/after: {fix.id}'s before and after captures cannot be compared"


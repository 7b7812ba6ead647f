"""The what-if panel of the Guards tab: would a call with other arguments reuse a compile, or recompile?

Two modes (``compiler.analyses.whatif``): **check guards** runs the selected compile's frame guards on the
would-be arguments without calling anything; **dry run** calls the compiled function once under
``torch.compile.set_stance("eager_on_recompile")`` — it runs the user's code — and names every frame
that would recompile. The argument box's placeholder is the captured call's own arguments (shapes
and dtypes), and empty input or a missing argument is refused rather than answered.
"""
from __future__ import annotations

import ast
import inspect

import ipywidgets as widgets

from .html import Html, code, join, note, para, table, tag, view_frame

CHECK, DRY = "check", "dry"
HELP = {
    CHECK: "Check guards: your arguments are Python evaluated in the notebook's namespace (this runs that "
           "expression); the function is not called — the selected frame's cached compiles run their guards on "
           "them. Frames after a graph break and hooks are only checked by a dry run.",
    DRY: "Dry run: calls the compiled function once with these arguments under "
         "torch.compiler.set_stance(\"eager_on_recompile\") — this RUNS YOUR CODE, side effects included; nothing "
         "is compiled (a frame that would recompile runs eagerly) — and names every frame that would recompile.",
}


def user_namespace() -> dict:
    """The notebook's namespace when running under IPython, else an empty one."""
    try:
        from IPython import get_ipython
    except ImportError:
        return {}
    shell = get_ipython()
    return shell.user_ns if shell is not None else {}


def evaluate_arguments(text: str, namespace: dict) -> tuple[tuple, dict]:
    """``"x=torch.randn(16, 8)"`` → ``((), {"x": tensor})``, evaluated in ``namespace`` (user code)."""
    tree = ast.parse(f"__tcompile_arguments__({text})", mode="eval")
    call = tree.body
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
            and call.func.id == "__tcompile_arguments__"):
        raise SyntaxError("expected call arguments such as: x=torch.randn(16, 8)")
    scope = dict(namespace)
    if "torch" not in scope:
        import torch

        scope["torch"] = torch
    scope["__tcompile_arguments__"] = lambda *args, **kwargs: (args, kwargs)
    return eval(compile(tree, "<what-if arguments>", "eval"), scope)  # noqa: S307 — the user's own code


# --- the placeholder: the captured call's arguments -----------------------------------------------

def tensor_text(shape, dtype: str | None, requires_grad: bool = False) -> str:
    """``torch.randn(8, 4)`` for a float32 tensor of that shape; other dtypes spelled out."""
    dims = ", ".join(str(d) for d in shape)
    dtype = (dtype or "float32").removeprefix("torch.")
    grad = ", requires_grad=True" if requires_grad else ""
    if dtype.startswith(("float", "bfloat", "complex")):
        extra = "" if dtype == "float32" else f", dtype=torch.{dtype}"
        return f"torch.randn({dims}{extra}{grad})" if shape else f"torch.tensor(0.0{extra}{grad})"
    return f"torch.zeros(({dims}{',' if len(shape) == 1 else ''}), dtype=torch.{dtype})"


def value_text(value, namespace: dict) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return tensor_text(tuple(value.shape), str(value.dtype), value.requires_grad)
    if isinstance(value, (bool, int, float, str, type(None))) and len(repr(value)) <= 40:
        return repr(value)
    name = next((k for k, v in namespace.items() if v is value and k.isidentifier() and not k.startswith("_")), None)
    return name or f"<{type(value).__name__}>"


def arguments_from_call(fn, args, kwargs, namespace: dict) -> str | None:
    """``x=torch.randn(8, 4), k=2`` for the arguments the captured call was made with."""
    from compiler.analyses.whatif import target_function

    try:
        bound = inspect.signature(target_function(fn)).bind(*args, **kwargs)
    except (TypeError, ValueError):
        return None
    return ", ".join(f"{name}={value_text(value, namespace)}" for name, value in bound.arguments.items())


def arguments_from_compile(compile, code) -> str:
    """For a frame known only by its code (a resume frame): its parameters, with the shapes its FX
    graph's inputs had and the values its guards pinned."""
    placeholders = {n.name: n for n in compile.graph.nodes if n.op == "placeholder"} if compile.graph.available else {}
    pinned = {row.source: row.condition.split("==", 1)[1].strip() for row in compile.guards.rows
              if row.kind in ("EQUALS_MATCH", "CONSTANT_MATCH") and "==" in row.condition}
    parts = []
    for name in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]:
        node = placeholders.get(f"L_{name}_")
        if node is not None and node.shape is not None:
            parts.append(f"{name}={tensor_text(node.shape, node.dtype)}")
        else:
            parts.append(f"{name}={pinned.get(f'L[{name!r}]', '…')}")
    return ", ".join(parts)


# --- answers ----------------------------------------------------------------------------------------

def what_if_answer(result) -> Html:
    """A no-run ``WhatIf`` or a ``DryRun``, as HTML: the verdict, then the frames or compiles checked."""
    from compiler.analyses.whatif import DryRun

    verdict = note(result.as_text(), kind="warn" if result.recompiles else "ok")
    if isinstance(result, DryRun):
        rows = ([[code(r.frame.function), ", ".join(r.frame.compile_ids), "would recompile", r.failed_guard]
                 for r in result.recompiles]
                + [[code(r.frame.function), r.compile_id, "reuses its compile", ""] for r in result.reused]
                + [[code(f.function), ", ".join(f.compile_ids), "not reached", ""] for f in result.not_checked])
        return join([verdict, table(["frame", "compiles", "verdict", "failing guard"], rows) if rows else None])
    rows = [[code(c.compile_id), "passed" if c.passed else "failed", c.reason, c.guards_checked]
            for c in result.checks]
    unchecked = [[code(f.function), ", ".join(f.compile_ids), f.kind] for f in result.not_checked]
    return join([verdict,
                 table(["cached compile", "guards", "failing guard", "guards checked"], rows) if rows else None,
                 join([para("Not checked without running the call (use a dry run):", cls="tc-muted"),
                       table(["frame", "compiles", "what it is"], unchecked)]) if unchecked else None])


class WhatIfPanel(widgets.VBox):
    """Ask whether a call with other arguments would reuse a compile or recompile, and why."""

    def __init__(self, capture, fn=None, namespace: dict | None = None):
        self.capture, self.fn, self.namespace = capture, fn, namespace
        self.compile = capture.compiles[0] if capture.compiles else None
        self.mode = widgets.ToggleButtons(options=[("Check guards (no run)", CHECK), ("Dry run (runs your code)", DRY)],
                                          value=CHECK, style={"button_width": "auto"})
        self.arguments = widgets.Text(description="Arguments:", layout=widgets.Layout(width="60%"))
        self.button = widgets.Button(description="Would it recompile?", button_style="info",
                                     layout=widgets.Layout(width="auto"))
        self.header = widgets.HTML()
        self.answer = widgets.HTML()
        self.button.on_click(lambda _: self.check())
        self.mode.observe(lambda _: self._describe(), names="value")
        super().__init__([self.header, self.mode, widgets.HBox([self.arguments, self.button]), self.answer])
        self.select(self.compile)

    # --- what is asked about ----------------------------------------------------------------------

    def select(self, compile) -> None:
        """Ask about ``compile`` (the explorer's selected compile) from now on."""
        self.compile = compile
        self.answer.value = ""
        self._describe()

    def _entry_code(self):
        from compiler.analyses.whatif import target_function

        try:
            target = target_function(self.fn)
        except Exception:  # noqa: BLE001
            return None
        if hasattr(target, "co_varnames"):  # already a code object
            return target
        return getattr(getattr(target, "__func__", target), "__code__", None)

    def target(self):
        """What the no-run check binds the arguments to: the function itself when the selected compile
        is of its entry frame, else the selected frame's code object (every parameter required)."""
        if self.fn is None or self.compile is None:
            return self.fn
        code = self.capture.frame_code(self.compile.compile_id)
        return self.fn if code is None or code is self._entry_code() else code

    def unavailable_reason(self) -> str | None:
        if not self.capture.is_live:
            return ("What-if needs a live capture: this one was loaded from a file, which keeps the guards "
                    "only as text. Capture in this process (compiler.explore / %%tcompile) to ask.")
        if self.fn is None:
            return "What-if needs the function: pass fn= to show() / Explorer()."
        if self.mode.value == DRY and (self.capture.live.compiled_fn is None and not callable(self.fn)):
            return "A dry run calls the function: pass fn= (the function or module) to show() / Explorer()."
        return None

    def placeholder(self) -> str:
        """The captured call's arguments, as text to edit."""
        namespace = self._namespace()
        target, live = self.target(), self.capture.live
        if self.mode.value == DRY or target is self.fn:
            if live is not None and live.args is not None:
                text = arguments_from_call(self.fn, live.args, live.kwargs or {}, namespace)
                if text:
                    return text
            if self.compile is None:
                return ""
            target = self.capture.frame_code(self.capture.compiles[0].compile_id)
            compile = self.capture.compiles[0]
        else:
            compile = self.compile
        return arguments_from_compile(compile, target) if target is not None and hasattr(target, "co_varnames") else ""

    def _describe(self) -> None:
        reason = self.unavailable_reason()
        self.arguments.disabled = self.button.disabled = reason is not None
        self.arguments.placeholder = self.placeholder() if reason is None else ""
        if self.mode.value == DRY:
            subject = "the whole call"
        elif self.compile is not None:
            subject = f"compile {self.compile.compile_id} ({self.compile.name})"
        else:
            subject = "the function"
        self.header.value = view_frame(join([tag("h4", f"What if {subject} is called with…", cls="tc-heading"),
                                             para(reason or HELP[self.mode.value], cls="tc-whatif-help")]))

    def _namespace(self) -> dict:
        return self.namespace if self.namespace is not None else user_namespace()

    # --- asking ---------------------------------------------------------------------------------------

    def ask(self, text: str, mode: str | None = None) -> Html:
        """The answer for arguments ``text`` (``mode``: "check" or "dry", default the toggle's), as HTML;
        bad input becomes a message."""
        if mode is not None:
            self.mode.value = mode
        reason = self.unavailable_reason()
        if reason:
            return note(reason, kind="muted")
        if not text.strip():
            example = self.placeholder()
            return note(tag("strong", "Enter the arguments of the call"), f", e.g. {example}" if example else "",
                        kind="error")
        try:
            args, kwargs = evaluate_arguments(text, self._namespace())
        except Exception as exc:  # noqa: BLE001 — the user's input: show it, never a traceback
            return note(tag("strong", "Could not evaluate the arguments: "), f"{type(exc).__name__}: {exc}",
                        kind="error")
        dry = self.mode.value == DRY
        fn = (self.capture.live.compiled_fn or self.fn) if dry else self.target()
        try:
            missing = self._missing(fn, args, kwargs)
            if missing:
                return note(tag("strong", "Missing arguments: "), missing, kind="error")
            result = self.capture.what_if(fn, *args, dry_run=dry, **kwargs)
        except TypeError as exc:
            return note(tag("strong", "These arguments do not fit the function: "), str(exc), kind="error")
        except Exception as exc:  # noqa: BLE001
            return note(tag("strong", "The dry run failed: " if dry else "The guard check failed: "),
                        f"{type(exc).__name__}: {exc}", kind="error")
        return what_if_answer(result)

    def _missing(self, fn, args, kwargs) -> str | None:
        """Parameters the captured call passed that these arguments leave out (a default would silently
        stand in for them)."""
        from compiler.analyses.whatif import target_function

        live = self.capture.live
        if live.args is None or hasattr(fn, "co_varnames"):
            return None
        signature = inspect.signature(target_function(fn))
        passed = signature.bind_partial(*live.args, **(live.kwargs or {})).arguments
        given = signature.bind_partial(*args, **kwargs).arguments
        left_out = [name for name in passed if name not in given]
        if not left_out:
            return None
        namespace = self._namespace()
        return "; ".join(f"{name} (the captured call passed {name}={value_text(passed[name], namespace)})"
                         for name in left_out)

    def check(self) -> None:
        self.answer.value = view_frame(self.ask(self.arguments.value))

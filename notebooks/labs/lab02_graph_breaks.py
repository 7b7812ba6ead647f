"""Lab 2 — graph breaks: causes, finding them, fixing them, fullgraph=True."""
from . import code, exercise, goals, md, reveal, setup, solution, solution_note

FILE = "02_graph_breaks.ipynb"


def cells():
    return [
        goals("Lab 2 — Graph breaks", """
            - say what a graph break does to the compiled code (two graphs, Python in between, a resume function);
            - recognise the common causes: `print`, data-dependent control flow, calls Dynamo cannot trace, `.item()`;
            - find them with tcompile's Graph breaks tab: the line, torch's GB code, the registry entry and hints;
            - fix them: restructuring, `torch.where` / `torch.cond`, `allow_in_graph`, custom ops, logging that
              Dynamo may reorder — and make sure with `fullgraph=True`.
            """, "Uses backend=\"eager\" throughout (graph breaks are decided by Dynamo, before any backend runs). "
                 "About a minute."),
        setup("""
            import zlib
            import pandas as pd

            x = torch.randn(8, 4)
            """),
        md("""
            ## 1. What a graph break is

            When Dynamo reaches an instruction it cannot put in the graph, it stops tracing there and
            **breaks the graph**: it compiles the graph traced so far, and writes bytecode that (1) runs that graph,
            (2) runs the offending instruction as ordinary Python, and (3) calls a **resume function**
            `torch_dynamo_resume_in_<fn>_at_<line>` that holds the rest of the function. The resume function is
            a new frame, so Dynamo compiles it in turn — into a second graph.
            """),
        code("""
            def step(x):
                y = torch.sin(x)
                print("step: sin done")          # Python I/O: not traceable
                return torch.cos(y) * 2

            cap = compiler.explore(step, x, backend="eager", timing=False)
            explorer.show(cap, fn=step)
            """),
        md("""
            The Overview lists two compiles: `step` (graph 1: `sin`) and `torch_dynamo_resume_in_step_at_…`
            (graph 2: `cos`, `mul`). Choose `0/0` in the compile selector and open Bytecode: after the call of the
            compiled graph come the `print` call and a call of `__resume_at_…`. Costs of a break: two graph
            launches instead of one, operations on both sides can never be fused into one kernel, and two frames'
            guards to check on every call.

            The Graph breaks tab gives, for each break, the line, torch's **GB code** (e.g. `GB0059`) and the entry
            for it in torch's graph-break registry (`torch/_dynamo/graph_break_registry.json`), with hints.
            The same data in Python:
            """),
        code("""
            def break_table(*captures):
                rows = []
                for c in captures:
                    for b in c.breaks:
                        rows.append({"function": c.compiles[0].name, "line": b.code, "GB": b.gb_code,
                                     "type": (b.registry.type if b.registry else None) or b.headline,
                                     "count": b.count, "first hint": (b.hints or ["–"])[0][:100]})
                return pd.DataFrame(rows)

            break_table(cap)
            """),
        md("""
            Each GB code has a page on the graph-break site (the last line of torch's message links it), for
            example <https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0059.html>.

            ## 2. The usual suspects

            Four small functions, each with one classic cause:
            """),
        code("""
            def data_dependent(x):
                if x.sum() > 0:                   # the branch depends on tensor *values*
                    return x.sin()
                return x.cos()

            def uses_item(x):
                scale = x.abs().max().item()      # a Python float out of a tensor
                return x / scale

            def checksum(t):
                return zlib.crc32(t.numpy().tobytes()) % 1000    # a C function on raw bytes

            def unsupported_call(x):
                y = x * 2
                return y + checksum(y)

            suspects = [compiler.explore(fn, x, backend="eager", timing=False)
                        for fn in (data_dependent, uses_item, unsupported_call)]
            break_table(cap, *suspects)
            """),
        md("""
            - **print** (`GB0059`, *Failed to trace builtin operator*): I/O has side effects a graph cannot hold.
            - **data-dependent control flow** (`GB0170`, *Data-dependent branching*): the graph is traced with fake
              tensors that have shapes but no values, so `x.sum() > 0` has no answer while tracing.
            - **`.item()`** (`GB0124`): by default Dynamo does not turn a tensor value into a Python number inside
              the graph (torch also printed a warning above saying how to change that — see below).
            - **unsupported calls** (`GB0158` here, *Unsupported ndarray method call*: `tobytes` on the NumPy view):
              C functions and third-party code Dynamo cannot see into. The count is 2 because the break happens
              inside `checksum`: Dynamo breaks at the call in `unsupported_call` (0/0), then compiles `checksum`
              as a frame of its own (1/0) and breaks there again. Functions marked `@torch.compiler.disable`
              break on purpose (`GB0098`).

            With `torch._dynamo.config.capture_scalar_outputs = True`, `.item()` stays in the graph as an
            **unbacked** symbolic value (`Sym(zuf0)`: a number known only at run time; Dynamo cannot guard or
            branch on it). torch 2.13 turns this on by itself under `fullgraph=True`.
            """),
        code("""
            with torch._dynamo.config.patch(capture_scalar_outputs=True):
                scalar = compiler.explore(uses_item, x, backend="eager", timing=False)
            check_no_graph_breaks(scalar)
            print(scalar.compiles[0].graph.as_text())
            """),
        md("""
            ## 3. Fixes

            **Restructure** first: keep Python I/O and bookkeeping outside the compiled function, and keep
            values as tensors (`x / x.abs().max()` needs no `.item()`).

            **Branches on tensor values**: make the code branchless with `torch.where` (computes both sides,
            selects per element), or use `torch.cond`, which traces *both* branches as subgraphs and picks one at
            run time:
            """),
        code("""
            def with_cond(x):
                return torch.cond(x.sum() > 0, lambda t: t.sin(), lambda t: t.cos(), (x,))

            fixed = compiler.explore(with_cond, x, backend="eager", timing=False)
            check_no_graph_breaks(fixed)
            check_op(fixed, "cond")                      # torch.ops.higher_order.cond in the graph
            print(fixed.compiles[0].graph.as_text())
            """),
        md("""
            **Logging**: Dynamo can *reorder* calls of functions you register in
            `torch._dynamo.config.reorderable_logging_functions`: the call is taken out of the graph and run after
            it, with the graph's outputs as arguments. That works when the arguments are constants or tensors
            (`print("y =", y.sum())`), not for arbitrary Python objects.
            """),
        code("""
            def logs_a_tensor(x):
                y = torch.sin(x)
                print("sum of y:", y.sum())
                return torch.cos(y)

            with torch._dynamo.config.patch(reorderable_logging_functions={print}):
                logged = compiler.explore(logs_a_tensor, x, backend="eager", timing=False)
            check_no_graph_breaks(logged)
            """),
        md("""
            **Code Dynamo cannot trace but that only does tensor math** (here it inspects the Python stack,
            which Dynamo does not support): `torch.compiler.allow_in_graph(fn)` puts the call into the graph as
            one node *without tracing into it*. Dynamo runs `fn` on fake tensors to learn its output's shape, and
            AOTAutograd/Inductor later trace through it. Use it only for functions without side effects whose
            result depends on nothing but their tensor inputs — Dynamo adds no guards for what `fn` reads.
            """),
        code("""
            import inspect

            def doubled(x):
                caller = inspect.currentframe()   # introspection Dynamo cannot trace (GB0007 without the decorator)
                return x * 2

            torch.compiler.allow_in_graph(doubled)

            def uses_doubled(x):
                return doubled(x).sin()

            allowed = compiler.explore(uses_doubled, x, backend="eager", timing=False)
            check_no_graph_breaks(allowed)
            print(allowed.compiles[0].graph.as_text())
            """),
        md("""
            **Opaque code with tensor inputs and outputs** (C extensions, NumPy, I/O-free library calls): make it a
            **custom operator** with `torch.library.custom_op`. The compiler then treats it as one op it does not
            look into; a *fake* implementation (`register_fake`) tells it the output's shape and dtype without
            running the real code. Exercise 2.4 does this for `checksum`.

            ## 4. `fullgraph=True`: no breaks allowed

            With `fullgraph=True` the first graph break is an error (`torch._dynamo.exc.Unsupported`) instead of
            a split — the way to make sure a function compiles as one graph. `errors="return"` keeps the error in
            the capture instead of raising:
            """),
        code("""
            strict = compiler.explore(data_dependent, x, backend="eager", fullgraph=True, errors="return", timing=False)
            print(strict.error.stage)
            print(strict.error.message[:500])
            """),
        md("""
            The magic takes the same option. It reports the error in one line (the compile stage and torch's
            reason) and still shows what was captured:
            """),
        code("""
            %%tcompile --backend eager --fullgraph --no-timing
            if x.sum() > 0:
                y = x.sin()
            else:
                y = x.cos()
            """),
        md("""
            Two more ways to list breaks without tcompile: `TORCH_LOGS="graph_breaks"` in the environment, and
            `torch._dynamo.explain(fn)(*args)`, which returns the break reasons and graph count.

            ## Exercises

            Each exercise compiles a function and runs a checker that fails until the function is fixed.
            Keep the results the same as the original function's (the checkers compare).

            ### Exercise 2.1 — keep the log, lose the break

            `train_step` logs the sum of its activations. Deleting the `print` would remove the graph break —
            and the log, which someone reads. Make `train_step` compile with zero graph breaks **and still
            print its log line** on every call, with the result of `train_step_original`. (Section 3 has the
            tool; it may wrap the `compiler.explore` call.)
            """),
        code("""
            def train_step_original(x):
                y = torch.relu(x) * 3
                print("train_step: activation sum", y.sum())
                return y.sum()
            """),
        exercise("""
            def train_step(x):
                y = torch.relu(x) * 3
                print("train_step: activation sum", y.sum())
                return y.sum()

            ex21 = compiler.explore(train_step, x, backend="eager", timing=False)
            check_no_graph_breaks(ex21)
            check_still_prints(ex21, "train_step: activation sum")
            check_matches_eager(ex21, train_step_original)
            """),
        solution_note(),
        solution("""
            def train_step(x):
                y = torch.relu(x) * 3
                print("train_step: activation sum", y.sum())
                return y.sum()

            # print may be reordered: Dynamo takes it out of the graph and calls it after the graph, with the
            # graph's output (y.sum()) as its argument. It is baked into the compiled bytecode, so it keeps
            # printing after the patch ends.
            with torch._dynamo.config.patch(reorderable_logging_functions={print}):
                ex21 = compiler.explore(train_step, x, backend="eager", timing=False)
            check_no_graph_breaks(ex21)
            check_still_prints(ex21, "train_step: activation sum")
            check_matches_eager(ex21, train_step_original)
            """),
        md("""
            ### Exercise 2.2 — a branch on a tensor's value

            `clip_large` divides by the largest magnitude only when it is above 1. Make it compile with zero graph
            breaks and give the same results as `clip_reference` for small and large inputs (the checks compare them
            on `small` and `large`, drawn above).
            """),
        code("""
            def clip_reference(x):
                m = x.abs().max()
                if m > 1:
                    x = x / m
                return x * 2

            small, large = torch.rand(8, 4) * 0.5, torch.randn(8, 4) * 10
            """),
        exercise("""
            def clip_large(x):
                m = x.abs().max()
                if m > 1:
                    x = x / m
                return x * 2

            ex22 = compiler.explore(clip_large, x, backend="eager", timing=False)
            check_no_graph_breaks(ex22)
            check_allclose(ex22.live.compiled_fn(small), clip_reference(small), "result for a small input")
            check_allclose(ex22.live.compiled_fn(large), clip_reference(large), "result for a large input")
            """),
        md("""
            <details><summary>Hint</summary>

            `torch.where(condition, a, b)` takes a tensor condition; so does `torch.cond(pred, true_fn, false_fn, operands)`.
            </details>
            """),
        solution_note(),
        solution("""
            def clip_large(x):
                m = x.abs().max()
                # branchless: compute both, select with a tensor condition (torch.cond works too)
                return torch.where(m > 1, x / m, x) * 2

            ex22 = compiler.explore(clip_large, x, backend="eager", timing=False)
            check_no_graph_breaks(ex22)
            check_allclose(ex22.live.compiled_fn(small), clip_reference(small), "result for a small input")
            check_allclose(ex22.live.compiled_fn(large), clip_reference(large), "result for a large input")
            """),
        md("""
            ### Exercise 2.3 — `.item()`

            Without changing any configuration, make `normalize` compile with zero graph breaks — and compute what
            `normalize_original` computes (the checker compares them on inputs it draws).
            """),
        code("""
            def normalize_original(x):
                scale = x.abs().max().item()
                return x / scale
            """),
        exercise("""
            def normalize(x):
                scale = x.abs().max().item()
                return x / scale

            ex23 = compiler.explore(normalize, x, backend="eager", timing=False)
            check_no_graph_breaks(ex23)
            check_matches_eager(ex23, normalize_original)
            check_no_breaks_by_default(normalize, x)
            """),
        md("""
            <details><summary>Hint</summary>

            Does `scale` need to be a Python number?
            </details>
            """),
        solution_note(),
        solution("""
            def normalize(x):
                return x / x.abs().max()        # stay in tensor land: no .item(), no graph break

            ex23 = compiler.explore(normalize, x, backend="eager", timing=False)
            check_no_graph_breaks(ex23)
            check_matches_eager(ex23, normalize_original)
            check_no_breaks_by_default(normalize, x)
            """),
        md("""
            ### Exercise 2.4 — a custom op for opaque code

            `fingerprint` adds a checksum computed by `zlib` on the tensor's bytes: code Dynamo cannot trace.
            Make `fingerprint` compile under `fullgraph=True` by turning the checksum into a custom operator
            (`torch.library.custom_op("lab::checksum", mutates_args=())`, with a `register_fake` implementation
            that returns an empty 0-d tensor of the right dtype). The result must stay that of
            `fingerprint_original` (the checker compares them on inputs it draws).
            """),
        code("""
            def fingerprint_original(x):
                y = x * 2
                return y + checksum(y)
            """),
        exercise("""
            def fingerprint(x):
                y = x * 2
                return y + checksum(y)

            ex24 = compiler.explore(fingerprint, x, backend="eager", fullgraph=True, errors="return", timing=False)
            check_compiled(ex24)
            check_op(ex24, "lab.checksum")
            check_matches_eager(ex24, fingerprint_original)
            """),
        solution_note(),
        solution("""
            @torch.library.custom_op("lab::checksum", mutates_args=())
            def checksum_op(t: torch.Tensor) -> torch.Tensor:
                return torch.tensor(float(zlib.crc32(t.numpy().tobytes()) % 1000))

            @checksum_op.register_fake
            def _(t):
                return t.new_empty(())          # shape () and t's dtype: all the compiler needs to know

            def fingerprint(x):
                y = x * 2
                return y + checksum_op(y)

            ex24 = compiler.explore(fingerprint, x, backend="eager", fullgraph=True, errors="return", timing=False)
            check_compiled(ex24)
            check_op(ex24, "lab.checksum")      # one opaque node: torch.ops.lab.checksum.default
            check_matches_eager(ex24, fingerprint_original)
            """),
        md("""
            ### Exercise 2.5 — a proposed fix, measured

            tcompile proposes a change for each graph break (`cap.fixes()`, the Fixes tab): a setting, with the
            snippet to paste, ranked by what its breaks cost. Nothing is claimed until it is tried: `try_()`
            re-runs the call with the change, in a fresh Dynamo state that is put back afterwards, and measures
            before → after. `report` below breaks twice: at `nonzero` (an output shape that depends on the data)
            and at `print`. The first fix tcompile proposes for it is
            `torch._dynamo.config.capture_dynamic_output_shape_ops = True`. **Predict**, before anything runs,
            how many graph breaks are left with only that change; the next cells try it.
            """),
        code("""
            def report(x):
                hits = x.nonzero()                     # how many rows: depends on the data
                print("checked", x.shape[0], "rows")
                return hits.float().mean() + x.sum()
            """),
        exercise("""
            predicted_breaks_after = None              # your prediction: a number
            check_fix_prediction(None, predicted_breaks_after)
            """),
        solution_note(),
        solution("""
            # the setting lets nonzero's data-dependent shape into the graph; the print still breaks it: 2 → 1
            predicted_breaks_after = 1
            check_fix_prediction(None, predicted_breaks_after)
            """),
        reveal("""
            ex25 = compiler.explore(report, x, backend="eager", timing=False)
            print(ex25.fixes()[0].as_text())
            result = ex25.fixes()[0].try_()
            check_fix_prediction(result, predicted_breaks_after)
            check_fix_prediction(result, predicted_breaks_after)
            fixes = ex25.try_fixes()                   # each alone, then the recommended ones together
            print(fixes.combined.as_text())           # together: no graph break left, outputs equal
            """),
        md("""
            Each fix removes only the breaks it lists; `try_fixes()` also tries the recommended ones together.
            A fix whose outputs differ from eager, or that fails to compile, says so and is never recommended.

            ### Exercise 2.6 — `torch.compiler.disable` or `substitute_in_graph`?

            `act` looks up the position of an activation name with `operator.indexOf`, a C function Dynamo
            cannot trace (`GB0059`). Two tools handle such a call:

            - `@torch.compiler.disable` on a wrapper: Dynamo does not trace it and calls it as Python — a graph
              break on purpose (`GB0098`), on every call;
            - `@torch.compiler.substitute_in_graph(operator.indexOf)`: you give Dynamo a pure-Python function
              with the same signature and behaviour (a *polyfill*). Eager code still calls the fast C function;
              Dynamo traces your version instead — here, on Python constants, so the lookup runs while tracing
              and leaves nothing in the graph.

            The starting code uses `disable`. Make `act` compile under `fullgraph=True`, with the same results.
            (A polyfill is registered once per process: registering `operator.indexOf` again raises
            `ValueError`, so the solution catches that.)
            """),
        code("""
            import operator

            ACTIVATIONS = ["relu", "tanh", "sin"]

            def act_original(x, name):
                return x * (operator.indexOf(ACTIVATIONS, name) + 1)
            """),
        exercise("""
            @torch.compiler.disable
            def position(names, name):
                return operator.indexOf(names, name)

            def act(x, name):
                return x * (position(ACTIVATIONS, name) + 1)

            ex26 = compiler.explore(act, x, "tanh", backend="eager", fullgraph=True, errors="return", timing=False)
            check_compiled(ex26)
            check_no_graph_breaks(ex26)
            check_matches_eager(ex26, act_original, x, "tanh", what="act(x, 'tanh')")
            check_every_name(act, act_original, x, ACTIVATIONS)
            check_polyfilled(operator.indexOf)
            """),
        solution_note(),
        solution("""
            try:
                @torch.compiler.substitute_in_graph(operator.indexOf)
                def index_of(a, b, /):                 # the same signature as operator.indexOf
                    for i, item in enumerate(a):
                        if item is b or item == b:
                            return i
                    raise ValueError("sequence.index(x): x not in sequence")
            except ValueError:                         # already registered in this kernel
                pass

            def act(x, name):
                return x * (operator.indexOf(ACTIVATIONS, name) + 1)

            ex26 = compiler.explore(act, x, "tanh", backend="eager", fullgraph=True, errors="return", timing=False)
            check_compiled(ex26)
            check_no_graph_breaks(ex26)
            check_matches_eager(ex26, act_original, x, "tanh", what="act(x, 'tanh')")
            check_every_name(act, act_original, x, ACTIVATIONS)
            check_polyfilled(operator.indexOf)
            print(ex26.compiles[0].graph.as_text())    # x * 2: the index was computed while tracing
            """),
        md("""
            Use `disable` for code that must run as Python (I/O, a debugger hook, a library that mutates
            global state); `substitute_in_graph` for a C function whose behaviour you can write in traceable
            Python — torch itself ships such polyfills for many builtins (`torch/_dynamo/polyfills/`).

            **Next:** Lab 3 — guards: when a compile is reused, and why it is not.
            """),
    ]

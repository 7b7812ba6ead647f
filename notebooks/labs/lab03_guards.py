"""Lab 3 — guards, recompiles and dynamic shapes."""
from . import code, exercise, goals, md, reveal, setup, solution, solution_note

FILE = "03_guards_recompiles_dynamic.ipynb"


def cells():
    return [
        goals("Lab 3 — Guards, recompiles and dynamic shapes", """
            - read a compile's guards and name the common guard kinds;
            - ask the what-if panel whether new arguments would recompile, and read a recompile reason;
            - choose between `dynamic=None | True | False` and `mark_dynamic`, and explain symbolic sizes, duck
              sizing and 0/1 specialization;
            - bound recompiles with `recompile_limit` and `set_stance` (`fail_on_recompile`, `eager_on_recompile`);
            - explain what the `torch.compiler.skip_guard_on_*` guard filters save — and why they are unsafe —, and
              write a filter of your own;
            - run a compiled program eagerly with a stance (`torch.compiler.set_stance`);
            - compile a size that may be 0 or 1 without recompiling (`mark_unbacked`) and tell the compiler
              what you know about it (`torch._check`).
            """, "Uses backend=\"eager\" throughout (guards are built by Dynamo). About a minute."),
        setup("""
            import pandas as pd

            x = torch.randn(8, 4)
            """),
        md("""
            ## 1. Guards: what must stay true

            A compiled graph is only valid for inputs like the ones it was traced with. Dynamo records what the
            trace assumed as **guards**, and checks all of them before every call (in C++; the "latency" the
            Guards tab shows is that check).
            """),
        code("""
            class Scale(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.lin = torch.nn.Linear(4, 4)
                    self.factor = 2.0

                def forward(self, x, mode="relu"):
                    y = self.lin(x) * self.factor
                    return y.relu() if mode == "relu" else y.tanh()

            model = Scale()
            cap = compiler.explore(model, x, backend="eager", timing=False)
            guards = cap.compiles[0].guards.table
            guards.groupby("kind").size().rename("guards").to_frame()
            """),
        md("""
            | kind | checks | here, for example |
            |---|---|---|
            | `TENSOR_MATCH` | a tensor's type, dispatch keys, dtype, device, `requires_grad`, sizes and strides — not its values | `x`, the Linear's weight and bias |
            | `EQUALS_MATCH` | a Python constant equals the traced value | `L['mode'] == 'relu'`, `L['self'].factor == 2.0` |
            | `ID_MATCH` | an object is the very same object (`id`) | the `torch.nn.modules.linear` module Dynamo looked up |
            | `TYPE_MATCH` | an object's exact type | hooks dictionaries of `nn.Module` |
            | `DICT_CONTAINS` | a key is (not) in a dict | nobody patched `forward` on the Linear instance |
            | `GLOBAL_STATE` | grad mode, autocast, deterministic algorithms, default dtype, threads… | one guard for all of them |
            | `DEFAULT_DEVICE`, `TORCH_FUNCTION_MODE_STACK` | no `torch.device` context / torch-function mode appeared | |
            | `DIMENSION_DYNAMIC_MARKING_GUARD` | whether a tensor carries `mark_dynamic`-style markings | `hasattr(L['x'], '_dynamo_dynamic_indices') == False` |
            | `LAMBDA_GUARD` | any other Python expression — in particular **shape relations** under dynamic shapes | `2 <= L['x'].size()[0]` |

            ## 2. What-if: would it recompile?

            `cap.what_if(fn, *args)` runs the cached compiles' guards on new arguments **without calling**
            `fn`, and says which guard fails. The Guards tab has the same panel (type arguments, press the button).
            """),
        code("""
            for label, args, kwargs in [("same shapes", (torch.randn(8, 4),), {}),
                                        ("mode='tanh'", (x,), {"mode": "tanh"}),
                                        ("float64 input", (x.double(),), {}),
                                        ("requires_grad input", (x.clone().requires_grad_(),), {})]:
                print(f"{label:20} → {cap.what_if(model, *args, **kwargs)}")
            with torch.no_grad():
                print(f"{'under no_grad':20} → {cap.what_if(model, x)}")
            """),
        code("""
            explorer.show(cap, fn=model)
            """),
        md("""
            ## 3. Recompiles and their reasons

            When no cached compile's guards pass, Dynamo compiles again and logs **why**: the failing guard of
            each earlier compile, in cache order — most recently used first, since a hit moves its entry to the
            front (`ExtraState::move_to_front`; Lab 1). The Recompiles tab lists them; so does `cap.recompiles`.
            """),
        code("""
            torch._dynamo.reset()
            with compiler.capture() as rec:
                compiled = torch.compile(model, backend="eager")
                compiled(x)
                compiled(x, mode="tanh")
                compiled(torch.randn(16, 4), mode="tanh")
            for r in rec.recompiles:
                first = r.reasons[0]        # the failing guard of the entry tried first (the most recently used)
                print(f"{r.compile_id} recompiled because {first.text!r} failed")
            """),
        md("""
            ## 4. Dynamic shapes: `dynamic=None | True | False`

            Sizes are guarded like everything else. What happens when the batch size changes depends on
            `torch.compile(dynamic=…)`:

            - `None` (default): **automatic dynamic** — the first compile specializes every size; when a size
              changes, the recompile makes that dimension a **symbol** (`s77`), so later sizes reuse it.
            - `True`: sizes are symbolic from the first compile.
            - `False`: never symbolic — one compile per distinct size, until `recompile_limit`.
            """),
        code("""
            def f(x):
                return x.sin() * x.shape[0]

            rows = []
            for dynamic in (None, True, False):
                torch._dynamo.reset()
                with compiler.capture() as run:
                    cf = torch.compile(f, backend="eager", dynamic=dynamic)
                    for n in (8, 16, 32):
                        cf(torch.randn(n, 4))
                symbols = [f"{s.symbol}={s.source} {s.range}" for c in run.compiles
                           for s in c.shapes.symbols]
                rows.append({"dynamic": repr(dynamic), "compiles": len(run.compiles),
                             "recompiles": len(run.recompiles), "symbols": "; ".join(symbols) or "–"})
            pd.DataFrame(rows)
            """),
        md("""
            Read the `symbols` column: with `dynamic=None` the symbol appears in the **second** compile, for the
            dimension that changed only; `dynamic=True` makes both dimensions symbolic at once. The range `[2,
            int_oo]` hides a rule called **0/1 specialization**: sizes 0 and 1 are always compiled as constants
            (a size-1 dimension broadcasts; a size-0 tensor is empty), so a dynamic compile guards `2 <= s77`
            and a batch of 1 recompiles:
            """),
        code("""
            torch._dynamo.reset()
            dyn = compiler.explore(f, torch.randn(8, 4), backend="eager", dynamic=True, timing=False)
            print(dyn.compiles[0].graph.as_text())
            print("batch 64:", dyn.what_if(f, torch.randn(64, 4)))
            print("batch 1: ", dyn.what_if(f, torch.randn(1, 4)))
            dyn.compiles[0].guards.table.query("kind == 'LAMBDA_GUARD'")[["condition", "note"]]
            """),
        md("""
            In the FX graph the sizes are `Sym(s77)` inputs and `x.shape[0]` is the symbol itself (`* s77`), not
            a constant. The Guards tab of this capture shows torch's own note on each shape guard.

            **`mark_dynamic`** picks the dimension yourself, before the first call, optionally with bounds:
            """),
        code("""
            torch._dynamo.reset()
            marked = torch.randn(8, 4)
            torch._dynamo.mark_dynamic(marked, 0, min=2, max=1024)
            md_cap = compiler.explore(f, marked, backend="eager", timing=False)
            print(md_cap.compiles[0].shapes.symbols)
            print("batch 512: ", md_cap.what_if(f, torch.randn(512, 4)))
            print("batch 2048:", md_cap.what_if(f, torch.randn(2048, 4)))
            """),
        md("""
            **Duck sizing**: when two inputs have the same size at the first compile, Dynamo gives them the
            *same* symbol and guards that they stay equal — fewer symbols, simpler kernels, but a call with
            different sizes recompiles. `torch.fx.experimental._config.use_duck_shape = False` turns it off.
            """),
        code("""
            def add_rows(a, b):
                return a + b.sum()

            torch._dynamo.reset()
            duck = compiler.explore(add_rows, torch.randn(8), torch.randn(8), backend="eager", dynamic=True, timing=False)
            print([(s.symbol, s.source) for s in duck.compiles[0].shapes.symbols])
            print(duck.what_if(add_rows, torch.randn(8), torch.randn(9)))

            torch._dynamo.reset()
            with torch.fx.experimental._config.patch(use_duck_shape=False):
                no_duck = compiler.explore(add_rows, torch.randn(8), torch.randn(8), backend="eager", dynamic=True,
                                           timing=False)
            print([(s.symbol, s.source) for s in no_duck.compiles[0].shapes.symbols])
            print(no_duck.what_if(add_rows, torch.randn(8), torch.randn(9)))
            """),
        md("""
            ## 5. Bounding recompiles

            **`recompile_limit`** (default 8) caps the compiles of one code object. Past it, Dynamo stops
            compiling that function: calls that no cached compile accepts run eagerly (torch warns
            `torch._dynamo hit config.recompile_limit`). The capture shows the compile that hit the limit as
            *failed*:
            """),
        code("""
            torch._dynamo.reset()
            with torch._dynamo.config.patch(recompile_limit=2):
                with compiler.capture() as limited:
                    cf = torch.compile(f, backend="eager", dynamic=False)
                    for n in (2, 3, 4, 5):
                        cf(torch.randn(n, 4))
            [(c.compile_id, c.status) for c in limited.compiles]
            """),
        md("""
            **`torch.compiler.set_stance`** changes what happens at a recompile for a block of code (or globally):
            `"fail_on_recompile"` raises — useful in a steady-state loop that must never recompile —, and
            `"eager_on_recompile"` runs the call eagerly instead of compiling (cached compiles are still used).
            The `%%tcompile --stance NAME` option does the same for a cell.
            """),
        code("""
            torch._dynamo.reset()
            cf = torch.compile(f, backend="eager", dynamic=False)
            cf(torch.randn(3, 4))
            with torch.compiler.set_stance("fail_on_recompile"):
                try:
                    cf(torch.randn(4, 4))
                except RuntimeError as error:
                    print(str(error).splitlines()[0])
            with compiler.capture() as eager_stance:
                with torch.compiler.set_stance("eager_on_recompile"):
                    out = cf(torch.randn(5, 4))          # runs eagerly: no new compile
            print("compiles under eager_on_recompile:", len(eager_stance.compiles))
            """),
        md("""
            ## 6. Guard filters: fewer guards, at your own risk

            Checking guards costs time on every call. `torch.compile(options={"guard_filter_fn": …})` drops
            guards at compile time; torch ships filters named `..._unsafe`:
            `torch.compiler.skip_guard_on_inbuilt_nn_modules_unsafe`, `skip_guard_on_all_nn_modules_unsafe`,
            `skip_guard_on_globals_unsafe`, `keep_tensor_guards_unsafe`, `keep_portable_guards_unsafe`,
            `skip_all_guards_unsafe`. They are unsafe because a dropped guard can no longer notice a change:
            the compiled code runs with the value it was traced with.
            """),
        code("""
            torch._dynamo.reset()
            safe = compiler.explore(Scale(), x, backend="eager", timing=False)
            torch._dynamo.reset()
            risky_model = Scale()
            risky = compiler.explore(risky_model, x, backend="eager", timing=False,
                                     options={"guard_filter_fn": torch.compiler.skip_guard_on_all_nn_modules_unsafe})
            for name, c in (("all guards", safe), ("skip_guard_on_all_nn_modules_unsafe", risky)):
                g = c.compiles[0].guards
                print(f"{name:38} {g.count:3} guards, {g.latency_us} µs to check")

            before = risky.live.compiled_fn(x)
            risky_model.factor = 10.0                       # the guard on .factor was dropped…
            after = risky.live.compiled_fn(x)
            print("compiled result changed:", not torch.allclose(before, after))
            print("eager result changed:   ", not torch.allclose(before, risky_model(x)))
            """),
        md("""
            The compiled model silently keeps multiplying by 2.0: **stale results**. The filters are for code
            whose modules and globals you know never change after compiling; the guard-latency numbers above
            are what they buy (measured once — repeat to see the noise).

            ## Exercises

            ### Exercise 3.1 — every batch size, one compile

            `f` was compiled for a batch of 8 with `dynamic=False`. Make a batch of 32 reuse the compile — with its
            guards on `x` kept and the right result (the checker calls the reused compile and eager `f`).
            """),
        exercise("""
            torch._dynamo.reset()
            ex31 = compiler.explore(f, torch.randn(8, 4), backend="eager", dynamic=False, timing=False)
            check_dynamic(ex31, "x")
            check_reuses_compile(ex31, f, torch.randn(32, 4))
            """),
        solution_note(),
        solution("""
            torch._dynamo.reset()
            # dynamic=True (or torch._dynamo.mark_dynamic(x, 0) on the first input) makes the batch a symbol
            ex31 = compiler.explore(f, torch.randn(8, 4), backend="eager", dynamic=True, timing=False)
            check_dynamic(ex31, "x")
            check_reuses_compile(ex31, f, torch.randn(32, 4))
            """),
        md("""
            ### Exercise 3.2 — break the dynamic compile

            `ex32` is `f` compiled with `dynamic=True`: both dimensions are symbolic (the solution of 3.1, made
            here again so this exercise does not depend on yours). Find an input **tensor of the same dtype** that
            still makes it recompile, and say why in a comment.
            """),
        code("""
            torch._dynamo.reset()
            ex32 = compiler.explore(f, torch.randn(8, 4), backend="eager", dynamic=True, timing=False)
            print([(s.symbol, s.source, s.range) for s in ex32.compiles[0].shapes.symbols])
            """),
        exercise("""
            my_input = torch.randn(64, 4)
            check_recompiling_input(ex32, f, my_input)     # also checks: same dtype and device as the compile's
            """),
        solution_note(),
        solution("""
            # 0/1 specialization: sizes 0 and 1 are never symbolic, so the guard 2 <= s77 fails for a batch of 1.
            # (A non-contiguous input — different strides — or a 3-d input also fails the TENSOR_MATCH guard.)
            my_input = torch.randn(1, 4)
            check_recompiling_input(ex32, f, my_input)
            """),
        md("""
            ### Exercise 3.3 — a changing attribute, safely

            `Gain.gain` changes every step (a schedule, say). As a Python float it is first a constant of the
            graph, guarded by its value: the first new value recompiles, and only then does *automatic dynamic*
            make it a symbolic float (`VariableBuilder.wrap_symfloat` → `process_automatic_dynamic`,
            `torch/_dynamo/variables/builder.py`): 2 compiles for any number of values. (An `int` attribute of an
            `nn.Module` stays specialized — one compile per value: `torch._dynamo.utils.is_int_specialization_case`.)
            Without a guard filter or a config change, rewrite `Gain` and `set_gain` so that **no** new value
            recompiles — one compile for every value — and the compiled model uses the new value. The checker
            builds a fresh `Gain()`, compiles it, and calls `set_gain(model, v)` before each call, counting the
            compiles with torch's own counter.
            """),
        exercise("""
            class Gain(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.gain = 2.0

                def forward(self, x):
                    return x * self.gain

            def set_gain(model, value):                      # the next step's value
                model.gain = value

            check_attribute_updates(Gain, set_gain, x)       # 1 compile for 4 values, each used
            """),
        md("""
            <details><summary>Hint</summary>

            Guards check a tensor's metadata, not its values — and a module's buffers are tensors
            (`self.register_buffer(…)`, then update it in place).
            </details>
            """),
        solution_note(),
        solution("""
            class Gain(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    self.register_buffer("gain", torch.tensor(2.0))   # a tensor: its value is data, not a constant

                def forward(self, x):
                    return x * self.gain

            def set_gain(model, value):
                model.gain.fill_(value)                      # update in place: same tensor, new value

            check_attribute_updates(Gain, set_gain, x)
            """),
        md("""
            ### Exercise 3.4 — a proposed fix for recompiles, measured

            A serving loop calls the model on batches of 4, 8 and 16 rows. `capture_calls` compiles once and makes
            the calls under capture; `cap.fixes()` proposes `mark_dynamic` on the argument and dimension named by
            the failing guard (here `torch._dynamo.mark_dynamic(batch, 0)` before the first call). **Predict**,
            before anything runs, how many recompiles are left with the fix; the cell after tries it.
            """),
        code("""
            from compiler.analyses.fix_experiments import capture_calls

            def score(batch):
                return (batch.sin() * 2).sum(dim=1)
            """),
        exercise("""
            predicted_recompiles_after = None          # your prediction: a number
            check_fix_prediction(None, predicted_recompiles_after, "recompiles")
            """),
        solution_note(),
        solution("""
            # automatic dynamic recompiles once (4 → 8), then 16 fits; marked dynamic from the start: no recompile
            predicted_recompiles_after = 0
            check_fix_prediction(None, predicted_recompiles_after, "recompiles")
            """),
        reveal("""
            ex34 = capture_calls(score, [(torch.randn(n, 4),) for n in (4, 8, 16)], backend="eager")
            print(ex34.fixes()[0].as_text())
            result = ex34.fixes()[0].try_()
            check_fix_prediction(result, predicted_recompiles_after, "recompiles")
            """),
        md("""
            ### Exercise 3.5 — the what-if panel and the Recompiles tab

            The model of section 3 again, called with 8 rows (`relu`), 8 rows (`tanh`), then 16 rows (`tanh`):
            three compiles. Open the explorer's **Guards** tab (choose a compile, type arguments in the
            what-if panel) and its **Recompiles** tab.
            """),
        code("""
            torch._dynamo.reset()
            with compiler.capture() as ex35:
                compiled = torch.compile(model, backend="eager")
                compiled(x)
                compiled(x, mode="tanh")
                compiled(torch.randn(16, 4), mode="tanh")
            explorer.show(ex35, fn=model)
            """),
        md("""
            1. A fourth call, `model(x, mode="tanh")`, has exactly the arguments of the second call. Which compile
               runs it? (Remember the cache order of Lab 1.)
            2. The Recompiles tab lists, for `0/2`, the guard that failed against each earlier compile. Against
               which compile did the guard on `x`'s size fail?
            """),
        exercise("""
            accepting = ...            # a compile id such as "0/0"
            check_accepting_compile_answer(accepting, ex35, model, x, mode="tanh")
            failed_against = ...       # a compile id
            check_reason_against_answer(failed_against, ex35, "0/2", "x")
            """),
        solution_note(),
        solution("""
            # 0/2 was compiled last, so it is tried first; it is dynamic in the batch (automatic dynamic after
            # 8 → 16) and in tanh mode, so its guards pass for 8 rows too: 0/1 is never reached again.
            print(ex35.what_if(model, x, mode="tanh"))
            accepting = "0/2"
            check_accepting_compile_answer(accepting, ex35, model, x, mode="tanh")
            # 0/2's reasons: against 0/1 the size of x (8 expected, 16 given); against 0/0 the mode
            for r in ex35.recompiles[-1].reasons:
                print(f"against {r.against}: {r.text}")
            failed_against = "0/1"
            check_reason_against_answer(failed_against, ex35, "0/2", "x")
            """),
        md("""
            ### Exercise 3.6 — a guard filter of your own

            `sgd_step` reads the global `LR`. You promise to call `torch._dynamo.reset()` whenever you change it,
            so its `EQUALS_MATCH` guard is wasted work on every call. Write a `guard_filter_fn` — it receives
            one entry per guard (with `.name`, `.guard_type`, `.is_global`…) and returns one bool per entry,
            True to keep — that drops the guard on `LR` and keeps every other guard (the checker compares with
            the guards of the same compile without a filter).
            """),
        code("""
            LR = 0.1

            def sgd_step(w, g):
                return w - LR * g

            w, g = torch.randn(16), torch.randn(16)
            """),
        exercise("""
            def keep_guard(entries):
                return [True for entry in entries]

            torch._dynamo.reset()
            ex36 = compiler.explore(sgd_step, w, g, backend="eager", timing=False,
                                    options={"guard_filter_fn": keep_guard})
            check_no_guard_on(ex36, "G['LR']")
            check_guard_on(ex36, "L['w']", kind="TENSOR_MATCH")
            check_guard_on(ex36, "L['g']", kind="TENSOR_MATCH")
            check_only_guard_dropped(ex36, sgd_step, w, g, dropped="G['LR']")
            """),
        solution_note(),
        solution("""
            def keep_guard(entries):
                # the global's guard is named G['LR']; the tensor guards are named after the arguments
                return [not (entry.is_global and entry.name == "G['LR']") for entry in entries]

            torch._dynamo.reset()
            ex36 = compiler.explore(sgd_step, w, g, backend="eager", timing=False,
                                    options={"guard_filter_fn": keep_guard})
            check_no_guard_on(ex36, "G['LR']")
            check_guard_on(ex36, "L['w']", kind="TENSOR_MATCH")
            check_guard_on(ex36, "L['g']", kind="TENSOR_MATCH")
            check_only_guard_dropped(ex36, sgd_step, w, g, dropped="G['LR']")
            """),
        md("""
            The price, as in section 6: `LR = 0.01` now would go unnoticed by the compiled step (it was traced
            with 0.1 as a constant). `torch.compiler.skip_guard_on_globals_unsafe` drops every global's guard
            at once; a filter of your own drops exactly the ones you vouch for.

            ### Exercise 3.7 — switch compiling off without touching the code

            A result looks wrong in a big program full of `torch.compile` calls. To tell a compiler bug from a
            bug of your own, run a block **eagerly** — every `torch.compile`d function as plain Python: nothing
            compiled, and no code compiled earlier reused — without editing the code that calls
            `torch.compile`. Which stance (`compiler.reference.knobs.stances()` lists them) does that? The
            checker compiles a function, then calls it under your stance with the same shape and a new one.
            """),
        code("""
            from compiler.reference import knobs
            pd.DataFrame(knobs.stances())
            """),
        exercise("""
            stance = "eager_on_recompile"
            check_stance_runs_eagerly(stance, f, torch.randn(8, 4))
            """),
        solution_note(),
        solution("""
            # eager_on_recompile compiles nothing new but still runs the compiles cached before (same shape);
            # eager_then_compile compiles from the second call on; force_eager ignores torch.compile entirely
            stance = "force_eager"
            check_stance_runs_eagerly(stance, f, torch.randn(8, 4))
            """),
        md("""
            In a program: `with torch.compiler.set_stance(stance): train()`, or
            `torch.compiler.set_stance(stance)` once at the top (and `"default"` to undo it);
            `%%tcompile --stance NAME` for a cell.

            ### Exercise 3.8 — batches of any size, even 1

            A server sees batches of every size, including 1. With `mark_dynamic` (or `dynamic=True`) the batch is
            a *backed* symbol: Dynamo knows its value at compile time, may guard on it, and specializes 0 and 1
            (Exercise 3.2) — so a batch of 1 recompiles. `torch._dynamo.decorators.mark_unbacked(t, dim)`
            makes the size **unbacked** (`u0`): a symbol with no value, never specialized, never guarded on.
            The catch: Dynamo cannot decide a branch on an unbacked size (`if n == 0` breaks the graph, like a
            branch on tensor values); `torch._check(condition)` tells the compiler a fact about it, checked
            at run time. Batches here are never empty, but the function must keep its answer for an empty one
            (`mean_times_rows_reference` below is the function as the server has it). Make a batch of 1 reuse the
            first compile, with no graph break, and keep what the function computes for every batch size.
            """),
        code("""
            def mean_times_rows_reference(x):     # the server's function, as it is: its results must stay the same
                n = x.shape[0]
                if n == 0:
                    return x.sum(0)
                return x.mean(0) * n
            """),
        exercise("""
            def mean_times_rows(x):
                n = x.shape[0]
                if n == 0:
                    return x.sum(0)
                return x.mean(0) * n

            torch._dynamo.reset()
            batch = torch.randn(8, 4)
            torch._dynamo.mark_dynamic(batch, 0)
            ex38 = compiler.explore(mean_times_rows, batch, backend="eager", timing=False)
            check_no_graph_breaks(ex38)
            check_unbacked(ex38, "x")
            check_runtime_assert(ex38, mean_times_rows, mean_times_rows_reference)
            check_reuses_compile(ex38, mean_times_rows, torch.randn(1, 4))
            """),
        solution_note(),
        solution("""
            def mean_times_rows(x):
                n = x.shape[0]
                torch._check(n > 0)            # a fact the compiler may use: n == 0 below is now known False
                if n == 0:
                    return x.sum(0)
                return x.mean(0) * n

            torch._dynamo.reset()
            batch = torch.randn(8, 4)
            torch._dynamo.decorators.mark_unbacked(batch, 0)
            ex38 = compiler.explore(mean_times_rows, batch, backend="eager", timing=False)
            print(ex38.compiles[0].graph.as_text())   # u0 as an input, and _assert_scalar: the check at run time
            check_no_graph_breaks(ex38)
            check_unbacked(ex38, "x")
            check_runtime_assert(ex38, mean_times_rows, mean_times_rows_reference)
            check_reuses_compile(ex38, mean_times_rows, torch.randn(1, 4))
            """),
        md("""
            Unbacked sizes cost something: an unbacked size cannot pick a specialized kernel, and every fact
            the code relies on must be stated (`torch._check`) or is checked at run time.

            ### Exercise 3.9 — count the compiles before you run them

            Dynamic shapes have pitfalls that only show in a sequence of calls. `topk_mean` takes a batch and an
            int `k`; a server calls it as below. Predict how many frame compiles the sequence makes with
            `torch.compile`'s defaults (`dynamic=None`), and with `dynamic=True` — call by call: which guard fails?
            (The checker counts them with torch's `CompileCounter`.)
            """),
        code("""
            def topk_mean(x, k):
                return x.topk(k, dim=-1).values.mean(-1)

            server_calls = [(torch.randn(1, 8), 2), (torch.randn(4, 8), 2), (torch.randn(6, 8), 3),
                            (torch.randn(9, 8), 4), (torch.randn(1, 8), 5), (torch.randn(5, 8), 6)]
            """),
        exercise("""
            compiles_default = ...
            compiles_dynamic = ...
            check_compile_count_answer(compiles_default, topk_mean, server_calls)
            check_compile_count_answer(compiles_dynamic, topk_mean, server_calls, dynamic=True)
            """),
        solution_note(),
        solution("""
            # defaults: (1, 8) k=2 compiles static; (4, 8): the size changed -> automatic dynamic makes it a symbol
            # (a recompile), but the first compile specialized it to 1 and the symbol's guard is 2 <= size;
            # (6, 8) k=3: the int changed -> a symbol too (a recompile); (9, 8) k=4 reuses it; (1, 8) k=5: a size of
            # 1 matches no symbol and the size-1 compile has k == 2 -> a fourth compile; (5, 8) k=6 reuses the third
            compiles_default = 4
            # dynamic=True: sizes and ints symbolic from the start, but a size of 1 is still specialized: the first
            # call compiles for size 1, the second for every other size
            compiles_dynamic = 2
            check_compile_count_answer(compiles_default, topk_mean, server_calls)
            check_compile_count_answer(compiles_dynamic, topk_mean, server_calls, dynamic=True)
            """),
        md("""
            Three pitfalls at once: **automatic dynamic** recompiles once before a size or an int becomes a symbol
            (`process_automatic_dynamic`, `torch/_dynamo/pgo.py`: it marks what changed since the last frame);
            an **int argument** is a constant guarded with `==` until it changes (ints of an `nn.Module` stay
            constants: `is_int_specialization_case`); and **0/1 specialization**: a symbolic size carries the guard
            `2 <= size`, so a batch of 1 always gets a compile of its own — even after `mark_dynamic` — unless the
            size is unbacked (Exercise 3.8). Warm a server up with a batch of 2 or more, not 1.

            ### Exercise 3.10 — dynamic if the code allows it

            `mark_dynamic` is a promise: if the code specializes the dimension anyway (a `view` to a fixed size, a
            branch on it), the compile fails with `ConstraintViolationError`. A library that marks batches for
            models it did not write wants a *hint* instead — dynamic where the code allows it, specialized,
            silently, where it does not: `torch._dynamo.maybe_mark_dynamic` (`torch/_dynamo/decorators.py`: it
            records the dimension in the tensor's `_dynamo_weak_dynamic_indices`, and a specialization of a weak
            dimension is no error). Write `mark(batch)`, which marks dimension 0 of each batch before its call, so
            that `rows_mean`, compiled once, serves batches of 8, 9 and 10 without a recompile (automatic dynamic
            would take one), and `first_eight`, which views its input as 8 rows, still compiles and runs. The
            checker compiles both afresh, calls `mark` on every batch, and counts compiles and compiled runs with
            a backend of its own; `mark` may change nothing but the batch (no config, no stance).
            """),
        code("""
            def rows_mean(x):                    # any number of rows
                return x.mean(0) * x.shape[0]

            def first_eight(x):                  # specializes the rows: 8, always
                return x.view(8, -1).sum(0)
            """),
        exercise("""
            def mark(batch):
                torch._dynamo.mark_dynamic(batch, 0)

            check_marks_dynamic_if_possible(mark, rows_mean, first_eight)
            """),
        solution_note(),
        solution("""
            def mark(batch):
                torch._dynamo.maybe_mark_dynamic(batch, 0)   # a hint: dynamic, unless the code specializes it

            check_marks_dynamic_if_possible(mark, rows_mean, first_eight)
            """),
        md("""
            `maybe_mark_dynamic` is what to use in code that marks inputs for models it does not know (data loaders,
            serving frameworks); `mark_dynamic` where the model is yours and a specialization is a bug to hear about.

            **Next:** Lab 4 — what happens to the graph after Dynamo: AOTAutograd and training.
            """),
    ]

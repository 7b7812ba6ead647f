"""Lab 1 — Dynamo: PEP 523, the transformed bytecode, FX tracing, specialization."""
from . import code, exercise, goals, md, setup, solution, solution_note

FILE = "01_dynamo_bytecode.ipynb"


def cells():
    return [
        goals("Lab 1 — Dynamo: frames, bytecode and the FX graph", """
            - explain how Dynamo takes over a Python function call (PEP 523) and what it caches on the code object;
            - read the bytecode Dynamo writes and say what each part does;
            - explain how the FX graph is traced: what becomes a graph node, and what runs only while tracing;
            - predict how Python values (ints, floats, bools, strings) are specialized, and when they become symbolic;
            - say what `torch.jit.trace` silently bakes in that Dynamo guards or breaks on;
            - list the backends `torch.compile` accepts, and write one of your own that rewrites the FX graph.
            """, "Uses backend=\"eager\" (or your own backend) throughout: only Dynamo runs, and a compile takes "
                 "milliseconds. About a minute."),
        setup(),
        md("""
            ## 1. PEP 523: how Dynamo gets control

            CPython runs a function call by evaluating a *frame* (the code object plus its locals).
            [PEP 523](https://peps.python.org/pep-0523/) lets an extension replace the function that evaluates
            frames (`_PyInterpreterState_SetEvalFrameFunc`). While a `torch.compile`d function is being called,
            Dynamo's callback is installed — C++, `dynamo__custom_eval_frame` in
            `torch/csrc/dynamo/eval_frame_cpp.h` (the C shim in `eval_frame.c` hands it the frame) — and for the frame it:

            1. looks up the **cache entries** stored on the code object (in CPython's per-code-object "extra"
               slot, an `ExtraState`, `torch/csrc/dynamo/extra_state.h`) — one per earlier compile, each holding
               **guards** and **transformed code**. `ExtraState::cache_entry_map` keeps one list of entries per
               compile scope (`-1`, the default; `torch.compile(..., isolate_recompiles=True)` gives a call its own), each list most
               recently *used* first: a new compile is put at the front, and so is an entry whose guards pass
               (`ExtraState::move_to_front`);
            2. runs each entry's guards on the frame's locals, in that order; the first entry whose guards all
               pass wins, and CPython runs *that entry's transformed bytecode* instead of the original;
            3. if no entry passes, calls back into Python (`torch._dynamo.convert_frame`) to compile: trace
               the bytecode into an FX graph, hand the graph to the backend, generate new bytecode and guards,
               store them as a new cache entry, and run it.

            Functions the frame calls are traced *into* (inlined in the same graph) while Dynamo traces it.
            """),
        code("""
            def f(x, y):
                a = torch.sin(x)
                b = torch.cos(y)
                return a + b * 2

            x, y = torch.randn(8, 4), torch.randn(8, 4)
            cap = compiler.explore(f, x, y, backend="eager")
            explorer.show(cap, fn=f)
            """),
        md("""
            The cache entry is real and can be inspected: `_debug_get_cache_entry_list` reads the entries stored on
            `f.__code__`. Its `code` is the transformed code object CPython now runs for `f`, its `guard_manager`
            the guards (the Guards tab prints the same tree).
            """),
        code("""
            entries = torch._dynamo.eval_frame._debug_get_cache_entry_list(f.__code__)
            entry = entries[0]
            print(len(entries), "cache entry; compile id", entry.compile_id)
            print("transformed code:", entry.code)
            print("compiled graph stored in f's globals:", [k for k in f.__globals__ if k.startswith("__compiled_fn")])
            """),
        md("""
            ## 2. The transformed bytecode

            The Bytecode tab shows both versions; here they are as text (`dis` output). The original computes
            `sin`, `cos`, `*` and `+` itself. The transformed code:

            - loads the global `__compiled_fn_…` — the backend's compiled graph, which Dynamo put in `f`'s
              globals — and calls it with `x` and `y`, the graph's inputs;
            - wraps the call's setup in `record_pregraph_bytecode_enter/exit` (torch 2.13: a "Pregraph bytecode"
              range, visible only when the profiler is on);
            - stores the tuple the graph returns (`graph_out_0`), takes element `[0]`, and returns it (the list
              shuffling around it is Dynamo's generic code for rebuilding the return value).

            None of `sin`, `cos`, `*`, `+` is left in the bytecode: they are in the graph.
            """),
        code("""
            bc = cap.compiles[0].bytecode
            print(bc.original.text)
            print("-" * 60)
            print(bc.transformed.text)
            """),
        md("""
            ## 3. How the FX graph is traced

            Dynamo does not run `f`; it *symbolically executes* its bytecode, instruction by instruction,
            keeping a "variable tracker" for every value on the Python stack. A torch call on a tensor tracker
            adds a node to the FX graph and is run on a **fake tensor** (shapes, dtypes, devices, no data) —
            that is where the `f32[8, 4]` annotations in the FX graph tab come from. Everything else — Python
            ints, loops, `if`s on Python values, list building — is executed while tracing and leaves no trace
            in the graph except its effect. A loop over `range(3)` is unrolled:
            """),
        code("""
            def scale_steps(x):
                for i in range(3):
                    x = x * (i + 1)       # i is a Python int: the loop runs while tracing
                return x

            steps = compiler.explore(scale_steps, x, backend="eager")
            print(steps.compiles[0].graph.as_text())
            """),
        md("""
            Each node is tagged with the source line it came from (`# File: …, code: x = x * (i + 1)`), and the
            loop counter is gone: `i` was a Python int, so each trip through the loop was traced with its value
            as a constant. The graph has no loop; the next call with the same guards runs the recorded
            operations directly.

            ### Exercise 1.1 — count the nodes

            How many operations (nodes other than inputs and the output) does the FX graph of `scale_steps` have?
            Read the FX graph tab or the text above and replace `...`.
            """),
        exercise("""
            answer = ...
            check_op_count_answer(answer, steps)
            """),
        solution_note(),
        solution("""
            answer = 3   # range(3) was unrolled while tracing: x * 1, x * 2, x * 3
            check_op_count_answer(answer, steps)
            """),
        md("""
            ## 4. Specialization: Python values become constants, and guards

            A Python value that the traced code reads is, by default, **specialized**: the graph uses its value
            as a constant, and a guard checks that the value is the same on the next call. Watch an `int`, a
            `float`, a `bool` and a `str` across four calls (the first with defaults, then changing one value at
            a time):
            """),
        code("""
            def configured(x, n, scale, relu, mode):
                y = x * n + scale
                if relu:
                    y = y.relu()
                if mode == "sin":
                    y = y.sin()
                return y

            torch._dynamo.reset()                      # empty caches: compile ids start again at 0/0
            with compiler.capture() as spec:
                compiled = torch.compile(configured, backend="eager")
                compiled(x, 2, 0.5, True, "sin")     # 0/0: everything specialized
                compiled(x, 3, 0.5, True, "sin")     # n changed
                compiled(x, 4, 0.7, True, "sin")     # scale changed
                compiled(x, 4, 0.7, False, "sin")    # relu changed
            print(spec)
            for c in spec.compiles:
                arg_guards = c.guards.table[c.guards.table.source.isin(["L['n']", "L['scale']", "L['relu']", "L['mode']"])]
                reason = c.recompile.reasons[0].text if c.recompile.available and c.recompile.reasons else "first compile"
                print(f"{c.compile_id}  ({reason})")
                for _, g in arg_guards.iterrows():
                    print(f"    {g.kind:14} {g.condition[:70]}")
            """),
        md("""
            Read it compile by compile (the Recompiles tab of the explorer below says the same):

            - **0/0**: `n == 2`, `scale == 0.5` (`EQUALS_MATCH`), `relu == True` (`TRUE_MATCH`), `mode == 'sin'`:
              every value was a constant in the graph (`x * 2 + 0.5`).
            - **0/1** (`n` changed): *automatic dynamic* — a second value for the same int makes Dynamo compile it
              as a **symbol** (`Sym(s…)` input in the FX graph); its guard is now only `TYPE_MATCH` (any int).
            - **0/2** (`scale` changed): a changed float is passed into the graph as a 0-d `float64` **tensor**
              input (`f64[]`) and read with `.item()` inside the graph; its type is guarded, and that it is not NaN
              (`not math.isnan(L['scale'])`: symbolic floats are NaN-specialized like sizes 0 and 1,
              `ShapeEnv.produce_guards_verbose` in `torch/fx/experimental/symbolic_shapes.py`).
            - **0/3** (`relu` changed): a `bool` decides which operations are traced, so it is never made dynamic:
              `relu == False` is a new compile with a different graph (no `relu` node). Strings behave the same way.

            The config switches are `torch._dynamo.config.automatic_dynamic_shapes` (on),
            `specialize_int` and `specialize_float` (off: ints and floats may become symbolic after a change).
            """),
        code("""
            explorer.show(spec, fn=configured)
            """),
        md("""
            ### Exercise 1.2 — stop recompiling on new values

            `scale_all` multiplies by a list of Python floats. In the first compile every float in the list is
            specialized (a constant in the graph, guarded by its value), so a call with other values recompiles.
            Automatic dynamic, above, would make a float symbolic only after it has changed once — at the cost
            of a recompile. Change the function — and how it is called — so that new scale *values* reuse the
            **first** compile and give the result of `scale_all_original`. The checker repeats your call with new
            values (`x` redrawn, every scale changed, passed the way you pass them: floats or a tensor), asks the
            guards whether the first compile accepts it (what-if), checks that the guards on the tensors were
            kept, and compares the reused compile's result with `scale_all_original`'s.
            """),
        code("""
            def scale_all_original(x, scales):
                for s in scales:
                    x = x * s
                return x
            """),
        exercise("""
            def scale_all(x, scales):
                for s in scales:
                    x = x * s
                return x

            ex12 = compiler.explore(scale_all, x, [1.0, 2.0, 3.0], backend="eager")
            check_reuses_for_new_values(ex12, scale_all_original)
            """),
        md("""
            <details><summary>Hint</summary>

            Guards on a tensor check its dtype, device, shape and strides — not its values. What if `scales`
            were a tensor?
            </details>
            """),
        solution_note(),
        solution("""
            def scale_all(x, scales):
                # a tensor of scales: its values are data, not constants; only its shape is guarded
                # (dynamic=True works too: from the first compile, each float enters the graph as a 0-d float64
                # tensor input read with .item())
                return x * scales.prod()

            ex12 = compiler.explore(scale_all, x, torch.tensor([1.0, 2.0, 3.0]), backend="eager")
            check_reuses_for_new_values(ex12, scale_all_original)
            """),
        md("""
            ### Exercise 1.3 — symbolic from the first compile

            `power(x, n)` is compiled with `n=2`. Automatic dynamic would make `n` symbolic only *after* a second
            value has caused a recompile. Compile it so that the very first compile already treats `n` (and the
            sizes of `x`) as symbols, and `n=3` reuses it. (The checker also requires the guards on `x` to be
            kept and the reused compile to compute `x ** 3`: a guard filter that drops guards does not count.)
            """),
        exercise("""
            def power(x, n):
                return x ** n

            ex13 = compiler.explore(power, x, 2, backend="eager")
            check_reuses_compile(ex13, power, x, 3)
            """),
        solution_note(),
        solution("""
            def power(x, n):
                return x ** n

            # dynamic=True: ints and tensor sizes are symbolic from the first compile (Sym(s…) inputs)
            ex13 = compiler.explore(power, x, 2, backend="eager", dynamic=True)
            print(ex13.compiles[0].graph.as_text())
            check_reuses_compile(ex13, power, x, 3)
            """),
        md("""
            ## 5. `torch.jit.trace` records one path; Dynamo guards or breaks

            `torch.jit.trace` (TorchScript, deprecated) also records the tensor operations of one call — but it
            runs the Python for real and keeps only what the example input did. Python control flow that
            depends on tensor *values* is evaluated once, with the example, and its outcome is baked into the
            trace without a guard: torch only prints a `TracerWarning`. Dynamo either guards on what it
            assumed or, for a branch on tensor values, breaks the graph and runs the `if` in Python on every
            call (Lab 2).
            """),
        code("""
            def gate(x):
                if x.sum() > 0:          # a branch on the tensor's values
                    return x * 2
                return -x

            example = torch.ones(8, 4)
            traced = torch.jit.trace(gate, example)      # TracerWarning: converting a tensor to a Python boolean
            print(traced.code)
            """),
        md("""
            The TorchScript code has `x * 2` and no `if`: the branch the example took is all that is left.

            ### Exercise 1.4 — what the trace baked in

            Find an input on which `traced` and `gate` disagree, then check that `torch.compile` of `gate` gives
            `gate`'s result on it (the checker also draws inputs of its own).
            """),
        exercise("""
            my_input = torch.ones(8, 4)
            check_trace_bakes_in(traced, gate, my_input)
            ex14 = compiler.explore(gate, example, backend="eager", timing=False)
            check_matches_eager(ex14, gate, my_input)
            """),
        solution_note(),
        solution("""
            my_input = -torch.ones(8, 4)      # sum < 0: gate returns -x, the trace still returns x * 2
            check_trace_bakes_in(traced, gate, my_input)
            ex14 = compiler.explore(gate, example, backend="eager", timing=False)
            print(ex14, "—", ex14.breaks[0].gb_code, ex14.breaks[0].headline)   # Dynamo broke the graph at the if
            check_matches_eager(ex14, gate, my_input)
            """),
        md("""
            ## 6. Backends: what runs the graph

            A backend is a function that receives Dynamo's FX graph (a `torch.fx.GraphModule`) and example
            inputs, and returns something to call instead. `backend="inductor"` generates kernels,
            `"aot_eager"` runs AOTAutograd and executes its ATen graphs eagerly, `"eager"` runs the FX graph
            as it is. Names are looked up in a registry: `torch._dynamo.list_backends()` lists them — but not
            all of them. tcompile's knobs reference says, for every registered backend, its tags and whether it
            works here (`probe=False` skips the test compile of each):
            """),
        code("""
            import pandas as pd
            from compiler.reference import knobs

            print(torch._dynamo.list_backends())
            pd.DataFrame(knobs.backends(probe=False))[["name", "tags", "listed_by_default", "kind"]]
            """),
        md("""
            ### Exercise 1.5 — every backend name

            The labs use `backend="eager"` and `"aot_eager"`, yet `list_backends()` does not show them. Set
            `all_backends` to every name `torch.compile(backend=…)` accepts in this torch — computed, not typed.
            """),
        exercise("""
            all_backends = torch._dynamo.list_backends()
            check_backends_answer(all_backends)
            """),
        solution_note(),
        solution("""
            # list_backends(exclude_tags=("debug", "experimental")) by default: pass no tags to exclude
            all_backends = torch._dynamo.list_backends(exclude_tags=())
            check_backends_answer(all_backends)
            """),
        md("""
            ## 7. Your own backend: an FX pass

            Any function `(gm, example_inputs) -> callable` is a backend. It can read the graph, rewrite it —
            an *FX pass*: change node targets and arguments, then `gm.recompile()` regenerates `gm.forward` —
            and hand it on (`return gm.forward`, or to another backend). The graph it receives is the one
            tcompile shows in the FX graph tab:
            """),
        code("""
            def print_graph(gm, example_inputs):
                for node in gm.graph.nodes:
                    print(f"{node.op:14} {node.name:8} target={node.target!r:32} args={node.args}")
                return gm.forward              # run the graph unchanged

            def energy(x):
                return (x ** 2).sum(dim=1) + x.sum()

            shown = compiler.explore(energy, x, backend=print_graph, timing=False)
            """),
        md("""
            ### Exercise 1.6 — a strength-reduction pass

            Write `square_to_mul`, a backend that replaces every `x ** 2` node (`operator.pow` with exponent 2)
            with `x * x` (`operator.mul`) and runs the rewritten graph. The checker looks at the graph tcompile
            captured (it must still contain the `pow`: rewrite in the backend, not in `energy`), at the graph
            your backend runs, and at its results.
            """),
        exercise("""
            import operator

            def square_to_mul(gm, example_inputs):
                for node in gm.graph.nodes:
                    pass                       # rewrite the pow nodes here
                gm.recompile()
                return gm.forward

            ex16 = compiler.explore(energy, x, backend=square_to_mul, timing=False)
            check_backend_rewrite(ex16, square_to_mul, energy, removed="pow", added="mul")
            """),
        solution_note(),
        solution("""
            import operator

            def square_to_mul(gm, example_inputs):
                for node in gm.graph.nodes:
                    if node.op == "call_function" and node.target is operator.pow and node.args[1] == 2:
                        base = node.args[0]
                        node.target, node.args = operator.mul, (base, base)
                gm.recompile()                 # regenerate gm.forward from the edited graph
                print(gm.code)
                return gm.forward

            ex16 = compiler.explore(energy, x, backend=square_to_mul, timing=False)
            check_backend_rewrite(ex16, square_to_mul, energy, removed="pow", added="mul")
            """),
        md("""
            Inductor runs passes like this: its **pre-grad** passes on this very graph — Dynamo's torch-level FX
            graph, before AOTAutograd (`_recursive_pre_grad_passes` in `compile_fx`, `torch/_inductor/compile_fx.py`;
            `torch/_inductor/fx_passes/pre_grad.py`) — and its post-grad passes on the ATen graphs AOTAutograd makes
            (`torch/_inductor/fx_passes/post_grad.py`, Lab 5); a real
            pass also handles `x.pow(2)` (`call_method`) and `torch.pow`, and checks its rewrite keeps dtypes.

            **Next:** Lab 2 — what happens when Dynamo meets code it cannot put in a graph.
            """),
    ]

"""Lab 7 — performance experiments: eager vs compiled, compile cost vs runtime gain."""
from . import code, exercise, goals, md, setup, solution, solution_note

FILE = "07_performance.ipynb"


def cells():
    return [
        goals("Lab 7 — Performance experiments", """
            - measure eager vs compiled runtime with tcompile, and read medians and spreads rather than one number;
            - compare backends, modes and options on one workload, compile time included;
            - compute when a compile pays for itself (break-even calls);
            - recognise the cases where compiling does not pay: tiny work, library-bound work, graph breaks,
              recompiles, few calls;
            - cut the compile time of a model of repeated blocks by compiling the block (regional compilation).
            """, "Compiles with Inductor (fresh, so compile times are real) on this CPU; about two minutes. "
                 "Your numbers will differ from anyone else's — that is the point: measure."),
        setup("""
            import math
            import pandas as pd

            # The first Inductor compile in a process pays one-time costs (probing the CPU's vector
            # instructions, starting compile workers): pay them here, so that the compile times below
            # compare compiles, not warm-up.
            compiler.explore(lambda t: t + 1, torch.randn(4), fresh=True, timing=False)
            print("threads:", torch.get_num_threads())
            """),
        md("""
            ## 1. How tcompile times a function

            `compiler.explore(fn, *args, ...)`, `%%tcompile` and `compiler.compare` share one timer
            (`compiler.capturing.runtime`), run *after* the capture on copies of the tensor arguments: 3 warm-up calls
            each, then `repeat` samples (15 by default) of eager and compiled **alternating**, so both see the
            same machine load; each sample times enough calls to last ≥ 2 ms (so the clock's resolution does
            not matter), CUDA-synchronized on a GPU. The result is in `cap.runtime`: the **median** per call,
            the quartiles (`q1_s`, `q3_s`: half the samples lie between them), `first_call_s` (the first call,
            including its compile) and `busy`, set when the load average exceeded 3/4 of the cores.

            On a shared 2-core machine the spread matters: another process taking a core can slow a sample by a
            lot (OpenMP threads wait for each other). Compare medians, look at the q1–q3 whiskers in the
            Timings tab, and re-run when two numbers are close.

            ## 2. One workload, several ways to compile it

            A chain of pointwise operations on a 1M-element tensor: eager PyTorch runs one kernel per operation,
            each reading and writing the whole tensor.
            """),
        code("""
            x = torch.randn(1024, 1024)

            def pointwise(x):
                y = torch.nn.functional.gelu(x * 1.5 + 0.5)
                return y.sin() * x.cos() + y.tanh()

            def summarize(label, cap):
                r = cap.runtime
                eager, compiled = r.eager.median_s, r.compiled.median_s
                pays = (r.first_call_s - compiled) / (eager - compiled) if eager > compiled else math.inf
                return {"config": label, "compile s": round(cap.summary.compile_time_s, 2),
                        "first call s": round(r.first_call_s, 2),
                        "eager µs": round(eager * 1e6), "compiled µs": round(compiled * 1e6),
                        "spread µs (q1–q3)": f"{r.compiled.q1_s * 1e6:.0f}–{r.compiled.q3_s * 1e6:.0f}",
                        "speedup": round(r.speedup, 2),
                        "break-even calls": round(pays) if math.isfinite(pays) else math.inf}

            configs = {
                "backend=eager (Dynamo only)": dict(backend="eager"),
                "backend=aot_eager": dict(backend="aot_eager"),
                "inductor, mode=lite": dict(mode="lite"),
                "inductor (default)": dict(),
                "inductor, max-autotune-no-cudagraphs": dict(mode="max-autotune-no-cudagraphs"),
            }
            results = {label: compiler.explore(pointwise, x, fresh=True, **kw) for label, kw in configs.items()}
            table = pd.DataFrame([summarize(label, cap) for label, cap in results.items()]).set_index("config")
            table
            """),
        md("""
            What to look for in your table:

            - **`eager` and `aot_eager`** run the same ATen kernels as eager PyTorch, one per op: about 1×
              (plus the overhead of guards and the graph call). They are for debugging, not for speed.
            - **`mode="lite"`** compiles with Inductor but falls back to ATen kernels (no fusion): cheap to compile,
              little gain.
            - **Inductor (default)** fuses the whole chain into one C++ loop: one pass over memory instead of about
              ten — this is where the speed-up comes from. Its compile time is seconds, not milliseconds.
            - **max-autotune** would benchmark alternatives for matmuls and convolutions; this workload has none,
              so it mostly costs compile time.

            The compile time of the default Inductor run, stage by stage (the Timings tab draws it):
            """),
        code("""
            inductor = results["inductor (default)"]
            inductor.compiles[0].timings.table[["label", "seconds", "count"]]
            """),
        code("""
            explorer.show(inductor, fn=pointwise)
            """),
        md("""
            ## 3. Break-even: when does the compile pay for itself?

            The first call costs `first_call_s` (compile + one run); every later call saves
            `eager − compiled`. The compile has paid for itself after

            $$\\text{calls} = \\frac{\\text{first\\_call} - \\text{compiled}}{\\text{eager} - \\text{compiled}}$$

            calls (the Timings tab prints it as "repaid after ≈N calls"). A training loop or a server calls a
            function millions of times; a notebook experiment may call it ten times.

            ### Exercise 7.1 — compute the break-even point

            Write `break_even(first_call_s, eager_s, compiled_s)`: the number of calls after which a compile has
            paid for itself (`math.inf` when the compiled call is not faster), then apply it to
            `inductor.runtime` (its medians). The checker also calls your function on timings it makes up, so
            the table above cannot answer it.
            """),
        exercise("""
            def break_even(first_call_s, eager_s, compiled_s):
                ...

            r = inductor.runtime
            calls = break_even(r.first_call_s, r.eager.median_s, r.compiled.median_s)
            check_break_even(calls, r)      # any correct form: unrounded, rounded or rounded up (±1 call or 1 %)
            check_break_even_function(break_even)
            """),
        solution_note(),
        solution("""
            def break_even(first_call_s, eager_s, compiled_s):
                if eager_s <= compiled_s:
                    return math.inf
                return (first_call_s - compiled_s) / (eager_s - compiled_s)

            r = inductor.runtime
            calls = break_even(r.first_call_s, r.eager.median_s, r.compiled.median_s)
            check_break_even(calls, r)
            check_break_even_function(break_even)
            """),
        md("""
            ## 4. When compiling does not pay

            **Tiny work.** A compiled call still checks guards and goes through the compiled graph's wrapper;
            for a few elements that overhead is all there is.
            """),
        code("""
            def tiny(t):
                return t * 2 + 1

            tiny_cap = compiler.explore(tiny, torch.randn(8), fresh=True)
            pd.DataFrame([summarize("tiny (8 elements)", tiny_cap)]).set_index("config")
            """),
        md("""
            **Work dominated by library kernels.** A matmul is already a tuned library call (oneDNN / MKL here,
            cuBLAS on a GPU); Inductor calls the same library, so only the small pointwise part around it can
            get faster.
            """),
        code("""
            w1, w2 = torch.randn(1024, 1024), torch.randn(1024, 1024)

            def matmuls(x):
                return torch.relu(x @ w1) @ w2

            mm_cap = compiler.explore(matmuls, torch.randn(256, 1024), fresh=True)
            print([k.name for k in mm_cap.compiles[0].kernels.kernels])
            pd.DataFrame([summarize("two matmuls + relu", mm_cap)]).set_index("config")
            """),
        md("""
            **Graph breaks.** A break splits the chain into two graphs; the operations on either side can no
            longer share a loop, and the break runs Python in between.
            """),
        code("""
            def pointwise_with_break(x):
                y = torch.nn.functional.gelu(x * 1.5 + 0.5)
                print("", end="")                       # any untraceable call: a graph break
                return y.sin() * x.cos() + y.tanh()

            broken = compiler.explore(pointwise_with_break, x, fresh=True)
            print(broken.summary.graphs, "graphs,", broken.summary.kernels, "kernels")
            pd.DataFrame([summarize("pointwise, one graph", inductor),
                          summarize("pointwise, graph break", broken)]).set_index("config")
            """),
        md("""
            The broken version writes `y` to memory and reads it back in the second graph, and runs two compiled
            graphs plus Python per call: compare its compiled time with the unbroken one in your run.

            **Recompiles** make you pay the compile again, for every new shape (Lab 3 shows how to avoid them).

            ## 5. Regional compilation: compile the repeated block

            Most large models repeat one block (a transformer layer) many times. Compiling the whole model makes
            Dynamo trace every copy — the loop over the blocks is unrolled — and Inductor lower and compile one
            graph that holds all of them, so the compile grows with the depth. The blocks all run the same
            code (`Block.forward`), and with `torch._dynamo.config.inline_inbuilt_nn_modules` (on by default)
            a module's parameters are graph *inputs*, not constants baked into the graph — so one compile of
            the block could serve every copy. Compiling only the block is **regional compilation**. (Inside a
            whole-model compile, `torch.compiler.nested_compile_region` marks a function to trace once and reuse:
            the same idea, one level down.)

            The model, compiled whole (inference, under `torch.no_grad()`):
            """),
        code("""
            class Block(torch.nn.Module):
                def __init__(self, width=64):
                    super().__init__()
                    self.norm, self.linear = torch.nn.LayerNorm(width), torch.nn.Linear(width, width)

                def forward(self, x):
                    return x + torch.nn.functional.gelu(self.linear(self.norm(x)))


            class Stack(torch.nn.Module):
                def __init__(self, depth=4):
                    super().__init__()
                    self.blocks = torch.nn.ModuleList(Block() for _ in range(depth))

                def forward(self, x):
                    for block in self.blocks:
                        x = block(x)
                    return x


            tokens = torch.randn(32, 64)
            whole_model = torch.compile(Stack())
            with compiler.capture(fresh=True) as whole:
                with torch.no_grad():
                    whole_model(tokens)
            print(whole, f"— {len(graph_ops(whole))} ops in Dynamo's graph, compile time "
                         f"{whole.summary.compile_time_s:.1f} s")
            """),
        md("""
            ### Exercise 7.2 — compile the block, not the model

            Compile `model` regionally: every block compiled, the model around them not, so that all the blocks
            share **one** compile of one block's graph. Then compare the compile time with the whole model's.
            (The checker traces one block alone to count its ops, and runs the model against the blocks run
            eagerly.)
            """),
        exercise("""
            model = Stack()
            ...                       # compile it regionally

            with compiler.capture(fresh=True) as regional:
                with torch.no_grad():
                    model(tokens)
            check_regional(regional, model, tokens)
            """),
        solution_note(),
        solution("""
            model = Stack()
            for block in model.blocks:
                block.compile()       # nn.Module.compile: this module's calls go through torch.compile

            with compiler.capture(fresh=True) as regional:
                with torch.no_grad():
                    model(tokens)
            print(f"compile time: regional {regional.summary.compile_time_s:.1f} s "
                  f"vs whole model {whole.summary.compile_time_s:.1f} s")
            check_regional(regional, model, tokens)
            """),
        md("""
            Every block after the first finds the first block's compile in the cache of `Block.forward`'s code
            object, and its guards pass: they check the parameters' shapes and dtypes, not which module owns
            them. Run the same model *with* gradients and the blocks compile twice: the first block's input
            does not require grad, every later block's input does (it comes from parameters that do), and
            `requires_grad` is part of a tensor's guard. Measured on a 2-core CPU shared with other jobs (load
            average about 15, so every time is inflated): these four blocks compiled whole took 66 s with Inductor,
            the one block 19 s; six blocks 65 s vs 16 s (3.6 s vs 1.0 s with `aot_eager`). The whole-model
            compile grows with the depth; the regional one does not.

            ### Exercise 7.3 — read your table

            In the table of section 2, which configuration compiled fastest? Give its name as written in the
            `config` column.
            """),
        exercise("""
            answer = ...
            check_cheapest_compile_answer(answer, table)
            """),
        solution_note(),
        solution("""
            # a configuration that generates no code (eager or aot_eager); which of those two wins is noise
            # (one run on a loaded 2-core machine: aot_eager 0.21 s, eager 0.35 s)
            answer = table["compile s"].idxmin()
            print(answer)
            check_cheapest_compile_answer(answer, table)
            """),
        md("""
            ## 6. Compile-time caches: cold and warm

            A compile writes what it made to caches on disk: Inductor's **FX graph cache** (the generated code
            of a post-grad graph, keyed by a hash of the graph, its inputs' metadata and the config:
            `FxGraphCache.load_with_key`, `torch/_inductor/codecache.py`), the AOTAutograd cache above it, and
            autotuning results. A *warm* compile — a new process, or after `torch._dynamo.reset()`, with the same
            graph — still traces with Dynamo but finds the generated code instead of lowering and compiling C++
            again; torch counts each lookup (`counters["inductor"]["fxgraph_cache_hit"]` / `…_miss`).
            `%%tcompile` and `fresh=True` switch the caches **off** on purpose (every Inductor stage is then
            produced and shown); `cap.measure_caches()` measures cold vs warm compiles in fresh processes.

            ### Exercise 7.4 — make the second compile warm

            `cache_settings` are the Inductor options both compiles below run under (the checker compiles
            `pointwise` twice with them, `torch._dynamo.reset()` in between, and reads torch's counters). Make the
            second compile hit the FX graph cache.
            """),
        exercise("""
            cache_settings = {"force_disable_caches": True}     # what %%tcompile and fresh=True do
            check_warm_compile(cache_settings, pointwise, x)
            """),
        solution_note(),
        solution("""
            # the defaults keep the caches on (fx_graph_cache=True); force_disable_caches turns every cache off
            cache_settings = {}
            check_warm_compile(cache_settings, pointwise, x)
            """),
        md("""
            ## Summary: does compiling pay?

            | it pays when | it does not pay when |
            |---|---|
            | many memory-bound pointwise/reduction ops that Inductor fuses | the work is one big library kernel (matmul, conv) |
            | the function is called many times (training, serving) | it is called a handful of times |
            | shapes are stable, or dynamic from the start | every call brings a new shape (and `dynamic=False`) |
            | the function compiles into one graph | graph breaks split it into pieces with Python between |
            | GPU launch overhead dominates → `mode="reduce-overhead"` (Lab 6) | the tensors are tiny and overhead is all there is (on CPU) |

            Always measure on your machine and your shapes — and keep the compile time in the picture.
            """),
    ]

"""Lab 6 — CUDA graphs and modes: live on a GPU, from the shipped H100 captures elsewhere."""
from . import code, exercise, goals, md, setup, solution, solution_note

FILE = "06_cuda_graphs.ipynb"


def cells():
    return [
        goals("Lab 6 — CUDA graphs and `mode=\"reduce-overhead\"`", """
            - explain launch overhead, and why replaying a recorded CUDA graph removes most of it;
            - follow a CUDA graph's life cycle in tcompile: warm-up, recording, replay — and what a new shape costs;
            - read why CUDA graphs were skipped (input mutation, CPU tensors…) and where in the code, and fix it;
            - explain the shared memory pool, the "overwritten by a subsequent run" error, `.clone()` and
              `torch.compiler.cudagraph_mark_step_begin()`.
            """, "With CUDA, every capture below is recorded live. Without it (this lab's CI runs on a CPU), "
                 "the lab reads the captures shipped in `assets/gpu/`, recorded on an NVIDIA H100 with torch 2.11 "
                 "(each capture's `environment` says so; this CPU runs a newer torch): the explorer shows them exactly "
                 "like live ones. About a minute on CPU."),
        setup("""
            from pathlib import Path

            import tcompile_labs
            import pandas as pd

            GPU = torch.cuda.is_available()
            GPU_CAPTURES = tcompile_labs.gpu_captures()      # shipped with tcompile (package data)
            if GPU:
                print(f"CUDA is available ({torch.cuda.get_device_name()}): this lab records its captures live.")
            else:
                print("CUDA is not available here: this lab reads the captures in assets/gpu/, recorded on an\\n"
                      "NVIDIA H100 with torch 2.11 (`python -m scripts.record_gpu_captures assets/gpu`). Same data, same views;\\n"
                      "only the what-if panel needs a live capture.")
            """),
        md("""
            ## 1. Launch overhead

            Every kernel launch costs CPU time: Python, the PyTorch dispatcher, the CUDA driver — several
            microseconds. A kernel on small tensors runs for about as long, so a model made of many small
            kernels leaves the GPU **idle, waiting for the CPU**. A **CUDA graph** records a sequence of kernel
            launches once (with fixed memory addresses); replaying it submits the whole sequence with one call.

            The case: eight `Linear(64, 64)` layers and a `tanh`, batch 8, under `torch.no_grad()`,
            compiled with `mode="reduce-overhead"` — which is just Inductor with CUDA graphs on:
            """),
        code("""
            print(torch._inductor.list_mode_options()["reduce-overhead"])

            def small_model_capture():
                model = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(8)]).cuda().eval()

                def f(x):
                    with torch.no_grad():
                        return model(x).tanh()

                return compiler.explore(f, torch.randn(8, 64, device="cuda"), mode="reduce-overhead", fresh=True)

            small = small_model_capture() if GPU else compiler.load(GPU_CAPTURES / "reduce_overhead_small_model.json")
            env = small.environment
            print(f"recorded on {env['device_name']}, torch {env['torch']}, triton {env.get('triton')}")
            """),
        code("""
            def us(seconds):
                return f"{seconds * 1e6:.0f} µs"

            runtime, both, profile = small.runtime, small.cudagraph_comparison, small.gpu_profile
            print("eager PyTorch:                    ", us(runtime.eager.median_s), "per call")
            print("Inductor, CUDA graphs off:        ", us(both.without_cudagraphs.median_s))
            print("Inductor, CUDA graphs on:         ", us(both.with_cudagraphs.median_s),
                  f"→ {both.speedup:.2f}× faster than without")
            print("GPU busy per call (profiler):     ", f"{profile.gpu_time_us_per_call if profile else float('nan'):.0f} µs")
            """),
        md("""
            Read the numbers top to bottom. The GPU is busy for only a small part of each call; the rest is
            CPU-side overhead. Inductor without CUDA graphs does not remove it (in the shipped capture it is no
            faster than eager: the matmuls are library calls either way, and its wrapper does work on the CPU
            too). Replaying one CUDA graph instead of launching kernel after kernel removes most of the launch
            cost; what remains is Python, the guards and the CUDA-graph wrapper (which copies the input into
            the graph's static buffer).
            tcompile measures the "off" variant by compiling the same function with
            `options={**list_mode_options(mode), "triton.cudagraphs": False}` — everything else equal.

            ## 2. Warm-up, record, replay

            Inductor's **CUDA graph trees** run a new function once as a **warm-up** (its compiled kernels run
            normally, allocating from the CUDA-graph pool), **record** it on the next call, and **replay** it on
            every call after that.
            `compiler.explore` makes three calls under capture on CUDA so the CUDA graphs tab shows all three:
            """),
        code("""
            cg = small.cudagraphs
            print(f"used={cg.used}  warm-ups={cg.warmups}  recorded={cg.recorded}  "
                  f"replays under capture={cg.replays}  counters={cg.counters}")
            pd.DataFrame([e.to_data() for e in cg.events])[["compile_id", "kind", "function", "message"]].assign(
                message=lambda d: d.message.str.slice(0, 90))
            """),
        code("""
            explorer.show(small)
            """),
        md("""
            `cudagraph_recorded_non_static_inputs: 1` is the input `x`: a recorded graph reads from fixed
            addresses, so each replay first copies a *non-static* input into the graph's own buffer.
            Parameters are static (their addresses do not change) and are not copied.

            ## 3. One memory pool — and overwritten outputs

            All graphs of a tree allocate from **one private memory pool**, and a replay writes its outputs to
            the same addresses every time. So the output of one call is **overwritten by the next replay**.
            Keep an output across calls and use it later, and torch raises:
            """),
        code("""
            def overwritten_capture():
                torch._dynamo.reset()
                compiled = torch.compile(lambda x: x.sin() * 2, mode="reduce-overhead")
                x = torch.randn(256, device="cuda")
                with compiler.capture(fresh=True, suppress_errors=True, options={"mode": "reduce-overhead"}) as cap:
                    first = compiled(x)        # kept …
                    compiled(x)
                    compiled(x)                # … while later replays reuse its memory
                    first + 1                  # RuntimeError
                return cap

            overwritten = overwritten_capture() if GPU else compiler.load(GPU_CAPTURES / "cudagraph_output_overwritten.json")
            print(overwritten.error.stage)
            print()
            print(overwritten.error.message)
            """),
        md("""
            The fixes are in torch's message: **`.clone()`** an output you want to keep (it then lives outside the
            pool), or call **`torch.compiler.cudagraph_mark_step_begin()`** at the start of each iteration.
            CUDA graph trees start a new "iteration" on each invocation of a compiled function (unless a backward
            is pending); outputs of earlier iterations may be overwritten. When that heuristic is wrong — e.g. a
            loop body that calls the compiled function twice and combines both outputs — marking the step
            yourself tells the trees where an iteration begins.

            ## 4. When CUDA graphs are skipped

            Inductor checks each graph before recording, and **skips CUDA graphs** (running the compiled kernels
            normally) when a graph cannot be replayed safely: it **mutates an input** (replays would not see the
            new input), has **CPU tensors** (a CUDA graph only holds GPU work), spans **several devices**, or
            contains an **op that cannot be captured**. The CUDA graphs tab states the reason in plain words and
            the line that caused it:
            """),
        code("""
            def f(buf, x):
                buf.add_(1)                     # mutates an input
                return x * 2 + buf


            def mutation_capture():
                return compiler.explore(f, torch.zeros(64, device="cuda"), torch.randn(64, device="cuda"),
                                        mode="reduce-overhead", fresh=True)

            skipped = mutation_capture() if GPU else compiler.load(GPU_CAPTURES / "cudagraphs_skipped_input_mutation.json")
            cg = skipped.cudagraphs
            print("used:", cg.used, "| skipped:", cg.skipped)
            print("torch says:   ", cg.skip_reasons[0])
            print("in plain words:", cg.skip_reasons_user[0])
            print("at:           ", cg.skip_locations[0])
            """),
        md("""
            Inductor reads which inputs a graph mutates from AOTAutograd (`ViewAndMutationMeta.input_info`, each
            input's `mutates_data`), and `cudagraph_utils.check_for_mutation` skips the graph when an input that
            is not static is mutated. How to fix `f`: Exercise 6.4.

            ## 5. Dynamic shapes and CUDA graphs

            A CUDA graph has fixed sizes. With `dynamic=True` Inductor compiles **one** kernel for all sizes —
            what do CUDA graph trees do with each new size? The capture below calls a dynamic compile on four
            batch sizes, twice each:
            """),
        code("""
            def dynamic_capture():
                torch._dynamo.reset()
                f = torch.compile(lambda x: (x * 2).sum(0).sigmoid(), mode="reduce-overhead", dynamic=True)
                with compiler.capture(fresh=True, options={"mode": "reduce-overhead", "dynamic": True}) as cap:
                    for n in (32, 64, 96, 128):
                        x = torch.randn(n, 128, device="cuda")
                        f(x)
                        f(x)               # warm-up, then record, for each new shape
                return cap

            dyn = dynamic_capture() if GPU else compiler.load(GPU_CAPTURES / "dynamic_shapes_rerecord.json")
            print(len(dyn.compiles), "Inductor compile")
            """),
        md("""
            ## Exercises

            ### Exercise 6.1 — which capture skipped CUDA graphs?

            Which of the shipped captures **requested** CUDA graphs but had them **skipped**? They are listed
            below under neutral labels (their file names would give it away): load them and look.
            """),
        code("""
            import shutil, tempfile
            neutral = Path(tempfile.mkdtemp(prefix="tcompile_lab06_"))   # copies under neutral names
            captures = {}
            for i, path in enumerate(sorted(GPU_CAPTURES.glob("*.json"))):
                captures[f"capture_{i}"] = Path(shutil.copyfile(path, neutral / f"capture_{i}.json"))
            list(captures)
            """),
        exercise("""
            name = "capture_0"
            check_cudagraphs(compiler.load(captures[name]), used=False)
            """),
        solution_note(),
        solution("""
            for label, path in captures.items():            # the CUDA graphs tab of each, or its summary
                cg = compiler.load(path).cudagraphs
                print(label, path.stem, "skipped:" if cg.skipped else "", cg.skip_reasons[:1] if cg.skipped else "")
            name = next(label for label, path in captures.items() if compiler.load(path).cudagraphs.skipped)
            check_cudagraphs(compiler.load(captures[name]), used=False)
            """),
        md("""
            ### Exercise 6.2 — how many recordings?

            How many CUDA graphs did the dynamic-shapes capture (`dyn`) record — and why that many? Read its
            CUDA graphs tab (`explorer.show(dyn)`).
            """),
        exercise("""
            answer = ...
            check_recordings_answer(answer, dyn)
            """),
        solution_note(),
        solution("""
            answer = dyn.cudagraphs.recorded    # 4: one recording per distinct shape, one Inductor compile
            for key in dyn.cudagraphs.trees:
                print("   ", key)
            check_recordings_answer(answer, dyn)
            """),
        md("""
            One Inductor compile serves all four sizes, but CUDA graph trees **record one graph per distinct
            shape** (keyed by the symbolic sizes' values): each new shape costs a warm-up, a recording and memory
            in the pool. `torch._inductor.config.triton.cudagraph_skip_dynamic_graphs = True` skips CUDA graphs
            for graphs with dynamic shapes instead, and `triton.cudagraph_capture_sizes` limits recording to the
            sizes you list; torch warns when one function records more than
            `triton.cudagraph_dynamic_shape_warn_limit` (8) shapes.
            """),
        md("""
            ### Exercise 6.3 — what CUDA graphs save

            From the two medians in `small.cudagraph_comparison` (`without_cudagraphs`,
            `with_cudagraphs`), compute the **fraction of the call time** that CUDA graphs removed for the small
            model (a number between 0 and 1; the checker accepts it within 0.01).
            """),
        exercise("""
            saved_fraction = ...
            check_saved_fraction(saved_fraction, small.cudagraph_comparison)
            """),
        solution_note(),
        solution("""
            both = small.cudagraph_comparison
            without, with_ = both.without_cudagraphs.median_s, both.with_cudagraphs.median_s
            saved_fraction = (without - with_) / without
            print(f"{(without - with_) * 1e6:.0f} µs of {without * 1e6:.0f} µs per call")
            check_saved_fraction(saved_fraction, small.cudagraph_comparison)
            """),
        md("""
            ### Exercise 6.4 — fix the skip

            Section 4's capture `skipped` recorded why Inductor skipped CUDA graphs for `f`, and the line
            (`skipped.cudagraphs`, or its CUDA graphs tab). Write `f_fixed`: the same computation, with nothing that
            makes Inductor skip CUDA graphs. Its caller still needs the updated buffer. (The checker runs on this
            CPU: it asks AOTAutograd — whose metadata Inductor's check reads — what `f_fixed` mutates, and
            compares the results with `f`'s on new inputs.)
            """),
        exercise("""
            def f_fixed(buf, x):
                buf.add_(1)
                return x * 2 + buf

            check_no_input_mutation(f_fixed, f, torch.zeros(64), torch.randn(64))
            """),
        solution_note(),
        solution("""
            print(skipped.cudagraphs.skip_reasons[0], "at", skipped.cudagraphs.skip_locations[0])

            def f_fixed(buf, x):
                new_buf = buf + 1               # a new tensor: no input is mutated
                return x * 2 + new_buf, new_buf  # the caller keeps new_buf (buf = ... at the call site)

            check_no_input_mutation(f_fixed, f, torch.zeros(64), torch.randn(64))
            """),
        md("""
            Returning the new value moves the update out of the graph: the CUDA graph can be recorded and
            replayed, and the caller rebinds its buffer. Another fix keeps the buffer where torch treats it as
            *static* — a module's registered buffer under CUDA graph trees (`static_input_idxs`): a mutation of a
            static input does not skip (`check_for_mutation`).

            **Next:** Lab 7 — measuring whether compiling pays off at all.
            """),
    ]

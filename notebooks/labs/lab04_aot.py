"""Lab 4 — AOTAutograd: ATen graphs, functionalization, joint graph, partition, decompositions."""
from . import code, exercise, goals, md, setup, solution, solution_note

FILE = "04_aotautograd_training.ipynb"


def cells():
    return [
        goals("Lab 4 — AOTAutograd and training", """
            - say what AOTAutograd does to Dynamo's graph: ATen operators, functionalization, decompositions;
            - tell an inference capture (one graph) from a training capture (joint → forward + backward);
            - read the forward/backward partition: what the forward saves for the backward, and why the min-cut
              partitioner recomputes some of it;
            - see a decomposition table at work (`aot_eager` vs `aot_eager_decomp_partition`), and when Inductor
              compiles the backward;
            - checkpoint a region under `torch.compile` and read what the partitioner recomputes.
            """, "Uses backend=\"aot_eager\" (AOTAutograd, no code generation) except in section 6. "
                 "About a minute."),
        setup("""
            import pandas as pd

            mlp = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
            x = torch.randn(8, 16)

            def step(x):
                return mlp(x).square().mean()
            """),
        md("""
            ## 1. What AOTAutograd does

            Dynamo's graph calls PyTorch at the level you wrote (`torch._C._nn.linear`, `.square()`).
            A backend that uses **AOTAutograd** (Inductor does; so do the debugging backends `aot_eager` and
            `aot_eager_decomp_partition`) first re-traces that graph *through the dispatcher* with fake tensors:

            - every call becomes the **ATen operators** it dispatches to (`torch.ops.aten.addmm`, `aten.pow` …);
            - **functionalization** rewrites in-place and view operations as out-of-place ones, so later passes
              never reason about aliasing; a mutation of an input becomes one `copy_` at the end;
            - a **decomposition table** (chosen by the backend) rewrites some operators into simpler ones;
            - if anything requires grad, it also traces the **backward** with the autograd engine, into one
              **joint** graph, and **partitions** it into a forward and a backward graph ahead of time.

            `backend="aot_eager"` does all of this and then runs the graphs with eager PyTorch: the cheapest way
            to look at AOTAutograd.

            ## 2. Inference: one graph
            """),
        code("""
            with torch.no_grad():
                infer = compiler.explore(step, x, backend="aot_eager")
            check_inference(infer)
            print(infer.compiles[0].aot.graphs["inference"].code)
            """),
        md("""
            Compare with the FX graph tab (Dynamo's graph): each `nn.Linear` became `aten.t` (transpose the weight)
            plus `aten.addmm` (bias + matmul), and `.square()` became `aten.pow.Tensor_Scalar(…, 2)`. The inputs
            are `arg0_1 … arg4_1`: parameters are lifted to graph inputs.

            ## 3. Functionalization

            In-place updates disappear from AOTAutograd's graphs. Mutating an input is kept as **one** `copy_`
            back into it at the end, so the caller still sees the mutation:
            """),
        code("""
            def bump(buf, x):
                t = x.clone()
                t.add_(1)          # in place on a local: becomes plain add
                buf.mul_(2)        # in place on an input: mul, then copy_ back into buf
                return t + buf

            func = compiler.explore(bump, torch.ones(8, 16), x, backend="aot_eager", timing=False)
            print(func.compiles[0].aot.graphs["inference"].code)
            """),
        md("""
            ## 4. Training: joint graph, forward and backward

            For training, call `.backward()` inside the capture. AOTAutograd traces the forward and the backward
            together (the **joint** graph, inputs `primals` and `tangents` — the incoming gradients), then a
            **partitioner** splits it: the forward returns the loss *and the tensors the backward needs*
            (marked `SavedForBackwardsAOTOutput`); the backward takes them plus the tangents and returns the
            gradients.
            """),
        code("""
            torch._dynamo.reset()
            with compiler.capture() as train:
                loss = torch.compile(step, backend="aot_eager")(x)
                loss.backward()
            check_training(train)
            explorer.show(train, fn=step)
            """),
        code("""
            graphs = train.compiles[0].aot.graphs
            print({role: g.op_count for role, g in graphs.items()})
            print("saved for backward:", saved_for_backward(train))
            print(graphs["forward"].code)
            """),
        md("""
            **Which tensors to save is a trade-off.** Saving more costs memory until the backward runs;
            saving less means recomputing in the backward. `aot_eager` (like Inductor) uses the **min-cut
            rematerialization** partitioner, which recomputes cheap operations (views, pointwise ops) in the
            backward when that saves memory traffic; `aot_eager_default_partitioner` saves what the backward
            uses as is:
            """),
        code("""
            rows = []
            for backend in ("aot_eager_default_partitioner", "aot_eager", "aot_eager_decomp_partition"):
                torch._dynamo.reset()
                with compiler.capture() as c:
                    torch.compile(step, backend=backend)(x).backward()
                rows.append({"backend": backend, "saved for backward": ", ".join(saved_for_backward(c)),
                             "forward ops": c.compiles[0].aot.graphs["forward"].op_count,
                             "backward ops": c.compiles[0].aot.graphs["backward"].op_count})
            pd.DataFrame(rows)
            """),
        md("""
            Look at the first two rows: the default partitioner saves `t_1`, the transposed second weight; the
            min-cut partitioner saves the weight itself (`primals_4`) and re-does the transpose (a view: free)
            in the backward.

            ## 5. Decompositions

            The third row used `aot_eager_decomp_partition`: AOTAutograd with **Inductor's decomposition table**.
            `aten.gelu` is gone from its forward — decomposed into `mul`, `erf`, `add` — so a code generator only
            needs to know the simpler operators (and can fuse them). The forward also saves `mul_2`, the GELU
            output, instead of `gelu`:
            """),
        code("""
            def forward_ops(backend):
                torch._dynamo.reset()
                with compiler.capture() as c:
                    torch.compile(step, backend=backend)(x).backward()
                return sorted({t.split(".")[-2] for t in graph_ops(c, "forward") if t.startswith("torch.ops.aten.")})

            print("aot_eager:                 ", forward_ops("aot_eager"))
            print("aot_eager_decomp_partition:", forward_ops("aot_eager_decomp_partition"))
            """),
        md("""
            ## 6. With Inductor: the backward compiles on the first `.backward()` (with cold caches)

            Inductor gets AOTAutograd's forward and backward graphs and generates code for each. AOTAutograd
            partitions when the forward compiles, but hands the backward graph to the backend's backward compiler
            **lazily**, on the first call of `.backward()` — AOTAutograd does this for every backend, not only
            Inductor (Note [Backward graph lazy lowering] and `AutogradLazyBackwardCompileInfo` in
            `torch/_functorch/_aot_autograd/runtime_wrappers.py`). That holds when the compile is cold: on an
            AOTAutograd cache hit the backward comes already compiled with the forward
            (`CachedAutogradLazyBackwardCompileInfo`, same file: "On an AOT Autograd cache hit, we already have a
            lowered backward"), so a capture with the caches on — not `fresh` — may show no backward compile at the
            first `.backward()`. It compiles the backward at once instead when
            SymInts are saved for backward (the backend might add guards) or under
            `torch._functorch.config.force_non_lazy_backward_lowering` (`graph_compile.py`). Capture the forward
            call alone, then the backward call, and compare:
            """),
        code("""
            torch._dynamo.reset()
            with compiler.capture() as fwd_only:
                loss = torch.compile(step)(x)
            with compiler.capture() as bwd_only:
                loss.backward()
            print("forward call:  Inductor compiled", [r.role for r in fwd_only.compiles[0].inductor.runs])
            print("backward call: Inductor compiled", [r.role for c in bwd_only.compiles for r in c.inductor.runs])
            """),
        md("""
            The Inductor tab of a capture that covers both calls shows a *Forward graph* and a *Backward graph*
            section, and the Timings tab counts `Inductor ×2`.

            ## Exercises

            ### Exercise 4.1 — make it a training capture

            A model of its own for Exercises 4.1 and 4.2 (so section 4 does not answer them): this capture of
            `step2` has no backward graph. Fix it so that `check_training` passes.
            """),
        code("""
            model2 = torch.nn.Sequential(torch.nn.Linear(x.shape[-1], 48), torch.nn.SiLU(), torch.nn.Linear(48, 24),
                                         torch.nn.Tanh(), torch.nn.Linear(24, 1))

            def step2(x):
                return model2(x).square().mean()
            """),
        exercise("""
            torch._dynamo.reset()
            with compiler.capture() as ex41:
                with torch.no_grad():
                    loss = torch.compile(step2, backend="aot_eager")(x)
            check_training(ex41)
            """),
        solution_note(),
        solution("""
            torch._dynamo.reset()
            with compiler.capture() as ex41:
                # grad mode on and parameters that require grad: AOTAutograd traces the joint graph and
                # partitions it into forward and backward when the forward compiles
                loss = torch.compile(step2, backend="aot_eager")(x)
                loss.backward()                                       # the backward runs inside the capture
            check_training(ex41)
            """),
        md("""
            ### Exercise 4.2 — what is saved

            How many tensors does the forward graph of `ex41` save for the backward? Count the outputs marked
            `SavedForBackwardsAOTOutput` in the forward graph (AOT graphs tab, or `ex41.compiles[0].aot.graphs["forward"].code`).
            """),
        exercise("""
            answer = ...
            check_saved_answer(answer, ex41)
            """),
        solution_note(),
        solution("""
            print(ex41.compiles[0].aot.graphs["forward"].code.split("return (")[1])
            answer = len(saved_for_backward(ex41))   # read from the forward graph's return tuple
            check_saved_answer(answer, ex41)
            """),
        md("""
            ### Exercise 4.3 — decompose GELU

            Choose a backend under which the **forward** graph has no `gelu` operator left — decomposed, not removed:
            the checker also looks for what torch's decomposition of `gelu` is made of (say which operators
            replaced it).
            """),
        exercise("""
            torch._dynamo.reset()
            with compiler.capture() as ex43:
                torch.compile(step, backend="aot_eager")(x).backward()
            check_decomposed(ex43, "gelu", graph="forward")
            """),
        solution_note(),
        solution("""
            torch._dynamo.reset()
            with compiler.capture() as ex43:
                # Inductor's decomposition table, without Inductor's code generation
                torch.compile(step, backend="aot_eager_decomp_partition")(x).backward()
            check_decomposed(ex43, "gelu", graph="forward")   # gelu(x) = x/2 * (1 + erf(x/√2))
            """),
        md("""
            ### Exercise 4.4 — activation checkpointing, compiled

            Training memory is mostly activations: what the forward saves for the backward (Exercise 4.2).
            `torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=False)` trades memory for compute: the
            region `fn` saves nothing and is run again in the backward. Under `torch.compile`, Dynamo traces the
            region as one higher-order op (`tag_activation_checkpoint`) whose nodes carry a *recompute* tag, and
            AOTAutograd's partitioner (`min_cut_rematerialization_partition`, `torch/_functorch/partitioners.py`)
            puts them into the backward graph instead of saving their outputs.

            Change `step_ck` so that the forward graph saves **no intermediate tensor** — only graph inputs
            (`primals_*`) — and the backward graph computes `gelu` again. Then compare the forward's saved tensors
            with `ex41`'s (AOT graphs tab: the joint graph, then the forward's `SavedForBackwardsAOTOutput`
            outputs and the backward graph's ops).
            """),
        exercise("""
            def step_ck(x):
                return mlp(x).square().mean()

            torch._dynamo.reset()
            with compiler.capture() as ex44:
                torch.compile(step_ck, backend="aot_eager")(x).backward()
            check_recomputed(ex44, "gelu")
            """),
        solution_note(),
        solution("""
            from torch.utils.checkpoint import checkpoint

            def step_ck(x):
                return checkpoint(mlp, x, use_reentrant=False).square().mean()

            torch._dynamo.reset()
            with compiler.capture() as ex44:
                torch.compile(step_ck, backend="aot_eager")(x).backward()
            print("saved:", saved_for_backward(ex44))
            print("recomputed in the backward:", [t for t in graph_ops(ex44, "backward") if "backward" not in t
                                                  and any(k in t for k in ("addmm", "gelu"))])
            check_recomputed(ex44, "gelu")
            """),
        md("""
            Without the checkpoint, the forward saves the outputs of the first linear layer (GELU's backward
            needs it), of GELU (the second layer's weight gradient) and of the second layer (`square`'s backward);
            with it, only the input and the parameters, and the backward graph runs the layers and GELU again.
            `torch._functorch.config.activation_memory_budget` (1.0 by default) asks the min-cut partitioner
            itself to recompute more, to fit a fraction of the activation memory, without marking a region.

            **Next:** Lab 5 — what Inductor does with these graphs.
            """),
    ]

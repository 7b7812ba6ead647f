"""Lab 10 — the modern toolbox: caches you carry, export, custom ops, dynamic marks (issue 47)."""
from . import code, exercise, goals, md, setup, solution, solution_note

FILE = "10_modern.ipynb"


def cells():
    return [
        goals("Lab 10 — The modern toolbox: caches you carry, export, custom ops, dynamic marks", """
            - carry compiled code to a cold machine with the mega-cache (`torch.compiler.save_cache_artifacts` /
              `load_cache_artifacts`) and prove the cold start hit the cache;
            - tell `torch.export` (one whole graph, ahead of time, for AOTInductor) from `torch.compile` (graphs
              and guards, just in time), and keep a data-dependent branch in an exported graph with `torch.cond`;
            - wrap an opaque kernel as a custom operator (`torch.library.custom_op`) with a fake implementation and
              a backward, and prove it with `torch.library.opcheck`; know where `triton_op` fits;
            - tell `maybe_mark_dynamic` from `mark_dynamic`, and say what size-oblivious reasoning does;
            - compile an optimizer's step, and know the tools for the rest: the minifier and repro scripts, FSDP2.
            """, "Small Inductor compiles in section 1 only, the rest on backend=\"eager\"/\"aot_eager\". About a "
                 "minute on 2 cores."),
        setup("""
            from torch._dynamo.utils import counters
            from torch._inductor.utils import fresh_cache
            from tcompile_labs.checks_modern import *
            """),
        md("""
            ## 1. Compile caches you can carry (the mega-cache)

            Every Inductor compile goes through caches on disk (the FX graph cache, AOTAutograd's cache, …; Lab 7
            measures them). On a fresh machine — a new container, a CI runner, the other ranks of a job — those
            caches are empty and every compile is cold. **`torch.compiler.save_cache_artifacts()`** serializes
            every cache artifact this process has recorded (`CacheArtifactManager.serialize`,
            `torch/compiler/_cache.py`) into one `bytes`; **`torch.compiler.load_cache_artifacts(b)`** writes them
            into the caches of another process (`CacheArtifactManager.populate_caches`). Its compile then *hits*
            the FX graph cache: torch counts it in `counters["inductor"]["fxgraph_cache_hit"]`
            (`FxGraphCache._lookup_graph`… `torch/_inductor/codecache.py`).

            `fresh_cache()` (`torch/_inductor/utils.py`) gives a block an empty cache directory: a cold machine,
            in this process.
            """),
        code("""
            def head(x):
                return (x.sin() * 2 + x.cos()).sum(-1)

            x = torch.randn(8, 16)
            with fresh_cache():                          # machine A: a cold compile, then save
                torch._dynamo.reset()
                torch.compile(head)(x)
                artifacts, info = torch.compiler.save_cache_artifacts()
            print(f"{len(artifacts):,} bytes:", {kind: len(keys) for kind, keys in info.artifacts.items()})

            with fresh_cache():                          # machine B: empty caches, load, compile
                torch._dynamo.reset()
                torch.compiler.load_cache_artifacts(artifacts)
                before = counters["inductor"]["fxgraph_cache_hit"]
                torch.compile(head)(x)
                print("FX graph cache hits on machine B:", counters["inductor"]["fxgraph_cache_hit"] - before)
            """),
        md("""
            Two things the API does not say loudly:

            - `save_cache_artifacts()` returns **every** artifact recorded since the process started (its
              serializer appends: `AppendingByteSerializer`), not only the last compile's; and `None` when
              nothing was recorded yet.
            - The keys include the graph, the input shapes/dtypes and torch's version and configs: the artifacts
              only help a compile of the same graph, for the same input metadata, with the same torch.
              Dynamo itself still runs (tracing is not cached); what is saved is AOTAutograd's and Inductor's work.

            ### Exercise 10.1 — carry the compile of `tail`

            Your job's `tail` is compiled on every cold start. Fix the cell so that `artifacts` lets a cold start
            (an empty cache directory, `load_cache_artifacts(artifacts)`, then `torch.compile(tail)(y)`) hit the
            FX graph cache. The checker does exactly that and counts torch's cache hits and misses.
            """),
        code("""
            def tail(y):
                return torch.nn.functional.gelu(y @ y.T).mean(0)

            y = torch.randn(16, 32)
            """),
        exercise("""
            with fresh_cache():
                torch._dynamo.reset()
                artifacts = torch.compiler.save_cache_artifacts()
                torch.compile(tail, backend="aot_eager")(y)
            check_portable_cache(artifacts, tail, y)
            """),
        solution_note(),
        solution("""
            with fresh_cache():
                torch._dynamo.reset()
                torch.compile(tail)(y)                   # Inductor (the default backend): its artifacts are cached
                artifacts = torch.compiler.save_cache_artifacts()   # after the compile, not before
            check_portable_cache(artifacts, tail, y)
            """),
        md("""
            ## 2. `torch.export` and AOTInductor versus `torch.compile`

            `torch.compile` is **just in time**: Dynamo traces what it can, breaks the graph where it cannot, and
            guards what it assumed, recompiling when a guard fails (Labs 1–3). **`torch.export.export(model,
            args)`** is **ahead of time**: one whole graph (an `ExportedProgram`) or an error — no graph break,
            no guard to fall back on, no Python left. That graph can be saved (`torch.export.save`), or compiled
            by **AOTInductor** into a package that runs without Python (`torch._inductor.aoti_compile_and_package`,
            then `aoti_load_package`; `torch/_inductor/__init__.py`) — serving in C++, on a phone, in a container
            with no compiler.

            The price: a branch on a tensor's value cannot be traced. `torch.compile` breaks the graph there;
            `export` fails (`GuardOnDataDependentSymNode`, `torch/fx/experimental/symbolic_shapes.py`):
            """),
        code("""
            class GateReference(torch.nn.Module):
                def __init__(self):
                    super().__init__()
                    torch.manual_seed(0)
                    self.lin = torch.nn.Linear(4, 4)

                def forward(self, x):
                    y = self.lin(x)
                    if x.sum() > 0:                      # a branch on data
                        return y.relu()
                    return y.tanh() * 2

            x4 = torch.randn(3, 4)
            try:
                torch.export.export(GateReference(), (x4,))
            except Exception as error:
                print(type(error).__name__, "—", str(error).splitlines()[0][:120])
            """),
        md("""
            **`torch.cond(pred, true_fn, false_fn, operands)`** (`torch/_higher_order_ops/cond.py`) is the branch
            as an operator: both branches are traced as subgraphs, and the graph picks one at run time. Export
            keeps it; `torch.compile` traces it without a graph break too.

            ### Exercise 10.2 — export the gate

            Rewrite `Gate.forward` (keep `__init__`) so that `torch.export.export(Gate(), (x4,))` succeeds and the
            exported program computes `GateReference` on inputs that take either branch. The checker reads the
            exported graph (a `cond` node) and exports a fresh `Gate` with the reference's weights.
            """),
        exercise("""
            class Gate(GateReference):
                def forward(self, x):
                    y = self.lin(x)
                    return y.relu()                      # the branch export would have picked for x4, baked in

            ep = torch.export.export(Gate(), (x4,))
            check_cond_export(ep, Gate, GateReference, x4)
            """),
        solution_note(),
        solution("""
            class Gate(GateReference):
                def forward(self, x):
                    y = self.lin(x)
                    return torch.cond(x.sum() > 0, lambda y: y.relu(), lambda y: y.tanh() * 2, (y,))

            ep = torch.export.export(Gate(), (x4,))
            print(ep.graph_module.code)                  # cond(gt, true_graph_0, false_graph_0, (linear,))
            check_cond_export(ep, Gate, GateReference, x4)
            """),
        md("""
            ## 3. Custom operators: `custom_op`, fake tensors, autograd, `opcheck`

            A kernel the compiler cannot see into — a C++/CUDA extension, a NumPy call — breaks the graph, and
            cannot be exported. Wrapping it as a **custom operator** (`torch.library.custom_op`,
            `torch/_library/custom_ops.py`) makes it one opaque node the compiler can trace *around*, if you give it
            two more things:

            - a **fake implementation** (`@op.register_fake`): the output's shape, dtype and device from the
              inputs', without data — what Dynamo, AOTAutograd and export run while tracing;
            - a **backward** (`op.register_autograd(backward, setup_context=…)`), if it must train.

            **`torch.library.opcheck(op, args)`** (`torch/library.py`) tests the registrations against each other:
            its default tests are `test_schema`, `test_autograd_registration`, `test_faketensor` and
            `test_aot_dispatch_dynamic` (`DEFAULT_TEST_UTILS`, `torch/testing/_internal/optests/generate_tests.py`).
            It does not check that your backward is the true derivative: `torch.autograd.gradcheck` does.

            **User-defined Triton kernels** (GPU) take the same road: `torch.library.triton_op` defines the operator
            and `torch.library.wrap_triton(kernel)[grid](…)` launches the kernel inside it
            (`torch/_library/triton.py`), so Inductor sees the Triton source and can optimize around it. There is no
            Triton here (CPU), so nothing of it is graded.
            """),
        code("""
            import numpy as np

            def scaled_tanh_reference(x, scale):
                return torch.tanh(x) * scale

            a = torch.randn(6, dtype=torch.double, requires_grad=True)
            """),
        md("""
            ### Exercise 10.3 — a custom op that compiles and trains

            `scaled_tanh` runs NumPy (standing in for a compiled extension). Give it a fake implementation and a
            backward so that `opcheck` passes, `gradcheck` passes, and `torch.compile(fullgraph=True)` of a loss
            through it trains with the reference's gradient. (An op name can be defined again in the same
            process: the last definition wins.)
            """),
        exercise("""
            @torch.library.custom_op("lab10::scaled_tanh", mutates_args=())
            def scaled_tanh(x: torch.Tensor, scale: float) -> torch.Tensor:
                return torch.from_numpy(np.tanh(x.numpy(force=True)) * scale)

            check_custom_op(scaled_tanh, scaled_tanh_reference, a.detach().float())
            """),
        solution_note(),
        solution("""
            @torch.library.custom_op("lab10::scaled_tanh", mutates_args=())
            def scaled_tanh(x: torch.Tensor, scale: float) -> torch.Tensor:
                return torch.from_numpy(np.tanh(x.numpy(force=True)) * scale)

            @scaled_tanh.register_fake
            def _(x, scale):
                return torch.empty_like(x)               # shape, dtype, device: no data

            def setup_context(ctx, inputs, output):
                x, scale = inputs
                ctx.save_for_backward(x)
                ctx.scale = scale

            def backward(ctx, grad):
                (x,) = ctx.saved_tensors
                return grad * ctx.scale * (1 - torch.tanh(x) ** 2), None   # no gradient for the float

            scaled_tanh.register_autograd(backward, setup_context=setup_context)
            print(torch.library.opcheck(scaled_tanh, (a, 2.0)))
            check_custom_op(scaled_tanh, scaled_tanh_reference, a.detach().float())
            """),
        md("""
            ## 4. `maybe_mark_dynamic`, `mark_dynamic` and size-oblivious reasoning

            Lab 3's `torch._dynamo.mark_dynamic(t, dim)` is a **promise**: the dimension stays symbolic, and if the
            code specializes it (a branch on its value, a view with a constant size) the compile raises
            `ConstraintViolationError` (`torch/fx/experimental/symbolic_shapes.py`). A data loader that marks every
            batch cannot know which models specialize. **`torch._dynamo.maybe_mark_dynamic(t, dim)`**
            (`torch/_dynamo/decorators.py`: it records the index in `t._dynamo_weak_dynamic_indices`) asks for the
            same symbol "but don't enforce it": where the code specializes, the size becomes a constant quietly.
            """),
        code("""
            def table_lookup(x):                         # needs the batch size as a constant
                if x.shape[0] == 8:
                    return x.sum(0) * 2
                return x.sum(0)

            for mark in (torch._dynamo.mark_dynamic, torch._dynamo.maybe_mark_dynamic):
                torch._dynamo.reset()
                batch = torch.randn(8, 4)
                mark(batch, 0)
                try:
                    torch.compile(table_lookup, backend="eager")(batch)
                    print(f"{mark.__name__}: compiled (the batch specialized to 8)")
                except Exception as error:
                    print(f"{mark.__name__}: {type(error).__name__} — {str(error).splitlines()[0][:80]}")
            torch._dynamo.reset()
            """),
        md("""
            **Size-oblivious reasoning.** A symbolic size is *backed* (Lab 3): it has a value at compile time, and
            sizes 0 and 1 are specialized. Many checks in torch's own code ask "could this size be 0 or 1?" only to
            pick a fast path; `guard_size_oblivious(expr)` (`torch/fx/experimental/symbolic_shapes.py`) decides them
            as if the size could be any size ≥ 2 (its size-like range), so the answer holds for every size and an
            unbacked size (`mark_unbacked`, Lab 3) needs no value to decide it — the behaviour may then differ from
            eager PyTorch at 0 or 1, which is the trade. `torch.fx.experimental._config.backed_size_oblivious = True`
            applies it to backed sizes too (no 0/1 specialization; experimental, for export).

            Lab 3's Exercise 3.10 practises `maybe_mark_dynamic` (a mark for batches of models you did not write).
            """),
        md("""
            ## 5. Compiled optimizers

            The optimizer's step is Python looping over parameters: many small kernels, launched one by one.
            `torch.compile(opt.step)` traces the update into one graph (Dynamo inlines `Optimizer.step` and the
            algorithm's `_single_tensor_*` / `_multi_tensor_*` function, `torch/optim/adam.py`), and Inductor fuses
            the per-parameter updates into a few kernels. Keep the learning rate a tensor
            (`torch.optim.Adam(..., lr=torch.tensor(0.01))`) when a scheduler changes it: a Python float is a
            constant of the graph, guarded by its value (Lab 3, Exercise 3.3).

            ### Exercise 10.4 — compile the step

            Write `make_step(opt)`, returning the function a training loop calls each step, so that the parameter
            update runs inside compiled code. The checker forces every compile to a backend of its own that
            watches the parameters change during each compiled run, and compares with an eager Adam.
            """),
        exercise("""
            def make_step(opt):
                return opt.step

            check_compiled_step(make_step)
            """),
        solution_note(),
        solution("""
            def make_step(opt):
                return torch.compile(opt.step, backend="eager")   # Inductor would fuse it; eager keeps the lab quick

            check_compiled_step(make_step)
            """),
        md("""
            ## 6. The rest of the toolbox (read, then try on your own code)

            - **The minifier and repro scripts.** `TORCHDYNAMO_REPRO_AFTER="dynamo"` or `"aot"`
              (`torch._dynamo.config.repro_after`) with `TORCHDYNAMO_REPRO_LEVEL` (`repro_level`: 1 dumps a repro on a
              compile error, 2 a minifier launcher on one, 3 always, 4 on an accuracy failure) writes
              `minifier_launcher.py`, which
              shrinks the failing graph to a short `repro.py` (`torch/_dynamo/repro/after_dynamo.py`,
              `after_aot.py`). `tlparse` on a `TORCH_TRACE` log (Lab 8) links each compile's artifacts. Before both,
              Lab 9's bisector says which stage is to blame.
            - **FSDP2.** `torch.distributed.fsdp.fully_shard(module)` (`torch/distributed/fsdp/_fully_shard/`)
              shards each parameter as a `DTensor`; compile the model per block (regional compilation, Lab 7) after
              sharding, and Dynamo traces the all-gathers and reduce-scatters into the graphs. It needs several
              processes with a process group: Lab 8's job runner is where to try it.

            **Next:** your own model — `%%tcompile` it, then carry its caches, export it, or mark its batch.
            """),
    ]

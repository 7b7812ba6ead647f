"""Lab 5 — Inductor: lowering, IR before/after fusion, generated code, options and modes."""
from . import code, exercise, goals, md, setup, solution, solution_note

FILE = "05_inductor.ipynb"


def cells():
    return [
        goals("Lab 5 — Inductor: IR, fusion and generated code", """
            - name Inductor's steps (pre-grad passes, decompositions, post-grad passes, lowering, scheduling and
              fusion, code generation) and find each one in tcompile;
            - read the scheduler IR before and after fusion, and tell *inlining* during lowering from *fusion*
              in the scheduler;
            - read a generated C++ kernel and the Python wrapper that calls it, and a Triton pointwise and
              reduction kernel from GPU captures;
            - see with `%%tcompile --compare` and `cap.diff` what an option changed — and where it cannot act;
            - know what `epilogue_fusion`, `max_autotune`, `coordinate_descent_tuning`, `shape_padding` and
              `trace.*` do, and what the `mode` presets set.
            """, "Inductor compiles C++ on this CPU: each fresh compile takes a few seconds (the first one in a "
                 "kernel 15–30 s). About two minutes."),
        setup("""
            x = torch.randn(64, 128)
            w = torch.randn(128, 64)
            """),
        md("""
            ## 1. From graph to kernels

            | step | what happens | where in tcompile |
            |---|---|---|
            | pre-grad passes | pattern rewrites on Dynamo's graph (Torch IR) | Inductor › Pre-grad graph |
            | AOTAutograd | ATen graph(s) with **Inductor's decompositions** | AOT graphs (Lab 4) |
            | post-grad passes | rewrites on the ATen graph: fusing patterns, re-inplacing, removing no-ops | Inductor › Post-grad graph |
            | lowering | each ATen op becomes IR: loop bodies (`ops.load`, `ops.sin`, `ops.store`) over index expressions; some ops become calls to library kernels instead (which? Exercise 5.3) | Inductor › IR *before fusion* |
            | scheduling & fusion | one scheduler node per buffer that must exist in memory; nodes that can share loops are fused | Inductor › IR *after fusion*, fusion table |
            | code generation | C++ with OpenMP and `at::vec` (CPU) or Triton (GPU), plus a Python `call()` that allocates buffers and launches kernels | Generated code |

            Caches matter here: on a cache hit Inductor loads the compiled code and none of the IR is produced
            again. `%%tcompile` compiles cache-free unless you pass `--cached`; in Python, pass `fresh=True`.
            """),
        code("""
            %%tcompile --no-timing --name ind
            scores = x @ w
            out = torch.softmax(scores, dim=-1) * 2 + torch.sin(scores)
            """),
        md("""
            Open **Inductor**: the post-grad graph shows softmax decomposed into `amax`, `sub`, `exp`, `sum`,
            `div`, and the fusion table lists each node after fusion with the nodes it is made of. The same data:
            """),
        code("""
            run = ind.compiles[0].inductor.runs[0]
            ir = run.ir
            print(f"{ir.nodes_before} scheduler nodes before fusion → {ir.nodes_after} after")
            for f in ir.fusion:
                print(f"  {f.fused:28} {f.kind:28} ← {', '.join(f.members)}")
            print([k.name for k in ind.compiles[0].kernels.kernels])
            """),
        md("""
            `op0` is an `ExternKernelSchedulerNode`: Inductor calls a library kernel for it rather than
            generating code (which operator? Exercise 5.3). The other nodes each write one buffer (the row
            maxima and row sums of the softmax, the output…). They all loop over the same 64 rows, so the
            scheduler fused them — on CPU into an `OuterLoopFusedSchedulerNode`: one shared loop over rows with
            an inner loop per original node — and one C++ kernel computes them all.

            ## 2. Inlining happens before fusion

            Why are there so few nodes before fusion, for a graph with about a dozen operators? **Lowering
            inlines pointwise operations**: a pointwise result used by another pointwise op is not stored, its
            expression is substituted into the consumer's loop body. Only values that must exist in memory
            (reduction results, graph outputs, values with many users, inputs of library calls) become buffers —
            and scheduler nodes. A chain of pointwise ops is one node before fusion even starts:
            """),
        code("""
            def chain(x):
                return (x.sin() * 2).relu() + 1

            chain_cap = compiler.explore(chain, x, fresh=True, timing=False)
            chain_run = chain_cap.compiles[0].inductor.runs[0]
            print(chain_run.ir.nodes_before, "node before fusion:")
            pre_fusion = chain_run.ir_before
            first, last = pre_fusion.nodes[0].lines  # the node's lines in the IR text
            print("\\n".join(pre_fusion.text.splitlines()[first:last + 1]))
            """),
        md("""
            The loop body (`class op0_loop_body`) loads the input once, computes `sin`, `mul`, `relu`, `add`
            in registers, and stores once: one pass over memory instead of four. `var_ranges` and `index0` are
            the loop's iteration space and index expression (with dynamic shapes they contain symbols, Lab 3).

            ## 3. Reading the generated C++
            """),
        code("""
            kernel = chain_cap.compiles[0].kernels.kernels[0]
            print(kernel.name)
            print(kernel.source)
            """),
        md("""
            - `extern "C" void kernel(const float* in_ptr0, float* out_ptr0)`: raw pointers to the input and the
              output buffer; the name `cpp_fused_add_mul_relu_sin_0` lists the ATen ops it computes.
            - `#pragma omp parallel` / `#pragma omp for`: the loop is split across threads with OpenMP.
            - `at::vec::Vectorized<float>::loadu(…, N)`: SIMD — N floats per step, N set by the vector ISA that
              Inductor picked for the machine that compiled it (`torch._inductor.cpu_vec_isa.pick_vec_isa()`):
              16 with AVX-512, 8 with AVX2 — read the number in your code above; `tmp0.sin()`,
              `clamp_min(…, 0)` (relu) and `+` work on whole vectors;
              `tmp8.store(out_ptr0 + x0)` writes the result.

            The wrapper module's `call()` (Generated code › Whole output module) checks the input's size and
            stride, allocates the output with `empty_strided_cpu`, and calls the kernel:
            """),
        code("""
            module = chain_cap.compiles[0].kernels.module
            print(module[module.index("def call("):module.index("runner = Runner")])
            """),
        md("""
            On a GPU the same kernel is **Triton**: a Python function decorated with `@triton.jit`, with one
            program per block of `XBLOCK` elements, `tl.load`/`tl.store` with masks, and a launcher
            (`@triton_heuristics.pointwise`). From a shipped capture recorded on an H100 with torch 2.11:
            """),
        code("""
            from pathlib import Path

            import tcompile_labs
            GPU_CAPTURES = tcompile_labs.gpu_captures()      # shipped with tcompile (package data)
            gpu_chain = compiler.load(GPU_CAPTURES / "pointwise_chain.json")
            triton_kernel = gpu_chain.compiles[0].kernels.kernels[0]
            print(gpu_chain.compiles[0].source.text)
            print(triton_kernel.name, triton_kernel.triton)
            print(triton_kernel.source)
            """),
        md("""
            ## 4. Options and modes

            `torch.compile(options={...})` patches `torch._inductor.config` for one compile
            (`torch._inductor.list_options()` lists every name). The ones asked about most:

            | option | default | what it does |
            |---|---|---|
            | `epilogue_fusion` | `True` | fuse the pointwise ops that follow a matmul into the matmul's kernel (Exercise 5.5: when it can) |
            | `max_autotune` | `False` | benchmark alternative implementations (GEMM templates with several tile configs, library calls) at compile time and keep the fastest |
            | `coordinate_descent_tuning` | `False` | after choosing a config, tune a Triton kernel's block sizes one at a time (GPU) |
            | `shape_padding` | `True` | pad matmul dimensions to aligned sizes when that makes the GEMM faster (GPU) |
            | `max_fusion_size` | `64` | the most nodes one fused node may contain |
            | `trace.enabled`, `trace.debug_dir` | `False`, `None` | write each compile's graphs, IR before/after fusion and output code to a debug directory |

            A `mode` is a named set of options — ask torch which:
            """),
        code("""
            torch._inductor.list_mode_options()
            """),
        md("""
            `reduce-overhead` turns on CUDA graphs (Lab 6); `max-autotune` turns on autotuning,
            coordinate-descent tuning **and CUDA graphs** (`triton.cudagraphs`, as the table above shows), and
            `max-autotune-no-cudagraphs` the first two only; `lite` (new) falls back to ATen kernels instead of
            generating code.
            On this CPU, max-autotune has few alternatives to try; on the GPU it benchmarked these for one
            `a @ b` (fp16, 1024×1024):
            """),
        code("""
            import pandas as pd
            tuned = compiler.load(GPU_CAPTURES / "matmul_epilogue_max_autotune.json")
            (choice_set,) = tuned.compiles[0].autotune
            print(tuned.compiles[0].source.text)
            pd.DataFrame([c.to_data() for c in choice_set.choices])[["name", "time_ms", "chosen", "description"]].head(8)
            """),
        md("""
            `trace.*` writes what tcompile shows into files, one directory per compile (handy for sharing, or for
            a diff tool):
            """),
        code("""
            import os, tempfile
            debug_dir = tempfile.mkdtemp()
            compiler.explore(chain, torch.randn(32, 32), fresh=True, timing=False,
                             options={"trace.enabled": True, "trace.debug_dir": debug_dir})
            for root, _, files in os.walk(debug_dir):
                if files:
                    print(os.path.relpath(root, debug_dir), sorted(files))
            """),
        md("""
            ## Exercises

            ### Exercise 5.1 — read a reduction kernel

            A shipped H100 capture of `norm(torch.softmax(x, -1) * 3)` (a `LayerNorm` of 1024 features, `x` of
            2048 × 1024): softmax needs a row maximum and a row sum, layer norm a row mean and variance — four
            reductions over each row. Read its one Triton kernel: it handles `XBLOCK` rows per program (`xnumel`
            rows in all) and reduces along each row (`r0_numel` elements, `R0_BLOCK` at a time — here the
            whole row at once: a *persistent* reduction, `@triton_heuristics.persistent_reduction`).

            How many elements does each reduction reduce, and how many times does the kernel load `x` (its
            first input, `in_ptr0`) from memory?
            """),
        code("""
            softmax_norm = compiler.load(GPU_CAPTURES / "softmax_layernorm.json")
            print(softmax_norm.compiles[0].source.text)
            reduction = softmax_norm.compiles[0].kernels.kernels[0]
            print(reduction.name)
            print(reduction.source[reduction.source.index("@triton.jit"):])
            """),
        exercise("""
            row_length = ...
            loads_of_x = ...
            check_reduction_kernel_answer(row_length, loads_of_x, softmax_norm)
            """),
        solution_note(),
        solution("""
            # r0_numel = 1024: each row has 1024 elements (xnumel = 2048 is the number of rows).
            # One tl.load(in_ptr0 …): the whole row stays in registers for max, sum, mean and variance —
            # four reductions, one read of x (eager PyTorch runs softmax, mul and layer_norm as separate
            # kernels, each reading its input from memory and writing its output back).
            row_length = 1024
            loads_of_x = 1
            check_reduction_kernel_answer(row_length, loads_of_x, softmax_norm)
            """),
        md("""
            `tl.max2`/`tl.sum(…, 1)` reduce along axis 1 (the row) and `[:, None]` keeps one value per row for
            the pointwise work after it; the stores write the output and the statistics the backward would
            need (mean, rstd, max, sum).
            """),
        md("""
            ### Exercise 5.2 — switch fusion off

            Find the Inductor option (see the table above) that stops the scheduler from fusing, and compile
            `scaled_softmax` with it (change only the options). Then compare the IR after fusion and the C++ with
            the fused version. The checker reads the scheduler's fusion log of your compile.
            """),
        code("""
            def scaled_softmax(x):
                return torch.softmax(x * 2, dim=-1) + 1
            """),
        exercise("""
            ex52 = compiler.explore(scaled_softmax, x, fresh=True, timing=False, options={})
            check_fused(ex52, fused=False)
            """),
        solution_note(),
        solution("""
            # a fused node may hold at most max_fusion_size nodes: 1 means no two nodes can be fused
            ex52 = compiler.explore(scaled_softmax, x, fresh=True, timing=False, options={"max_fusion_size": 1})
            check_fused(ex52, fused=False)
            source = ex52.compiles[0].kernels.kernels[0].source
            print(len(ex52.compiles[0].kernels.kernels), "C++ kernel with", source.count("#pragma omp for"),
                  "separate parallel loops")
            """),
        md("""
            The unfused nodes still end up in **one** C++ function: on CPU, Inductor groups consecutive nodes
            into one kernel function (a *kernel group*), but each node keeps its own loop over the data, so
            every intermediate goes through memory. On a GPU each of them would be its own Triton kernel.

            ### Exercise 5.3 — what Inductor does not generate

            In the `ind` capture (section 1), which ATen operator did Inductor hand to a library kernel instead
            of generating code for it? Give the operator's name (e.g. `"sin"`).
            """),
        exercise("""
            answer = ...
            check_extern_op_answer(answer, ind)
            """),
        solution_note(),
        solution("""
            answer = "mm"     # extern_kernels.mm: the matmul runs in a library GEMM (oneDNN/MKL on CPU, cuBLAS on GPU)
            check_extern_op_answer(answer, ind)
            """),
        md("""
            ### Exercise 5.4 — where does the time go, by line?

            tcompile maps every kernel back to the lines of your code it came from (Source tab: each line is
            shaded by its share of the measured kernel time; click a line for its nodes and kernels), and
            `cap.line_table()` gives the same as a table: one row per line, with its kernels and `time_share`.
            Which line of `costly` costs the most? Give its line number.
            """),
        exercise("""
            def costly(a, b):
                h = a.relu() + 1
                p = h @ b
                return p.softmax(-1)

            ex54 = compiler.explore(costly, torch.randn(512, 384), torch.randn(384, 256), fresh=True, repeat=5)
            costliest = ...
            check_costliest_line(ex54, costliest)
            """),
        solution_note(),
        solution("""
            def costly(a, b):
                h = a.relu() + 1
                p = h @ b
                return p.softmax(-1)

            ex54 = compiler.explore(costly, torch.randn(512, 384), torch.randn(384, 256), fresh=True, repeat=5)
            table = ex54.line_table()
            print(table[["line", "code", "kernels", "time_share"]])
            costliest = int(table.loc[table["time_share"].idxmax(), "line"])
            check_costliest_line(ex54, costliest)
            """),
        md("""
            Which line wins depends on the sizes, the machine and — when shares are close — noise; that is why
            it is measured (re-run with a larger `repeat` when two shares are close). In three runs on a loaded
            2-core CPU (torch 2.13, each kernel timed from its own nodes) the matmul line — O(n³) work in a tuned
            library GEMM, `extern_kernels.mm` — won twice (52 %, 45 % of the kernel time) and the softmax line
            (an `exp` per element, several passes over each row) once (38 %, the matmul 31 %); `relu() + 1`
            took 13–31 %.
            The shares come from timing each kernel call of the generated code after the capture (on a GPU, from
            the profiler); a loaded capture keeps them. (The inputs are not square on purpose: with every tensor
            of one shape, tcompile's kernel-to-line matching, which uses shapes, spreads each kernel over all the
            lines — a limitation of the matching today.)

            ### Exercise 5.5 — epilogue fusion, and where it cannot act

            `epilogue_fusion` (on by default) fuses the pointwise ops after a matmul into the matmul's kernel.
            Does it, here? `%%tcompile --compare` compiles a cell
            once per configuration (here: no options, the baseline, and `epilogue_fusion` off) and `cmp.diff(a,
            b)` (or the compare view's diff) says stage by stage what changed:
            """),
        code("""
            a, b, bias = torch.randn(64, 64), torch.randn(64, 64), torch.randn(64)
            """),
        code("""
            %%tcompile --compare 'options={"epilogue_fusion": false}' --no-timing --name epi
            y = torch.relu(a @ b + bias) * 0.5
            """),
        md("""
            1. On this CPU, did turning `epilogue_fusion` off change the generated kernels or the IR?
               (`epi.diff(0, 1).changed_stages`; the Generated code stage of the compare view.)
            2. The shipped H100 capture `tuned` (section 4) compiled the same line under
               `max-autotune-no-cudagraphs`. Which of its kernels computes the matmul *and* the ops after it?
            """),
        exercise("""
            kernels_changed_on_cpu = ...         # True or False
            gpu_matmul_kernel = ...              # a kernel name from tuned
            check_epilogue_answer(kernels_changed_on_cpu, gpu_matmul_kernel, epi, tuned)
            """),
        solution_note(),
        solution("""
            print(epi.diff(0, 1).changed_stages)   # [] (timings aside): nothing changed
            print([(k.name, k.language) for k in epi.capture(0).compiles[0].kernels.kernels])
            # On CPU the matmul is a library call (extern_kernels.addmm, which takes the bias add too): no
            # template, so there is nothing to fuse an epilogue into, and the option changes nothing.
            kernels_changed_on_cpu = False
            print([(k.name, sorted(k.ops_from_name)) for k in tuned.compiles[0].kernels.kernels])
            # On the H100, max-autotune chose a Triton matmul template, and add, relu and mul were fused into it
            gpu_matmul_kernel = "triton_tem_fused_add_mm_mul_relu_0"
            check_epilogue_answer(kernels_changed_on_cpu, gpu_matmul_kernel, epi, tuned)
            """),
        md("""
            An option acts only where its precondition holds: `epilogue_fusion` needs a *template* kernel — a
            matmul Inductor generates itself (GPU `max_autotune`; on CPU the C++ GEMM template, which needs
            `max_autotune` with `CPP` among `max_autotune_gemm_backends`, `cpp.weight_prepack`, sizes `n` and `k` that
            are not symbols, and a weight that is a constant of the graph — what `freezing` makes of a module's
            parameters: `use_cpp_gemm_template`, `torch/_inductor/utils.py`), not a library call. The diff says
            so by showing no change — check before crediting an option with a speed-up.

            **Next:** Lab 6 — CUDA graphs, the other way to remove overhead.
            """),
    ]

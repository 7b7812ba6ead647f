"""Lab 0 — a tour: one %%tcompile cell, every view in two lines."""
from . import code, exercise, goals, md, setup, solution, solution_note

FILE = "00_tour.ipynb"


def cells():
    return [
        goals("Lab 0 — A tour of tcompile", """
            - compile a notebook cell with `%%tcompile` and find every stage of `torch.compile` in the explorer;
            - say which tab answers which question, and which lab goes deeper;
            - get the same data from Python with `compiler.explore`, a `Capture`, and `explorer.show`.
            """, "Runs on CPU in about a minute; the first Inductor compile in a fresh kernel takes 15–30 s "
                 "because it builds C++."),
        setup("""
            x = torch.randn(64, 32)
            w = torch.randn(32, 16)
            """),
        md("""
            ## One cell, every stage

            `%%tcompile` turns the cell body into a function — the names it reads from the notebook (`x`, `w`)
            become its parameters — compiles it with `torch.compile` (default backend: Inductor), calls it once
            while recording everything torch logs, writes the names the cell assigns (`scores`, `y`) back into
            the notebook, then times the cell eager vs compiled.

            `%%tcompile` compiles with Inductor's caches off, so every Inductor stage is produced (a cache hit
            would skip lowering and fusion; `--cached` lets the caches work); `--name tour` keeps the `Capture`
            in the variable `tour`. `%tcompile?` lists every option.
            """),
        code("""
            %%tcompile --name tour
            scores = x @ w
            y = torch.softmax(scores, dim=-1) * 2 + torch.sin(scores)
            """),
        md("""
            ## The tabs, two lines each

            | tab | what it shows |
            |---|---|
            | **Overview** | Findings first (graph breaks, recompiles, failures, speed-up), then counts and one row per compile. Start here: it says where to look next. |
            | **Source** | The Python that Dynamo compiled, as it saw it: the cell wrapped in `def tcompile_cell(x, w):`. Line numbers are the notebook's (the `%%tcompile` line is line 1). |
            | **Bytecode** | The function's CPython bytecode next to the bytecode Dynamo wrote, which loads the inputs, calls the compiled graph (`__compiled_fn_…`) and returns its outputs. → Lab 1 |
            | **FX graph** | The tensor operations Dynamo recorded, as a `torch.fx` graph: each node with its dtype and shape, and the source line it came from. → Lab 1 |
            | **Guards** | The checks that must pass before this compiled code is reused (tensor dtype, shape and strides, Python values, global state), and a what-if panel: would other arguments recompile? → Lab 3 |
            | **Graph breaks** | Where Dynamo had to end the graph and fall back to Python, with torch's reason, its GB code and hints. Empty here. → Lab 2 |
            | **Recompiles** | Every extra compile of the same code and the guard that failed. Empty here. → Lab 3 |
            | **AOT graphs** | AOTAutograd's graphs of ATen operators: one *inference* graph here (nothing requires grad); a joint, forward and backward graph when training. → Lab 4 |
            | **Inductor** | The post-grad graph and Inductor's scheduler IR before and after fusion, with the nodes that were fused highlighted. → Lab 5 |
            | **Generated code** | The C++ (CPU) or Triton (GPU) kernels Inductor wrote, and library calls such as `extern_kernels.mm`, each linked to the operations it computes. → Lab 5 |
            | **CUDA graphs** | Warm-up, recording and replay of CUDA graphs under `mode="reduce-overhead"`, or why CUDA graphs were skipped. On this CPU capture it says why it is empty. → Lab 6 |
            | **Timings** | Where the compile time went (Dynamo tracing, AOTAutograd, lowering, C++ compile…) and the eager vs compiled runtime — for tensors this small, compiled is often not faster, and a busy machine makes the numbers noisy. → Lab 7 |

            A capture with several compiles (graph breaks, recompiles) gets a **Compile** selector above the tabs.
            """),
        md("""
            ## The same data from Python

            The explorer draws a `compiler.Capture`: plain data, one `Compile` per frame compile, each stage
            an object with `.as_text()` and (for tables) `.table`. Everything on screen is there.
            """),
        code("""
            print(tour)                              # the one-line summary
            first = tour.compiles[0]
            print(first.compile_id, first.name)      # "frame/compile": 0/0 is the first compile of frame 0
            print(first.graph.as_text())             # the FX graph, as torch printed it
            """),
        code("""
            first.guards.table[["source", "kind", "condition"]].head(8)
            """),
        md("""
            For a function rather than a cell, `compiler.explore(fn, *args, **torch_compile_kwargs)` compiles,
            calls and times it, and `explorer.show(cap, fn=fn)` draws the explorer (with `fn`, the what-if
            panel in Guards can check new arguments). `backend="eager"` runs only Dynamo: the graph is executed
            op by op by eager PyTorch, so it compiles in milliseconds — and the AOT, Inductor and
            Generated-code tabs say why they are empty. The labs use it wherever Inductor is not the point.
            """),
        code("""
            def attention_scores(x, w):
                scores = x @ w
                return torch.softmax(scores, dim=-1) * 2 + torch.sin(scores)

            cap = compiler.explore(attention_scores, x, w, backend="eager")
            explorer.show(cap, fn=attention_scores)
            """),
        md("""
            `%tcompile` (one `%`) does the same for a single call written in a line:
            `%tcompile --backend eager attention_scores(x, w)`.

            ## Exercise 0.1 — read the Overview

            How many kernels did Inductor generate for the tour cell? Read the *kernels* card on the Overview
            tab of the first explorer (or count the kernels in Generated code; calls to library kernels such as
            `extern_kernels.mm` do not count), and replace `...`.
            """),
        exercise("""
            answer = ...
            check_kernels_answer(answer, tour)
            """),
        solution_note(),
        solution("""
            # The Generated code tab lists one C++ kernel (cpp_fused_…) and one extern call (extern_kernels.mm).
            answer = len([k for k in tour.compiles[0].kernels.kernels if k.language != "extern"])
            check_kernels_answer(answer, tour)
            """),
        md("""
            ## Exercise 0.2 — from a node back to your code

            Every node of the FX graph remembers the line of your code it came from: the FX graph tab shows
            it next to the node, and the Source tab links each line to its nodes. Which line of the tour cell
            produced the `softmax` node? Give the line number as the explorer shows it (in a `%%tcompile`
            cell, the `%%tcompile` line itself is line 1).
            """),
        exercise("""
            softmax_line = ...
            check_line_answer(softmax_line, tour, "softmax")
            """),
        solution_note(),
        solution("""
            # The FX graph tab: softmax = torch.softmax(scores, dim=-1) comes from line 3
            # (line 1 is %%tcompile --name tour, line 2 is scores = x @ w). The same from Python:
            print([(n.target, n.line) for n in tour.compiles[0].graph.nodes if n.line])
            softmax_line = 3
            check_line_answer(softmax_line, tour, "softmax")
            """),
        md("""
            **Next:** Lab 1 opens the Bytecode and FX graph tabs: how Dynamo takes over a Python call and what
            it records.
            """),
    ]

"""Lab 9 — a real model debugged end to end: a GPT-2 inference server under torch.compile."""
from . import code, exercise, goals, md, reveal, setup, solution, solution_note

FILE = "09_real_model.ipynb"

APP = '''
%%writefile {APP}
"""A small inference server: a GPT-2 (transformers, built from its config: no download) behind serve(batch)."""
import torch
import transformers


def build_model():
    torch.manual_seed(0)
    config = transformers.GPT2Config(n_layer=2, n_embd=64, n_head=4, vocab_size=128, n_positions=64,
                                     use_cache=False, attn_implementation="eager", eos_token_id=0, bos_token_id=0)
    return transformers.GPT2LMHeadModel(config).eval()


model = build_model()


def serve(batch):
    print(f"serving {batch.shape[0]} requests")
    with torch.no_grad():
        logits = model(batch).logits[:, -1]          # the next token's scores, one row per request
    next_tokens = logits.argmax(-1)
    confidence = logits.softmax(-1).amax(-1).min().item()
    print(f"lowest confidence {confidence}")
    return next_tokens


def predict(batch):                                  # the model part of serve, nothing else
    with torch.no_grad():
        return model(batch).logits[:, -1].argmax(-1)


def batch_of(n, seed=0):
    """n requests of 12 tokens each."""
    return torch.randint(0, 128, (n, 12), generator=torch.Generator().manual_seed(seed + n))


SIZES = (2, 4, 8)                                    # the batch sizes the server sees, in this order
MARKED_SIZES = (4, 8, 1, 16, 1)                      # Exercise 9.3's calls

if __name__ == "__main__":                           # python serve_app.py: the same calls, outside the notebook
    compiled = torch.compile(serve, backend="eager")
    for n in SIZES:
        compiled(batch_of(n))
'''


def cells():
    return [
        goals("Lab 9 — A real model, debugged end to end", """
            - capture a real model behind a realistic `serve(batch)` (logging, a scalar read with `.item()`,
              changing batch sizes) and count what is wrong: graph breaks, recompiles, frames skipped;
            - read the same run three more ways — `TORCH_LOGS`, a `TORCH_TRACE` log through tlparse, and tcompile on
              that log — and say why their counts differ;
            - read the fixes tcompile proposes and the verdict of one tried;
            - rewrite `serve` so it compiles as one graph for every batch size and still logs;
            - predict the recompiles left once the batch dimension is marked dynamic;
            - bisect backends (eager → aot_eager → inductor) to find where a training-mode output diverges.
            """, "A transformers GPT-2 with 2 layers built from its config (no weights downloaded), on CPU; "
                 "backend=\"eager\" except for the bisection. About three minutes."),
        setup("""
            import json
            import os
            import re
            import subprocess
            import sys
            import tempfile
            from pathlib import Path

            import pandas as pd
            from compiler.analyses.fix_experiments import capture_calls

            WORK = Path(tempfile.mkdtemp(prefix="tcompile_lab09_"))   # the server's file, its trace, tlparse's report
            APP = WORK / "serve_app.py"
            """),
        md("""
            ## 1. The server

            The cell below writes the server's code to a file (so that §2 can run it in a process of its own) and
            the next one imports it. `serve` is written the way a server often is: it logs the batch size, runs the
            model without gradients, takes each request's next token, reads the lowest confidence of the batch
            into a Python float with `.item()` and logs it. Requests come in batches of 2, then 4, then 8.
            """),
        code(APP),
        code("""
            sys.path.insert(0, str(WORK))
            import serve_app
            from serve_app import batch_of, model, predict, serve

            serve_original = serve
            calls = [(batch_of(n),) for n in serve_app.SIZES]
            print(model.config.n_layer, "layers,", sum(p.numel() for p in model.parameters()), "parameters")

            # §2 reads the same server run as a script, with torch's logs on; started now, it runs while §1 does
            trace_dir = WORK / "trace"
            env = {**os.environ, "TORCH_LOGS": "graph_breaks,recompiles", "TORCH_TRACE": str(trace_dir)}
            script = subprocess.Popen([sys.executable, str(APP)], env=env, stdout=open(WORK / "stdout.txt", "w"),
                                      stderr=open(WORK / "stderr.txt", "w"))   # files: a pipe could fill and block it
            """),
        md("""
            `capture_calls` compiles `serve` once and makes the three calls under capture, as the server would.
            `backend="eager"`: graph breaks and recompiles are Dynamo's decisions, made before any backend runs, so
            the cheapest backend shows them all.
            """),
        code("""
            first = capture_calls(serve, calls, backend="eager")
            explorer.show(first, fn=serve)
            """),
        md("""
            ### Exercise 9.1 — count what is wrong

            From the explorer above (Overview, Graph breaks, Recompiles) or from `first` in Python: how many
            **graph breaks** did torch count over the three calls, and how many **recompiles**? A graph break is
            counted each time Dynamo stops tracing a frame (torch's `counters["graph_break"]`, incremented by
            `Unsupported.add_to_stats`), so a frame compiled again breaks again; a recompile is any compile whose
            id `frame/n` has `n > 0`, in any frame — the resume functions after a break included. (When the lab is
            graded, `serve` is compiled afresh and torch counts again.)
            """),
        exercise("""
            breaks = ...
            recompiles = ...
            check_problem_counts_answer(breaks, recompiles, first)
            """),
        solution_note(),
        solution("""
            # the Overview's cards (cap.summary) and the Recompiles tab: each break site × the compiles of its frame
            breaks, recompiles = first.summary.graph_breaks, len(first.recompiles)
            print(first.summary.graph_breaks, "breaks;", [(r.compile_id, r.failed_guard) for r in first.recompiles])
            check_problem_counts_answer(breaks, recompiles, first)
            """),
        md("""
            Besides breaks and recompiles, torch 2.13 gives up one frame here: `first.skipped_frames` names it, with
            torch's reason — the f-string of `confidence`, a float that became a symbol at the second batch size
            (automatic dynamic), which Dynamo's `BUILD_STRING` (`torch/_dynamo/symbolic_convert.py`) cannot build. A
            frame that Dynamo cannot handle after a graph break is run eagerly on every call from then on — the most
            expensive finding, which is why tcompile lists it apart. (torch 2.14 builds that string, and counts
            differently: the checkers count on the torch you run. There, a format spec such as `{confidence:.3f}`
            fails inside Dynamo instead — `LazySymNodeFormatString` in `torch/_dynamo/variables/lazy.py` formats
            the symbol's text, not its number — and the call raises `InternalTorchDynamoError`; this lab's `serve`
            uses no spec.)
            """),
        code("""
            pd.DataFrame([{"line": b.line, "code": b.code, "GB": b.gb_code, "count": b.count, "what": b.headline}
                          for b in first.breaks])
            """),
        code("""
            print(first.skipped_frames)
            """),
        md("""
            ## 2. The same run, three more ways: `TORCH_LOGS`, tlparse, tcompile on the trace

            Without tcompile one would run the server with `TORCH_LOGS=graph_breaks,recompiles` (log lines on
            stderr) and `TORCH_TRACE=dir` (torch's structured log, read by `tlparse`, the CLI on PyPI that
            writes an HTML report of it). The server ran as a script in a process of its own with both (started in
            §1, as `python serve_app.py`: the same three calls); its log is read by tlparse and by tcompile
            (`compiler.load_trace`).
            """),
        code("""
            script.wait(timeout=300)                             # the script started in §1
            stdout, stderr = (WORK / "stdout.txt").read_text(), (WORK / "stderr.txt").read_text()
            assert script.returncode == 0, stderr[-2000:]
            logged_breaks = re.findall(r"Graph break in user code at (\\S+)", stderr)
            logged_recompiles = re.findall(r"Recompiling function (\\S+)", stderr)
            print(stdout)
            print("\\n".join(line[:160] for line in stderr.splitlines() if "Graph break in user code" in line
                            or "Recompiling function" in line))
            """),
        code("""
            import shutil

            log = next(trace_dir.glob("*.log"))
            tlparse = shutil.which("tlparse") or str(Path(sys.executable).parent / "tlparse")
            report = WORK / "tl_out"
            done = subprocess.run([tlparse, str(log), "-o", str(report), "--overwrite", "--no-browser"],
                                  capture_output=True, text=True)
            print(done.stdout[-300:], done.stderr[-300:])
            directory = json.loads((report / "compile_directory.json").read_text())
            tl_compiles = [k for k in directory if re.fullmatch(r"\\[\\d+/\\d+\\]", k)]   # "[0/1]"; "[0/1_1]" is a restart
            tl_breaks = sum(a["name"].startswith("dynamo_graph_break_reason") for v in directory.values()
                            for a in v["artifacts"])
            print("tlparse's report:", report / "index.html")
            """),
        code("""
            traced = compiler.load_trace(log)
            views = {
                "TORCH_LOGS (stderr lines)": (len(logged_breaks), len(logged_recompiles), None, None),
                "tlparse (compile_directory.json)": (tl_breaks, sum(not k.endswith("/0]") for k in tl_compiles),
                                                     len(tl_compiles), None),
                "tcompile, the trace": (traced.summary.graph_breaks, len(traced.recompiles), len(traced.compiles),
                                        len(traced.skipped_frames)),
                "tcompile, live (§1)": (first.summary.graph_breaks, len(first.recompiles), len(first.compiles),
                                        len(first.skipped_frames)),
            }
            pd.DataFrame(views, index=["graph breaks", "recompiles", "compiles", "frames skipped"]).T
            """),
        md("""
            tcompile counts the same from the trace as live. The others count other things, each for a reason in
            torch's source:

            - **`TORCH_LOGS=graph_breaks`** prints a break only the first time its kind and place are seen:
              `InstructionTranslatorBase.log_graph_break` (`torch/_dynamo/symbolic_convert.py`) asks
              `graph_break_dup_warning_checker` (`torch/_dynamo/utils.py`) first, so a frame that recompiles and
              breaks again at the same line is not logged again. It names places, not occurrences.
            - **tlparse** lists every `dynamo_graph_break_reason` artifact — `log_graph_break` writes one to the
              trace on every tracing attempt that breaks, with no deduplication — including the attempt that made
              torch give up a frame (a skipped frame is not a graph break in `counters["graph_break"]`). Its compile
              directory lists each compile id, plus an entry per restart (`[0/0_1]`: Dynamo traced the frame a
              second time after the break, to compile the part before it).
            - **tcompile** counts as torch's counters do, says which frame was skipped and why, and keeps the
              recompile reasons (the failing guard of each earlier compile) with each recompile.
            """),
        md("""
            ## 3. The fixes tcompile proposes, and a verdict

            `first.fixes()` turns each finding into a change to try, ranked by what its findings cost. Trying a fix
            re-runs the captured calls with the change in a fresh Dynamo state. Trying them all re-runs the model
            once per fix (minutes here); we try one cheap fix: `mark_dynamic` on the batch dimension, which the
            recompiles ask for.
            """),
        code("""
            fixes = first.fixes()
            pd.DataFrame([{"fix": f.id, "kind": f.kind, "title": f.title[:90], "applied by": "experiment"
                           if f.applicable else "you (a code change)"} for f in fixes])
            """),
        code("""
            fix = next(f for f in fixes if f.kind == "mark_dynamic")
            result = fix.try_()
            print(fix.as_text().splitlines()[0])
            print("status:", result.status)
            print("error:", (result.error or "none")[:300])
            """),
        md("""
            The verdict is torch's: `mark_dynamic` promises that the size stays a symbol, and the f-string of
            `batch.shape[0]` in the first `print` needs its value — Dynamo specializes it, and
            `ShapeEnv.produce_guards_verbose` (`torch/fx/experimental/symbolic_shapes.py`) raises
            `ConstraintViolationError` for a dimension marked dynamic that was specialized. The recompiles cannot be
            fixed before the code that reads the size as a Python value is. That is the next exercise.

            ### Exercise 9.2 — one graph for every batch size, and the logs kept

            Rewrite `serve` so that, over the same three calls, it compiles with **zero graph breaks**, **still
            prints** both of its log lines, and returns what `serve_original` returns (the checker also draws a
            batch of another size). The logs may change form, not disappear. Lab 2 §3 has the tool for logging;
            mind what it accepts — `DebuggingVariable.can_reorder_logs` (`torch/_dynamo/variables/misc.py`) takes
            tensors, constants and string formatters as arguments, and after the first recompile a batch size is
            none of these: it is a symbol.
            """),
        exercise("""
            def serve(batch):
                print(f"serving {batch.shape[0]} requests")
                with torch.no_grad():
                    logits = model(batch).logits[:, -1]
                next_tokens = logits.argmax(-1)
                confidence = logits.softmax(-1).amax(-1).min().item()
                print(f"lowest confidence {confidence}")
                return next_tokens

            ex92 = capture_calls(serve, calls, backend="eager")
            check_no_graph_breaks(ex92)
            check_still_prints(ex92, "serving")
            check_still_prints(ex92, "lowest confidence")
            check_matches_eager(ex92, serve_original, batch_of(3, seed=7))
            """),
        solution_note(),
        solution("""
            def serve(batch):
                # print may be reordered after the graph when its arguments are tensors or constants: the batch size
                # as a 0-d tensor (a symbol from the second size on, which print could not take), the confidence
                # kept a tensor (no .item(), no f-string that would need its value while tracing)
                print("serving requests:", torch.tensor(batch.shape[0]))
                with torch.no_grad():
                    logits = model(batch).logits[:, -1]
                next_tokens = logits.argmax(-1)
                confidence = logits.softmax(-1).amax(-1).min()
                print("lowest confidence:", confidence)
                return next_tokens

            with torch._dynamo.config.patch(reorderable_logging_functions={print}):
                ex92 = capture_calls(serve, calls, backend="eager")
            print(ex92)
            check_no_graph_breaks(ex92)
            check_still_prints(ex92, "serving")
            check_still_prints(ex92, "lowest confidence")
            check_matches_eager(ex92, serve_original, batch_of(3, seed=7))
            """),
        md("""
            ## 4. Batch sizes: `mark_dynamic`

            With the graph breaks gone, the recompiles that remain come from the batch size: the first compile
            takes it as a constant, the second size recompiles with a symbol (automatic dynamic). A server can mark
            the batch dimension dynamic from the first call with `torch._dynamo.mark_dynamic(batch, 0)`.

            ### Exercise 9.3 — predict, then run

            `predict` is the model part of `serve` (no logging). The calls below mark dimension 0 of every batch
            dynamic and come with batches of 4, 8, 1, 16 and 1 rows (`serve_app.MARKED_SIZES`). **Before running
            anything**, predict how many recompiles `torch.compile(predict)` makes over them. Think about which
            sizes torch never turns into a symbol (`ShapeEnv.specialize_zero_one`,
            `torch/fx/experimental/symbolic_shapes.py`). The cell after the exercise runs it.
            """),
        code("""
            marked_calls = []
            for n in serve_app.MARKED_SIZES:
                batch = batch_of(n)
                torch._dynamo.mark_dynamic(batch, 0)
                marked_calls.append((batch,))
            """),
        exercise("""
            predicted_recompiles = ...          # your prediction: a number
            check_recompiles_answer(predicted_recompiles, predict, marked_calls)
            """),
        solution_note(),
        solution("""
            # the first batch (4 rows) compiles with a symbol s0 >= 2; 8 and 16 fit it; a size of 1 fails that guard
            # (0 and 1 are specialized, never symbols) and compiles once more; the second batch of 1 reuses that
            predicted_recompiles = 1
            check_recompiles_answer(predicted_recompiles, predict, marked_calls)
            """),
        reveal("""
            ex93 = capture_calls(predict, marked_calls, backend="eager")
            print(ex93)
            for r in ex93.recompiles:
                print(r.compile_id, "—", r.failed_guard)
            ex93.compiles[0].shapes
            """),
        md("""
            ## 5. Training mode: which backend diverges?

            A model that runs in training mode draws random numbers (dropout: GPT-2's config has `resid_pdrop`,
            `embd_pdrop` and `attn_pdrop` of 0.1). Run from the same seed, eager PyTorch gives the same output every
            time. Does the compiled model? When a compiled model's output differs, the first question is *which
            layer of the stack* changes it: Dynamo alone (`backend="eager"`), Dynamo with AOTAutograd
            (`"aot_eager"`: ATen graphs, run by PyTorch's own kernels), or the whole stack (`"inductor"`, generated
            code). torch's own bisector (`torch._inductor.compiler_bisector`) walks a longer ladder, its `BACKENDS` in
            order: `eager`, `aot_eager`, `aot_eager_decomp_partition` (AOTAutograd with Inductor's decompositions and
            partitioner), `aot_eager_decomp_partition_crossref`, `inductor`; inside the first backend that differs it
            bisects that backend's subsystems in turn — for `inductor` first its pre-grad passes, then the joint-graph
            and post-grad passes, then settings such as `fallback_random`, then CUDA graphs and lowerings.

            ### Exercise 9.4 — bisect the backends

            With the model in training mode, run `forward_train(batch)` eagerly and compiled with each backend in
            turn, each from the same `torch.manual_seed`, under `torch.no_grad()`, and compare the outputs
            (`torch.allclose`). Set `first_differing` to the first backend whose output differs from eager.
            """),
        code("""
            batch = batch_of(4)

            def forward_train(batch):
                return model(batch).logits
            """),
        exercise("""
            model.train()
            first_differing = ...      # "eager", "aot_eager" or "inductor"
            check_first_divergent_backend_answer(first_differing, forward_train, batch)
            """),
        solution_note(),
        solution("""
            # AOTAutograd keeps aten.native_dropout, run by PyTorch's kernel with the global generator: the same
            # numbers. Inductor replaces random ops with its own generator (torch/_inductor/fx_passes/replace_random.py;
            # its lowering of aten.native_dropout falls back to ATen only with torch._inductor.config.fallback_random =
            # True — a setting torch's bisector tries in Inductor after bisecting its pre-grad, joint-graph and
            # post-grad passes).
            model.train()

            def run(fn, seed=0):
                torch.manual_seed(seed)
                with torch.no_grad():
                    return fn(batch)

            reference = run(forward_train)
            first_differing = None
            for backend in ("eager", "aot_eager", "inductor"):
                torch._dynamo.reset()
                out = run(torch.compile(forward_train, backend=backend))
                same = torch.allclose(out, reference)
                print(f"{backend:10} {'same as eager' if same else 'differs'} "
                      f"(largest difference {(out - reference).abs().max().item():.3g})")
                if not same:
                    first_differing = backend
                    break
            check_first_divergent_backend_answer(first_differing, forward_train, batch)
            """),
        code("""
            model.eval()      # back to serving
            torch._dynamo.reset()
            """),
        md("""
            ## Summary

            - A real `serve` gathers the usual problems in a few lines: `print` and `.item()` break the graph,
              changing batch sizes recompile every frame, an f-string of a symbolic value makes torch give up a
              frame.
            - `TORCH_LOGS`, tlparse and tcompile read the same run; their counts differ because they count different
              things (places, tracing attempts, occurrences) — know which one you read.
            - A proposed fix has a verdict only once tried; here the verdict says to fix the code that reads sizes
              first.
            - Bisecting backends names the layer of the stack that changes an output before anything else is read.
            """),
    ]

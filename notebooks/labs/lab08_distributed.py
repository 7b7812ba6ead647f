"""Lab 8 — debugging a distributed job's compile from its trace."""
from . import code, exercise, goals, md, setup, solution, solution_note

FILE = "08_distributed_trace.ipynb"


def cells():
    return [
        goals("Lab 8 — Debugging a distributed job's compile from its trace", """
            - run a small `torchrun` job with `TORCH_TRACE` set, and know what it writes (one log per rank);
            - load the logs with `compiler.load_trace(dir)` and read a `Job`: one capture per rank and the
              *divergences* between ranks, each with the ranks grouped by behaviour and an explanation;
            - find the rank that compiled differently, and why, from the divergences;
            - fix it in the training loop's code, and check that the ranks now compile alike;
            - capture inside the job with `compiler.capture(job_dir=...)` and write an offline HTML report;
            - predict how DDPOptimizer splits a compiled model at DDP's gradient buckets, and why it does;
            - put DDP's gradient all_reduces into the compiled backward graph with compiled autograd.
            """, "Runs 2-process jobs on this CPU (gloo backend, DDP + torch.compile with backend=\"aot_eager\") "
                 "six times; two to three minutes."),
        setup("""
            import inspect
            import itertools
            import os
            import random
            import shutil
            import subprocess
            import sys
            import tempfile
            from pathlib import Path

            import tcompile_labs

            JOB = tcompile_labs.job_script()             # shipped with tcompile: tcompile_labs/dist_job.py
            WORK = Path(tempfile.mkdtemp(prefix="lab08-"))
            PORTS = itertools.count(29000 + os.getpid() % 500 * 2)
            UNEVEN = random.randrange(2)                 # which rank gets the uneven batch: drawn per session
            DDP_JOB = tcompile_labs.ddp_job_script()     # sections 5-6: tcompile_labs/ddp_job.py
            BUCKET_CAP_MB = random.choice([1, 2, 3])     # DDP's bucket_cap_mb in section 5: drawn per session


            def torchrun(script, out, args, function=None, flag=None):
                \"\"\"torchrun --nproc_per_node 2 script ARGS, TORCH_TRACE logs in out/trace (out emptied first).
                ``function``: its source written to out/<flag>.py, passed to the job as --<flag> FILE.\"\"\"
                shutil.rmtree(out, ignore_errors=True)  # a re-run starts from empty directories
                out.mkdir(parents=True)
                if function is not None:                 # its source, into a file the job loads
                    (out / f"{flag}.py").write_text(inspect.getsource(function))
                    args = [*args, f"--{flag}", str(out / f"{flag}.py")]
                env = {**os.environ, "TORCH_TRACE": str(out / "trace"), "OMP_NUM_THREADS": "1"}
                command = [str(Path(sys.executable).parent / "torchrun"), "--nproc_per_node", "2",
                           "--master_port", str(next(PORTS)), str(script), *args]
                return subprocess.run(command, capture_output=True, text=True, env=env)


            def run_job(name, prepare=None):
                \"\"\"dist_job.py: TORCH_TRACE logs in WORK/name/trace, one tcompile capture per rank in
                WORK/name/captures. ``prepare``: a function run on every batch in the job.\"\"\"
                out = WORK / name
                result = torchrun(JOB, out, [str(out / "captures"), "--uneven", str(UNEVEN)], prepare, "prepare")
                if result.returncode != 0:
                    raise RuntimeError(result.stderr[-3000:])
                return out


            def run_ddp_job(name, bucket_cap_mb=25, configure=None):
                \"\"\"ddp_job.py: TORCH_TRACE logs in WORK/name/trace, each rank's result_rank_N.json and the job's
                output (job.log) in WORK/name. ``configure``: a function run on every rank before DDP is built. A failed
                job is reported by the checkers, with torch's error.\"\"\"
                out = WORK / name
                result = torchrun(DDP_JOB, out, [str(out), "--bucket-cap-mb", str(bucket_cap_mb)], configure, "configure")
                (out / "job.log").write_text(result.stdout + result.stderr)
                if result.returncode != 0:
                    print(f"the job failed (exit code {result.returncode}): {out / 'job.log'}")
                return out
            """),
        md("""
            ## 1. The job

            `tcompile_labs/dist_job.py` (shipped with tcompile) is a tiny data-parallel training loop: two processes (ranks) on this CPU, talking
            through the **gloo** backend, each running `torch.compile(DistributedDataParallel(model))` for three
            steps. The ranks train on batches of 32 rows — except one step of one rank, whose batch is uneven
            (think: the last batch of a data loader's shard; which rank is drawn when this lab starts). Read the
            loop:
            """),
        code("""
            print(JOB.read_text().split("def main", 1)[1].split("if __name__", 1)[0])
            """),
        md("""
            `torchrun --nproc_per_node 2` starts both ranks. With **`TORCH_TRACE=dir`** set, torch writes one
            structured log per process, named `dedicated_log_torch_trace_rank_N_XXXX.log`: every compile's
            graphs, guards, recompile reasons, graph breaks and timings — the file `tlparse` reads.
            """),
        code("""
            broken = run_job("broken")
            for path in sorted((broken / "trace").iterdir()):
                print(f"{path.name}: {path.stat().st_size / 1e3:.0f} kB")
            """),
        md("""
            ## 2. Load the job

            `compiler.load_trace(path)` reads a log file as a `Capture` — the same object, built by the same code,
            as a live `compiler.capture()` — and a directory of per-rank logs as a `Job`: `job.captures[rank]`,
            and `job.divergences`, what the ranks did differently. In this DDP job the gradient allreduces are
            not in the compiled graph: DDP's reducer runs them from autograd hooks, outside the graph, so every
            rank issues the same collectives whatever it compiled. A rank that recompiles arrives late to them:
            the other ranks wait in the allreduce (skew, the job runs at the pace of its slowest rank), and a long
            enough recompile trips the collective timeout. Different collectives per rank — and a hang — come
            from collectives *inside* compiled graphs (functional collectives, compiled autograd), where another
            graph can issue other ones. tcompile marks a rank-specific recompile `severity="error"` either way.
            """),
        code("""
            job = compiler.load_trace(broken / "trace")
            print(job.as_text())
            """),
        md("""
            Each divergence has a `kind`, the ranks grouped by what they did (`groups`, `behaviours`) and an
            `explanation`. The explorer shows the divergences first, then any rank's full explorer (pick the
            rank in the dropdown): a rank's Recompiles tab has torch's guard-failure text and the user line.
            """),
        code("""
            explorer.show_job(job)
            """),
        md("""
            ### Exercise 8.1 — which rank, and why?

            From `job.divergences`, find the rank that recompiled, and the frame compile it made
            (a compile id such as `"0/1"`: frame 0, its second compile).
            """),
        exercise("""
            odd_rank = ...
            odd_compile = ...
            check_recompiled_rank_answer(odd_rank, odd_compile, job)
            """),
        solution_note(),
        solution("""
            recompiles = next(d for d in job.divergences if d.kind == "recompiles")
            odd_rank = next(group[0] for group, did in zip(recompiles.groups, recompiles.behaviours)
                            if did != "no recompiles")
            odd_compile = job.captures[odd_rank].recompiles[0].compile_id
            print(job.captures[odd_rank].recompiles[0].reasons[0].text)
            check_recompiled_rank_answer(odd_rank, odd_compile, job)
            """),
        md("""
            ## 3. The same job, captured by tcompile

            The job script also wraps its loop in `compiler.capture(job_dir=...)`: under `torchrun` the capture
            records its rank and world size and saves `tcompile_capture_rank_N.json` into that directory, so the
            captures load as a job the same way — and find the same divergence.
            """),
        code("""
            captured = compiler.load_trace(broken / "captures")
            print(captured[1].environment["rank"], captured[1].environment["world_size"])
            print([d.kind for d in captured.divergences], "vs", [d.kind for d in job.divergences])
            """),
        md("""
            ### Exercise 8.2 — make every rank compile alike

            The job runs `prepare_batch(x)` on every batch before the compiled call and trains on what it
            returns (`run_job(name, prepare=prepare_batch)`). Write it so that every rank compiles once and no
            rank recompiles — with every batch trained on as it is (same rows, same values) — and check that no
            divergence that stalls ranks (severity `"error"`: skew at the allreduce, or a timeout) remains. A rank
            whose log is there but cannot be read counts as such a divergence too (`unread_ranks`): what it
            compiled is unknown, so the ranks that did load cannot vouch for it.
            """),
        exercise("""
            def prepare_batch(x):
                return x

            fixed = run_job("fixed", prepare=prepare_batch)
            fixed_job = compiler.load_trace(fixed / "trace")
            check_ranks_compile_alike(fixed_job)
            """),
        solution_note(),
        solution("""
            def prepare_batch(x):
                # the first compile specialized the batch size (32), so the uneven batch failed its guard
                # (Recompiles tab); a dynamic batch dimension from the first compile serves every size
                torch._dynamo.mark_dynamic(x, 0)
                return x

            fixed = run_job("fixed", prepare=prepare_batch)
            fixed_job = compiler.load_trace(fixed / "trace")
            print(fixed_job.as_text().splitlines()[0])
            check_ranks_compile_alike(fixed_job)
            """),
        md("""
            ## 4. A report without Jupyter

            On a cluster there is no notebook: `python -m compiler report DIR -o report.html` writes one
            standalone HTML file (no server, no JavaScript) with the rank comparison first and every rank's
            stages below. `cap.save_trace(path)` goes the other way: it writes a capture as a TORCH_TRACE log
            that `tlparse` reads.
            """),
        code("""
            result = subprocess.run([sys.executable, "-m", "compiler", "report", str(broken / "trace"),
                                     "-o", str(WORK / "report.html")], capture_output=True, text=True, cwd=WORK)
            print(result.stdout or result.stderr)
            """),
        md("""
            ## 5. DDP splits the compiled graph at its buckets

            DDP averages the gradients over the ranks with all_reduce, grouped into **buckets** of about
            `bucket_cap_mb` MiB of parameters. In eager mode its C++ reducer starts a bucket's all_reduce from an
            autograd hook as soon as the bucket's last gradient is ready, so the communication overlaps the rest of
            the backward. A compiled graph's backward is a single autograd node (AOTAutograd's
            `CompiledFunction`, an `autograd.Function` that `_AOTDispatchAutogradFunctionFactory` builds in
            `torch/_functorch/_aot_autograd/runtime_wrappers.py`): all its gradients become ready together when it ends, and there would be
            nothing left to overlap. So Dynamo splits the graph at DDP's bucket boundaries — **DDPOptimizer**
            (`torch/_dynamo/backends/distributed.py`, its docstring is *Note [DDPOptimizer]*). Each subgraph is
            compiled on its own, its backward is its own autograd node, and the all_reduce of its bucket can run
            while the backwards of the subgraphs before it (in forward order) still run.

            When: `torch._dynamo.config.optimize_ddp` is `True` (the default; `get_optimize_ddp_mode()` in
            `torch/_dynamo/utils.py` names it `"ddp_optimizer"`) and Dynamo compiles a frame while a DDP forward runs
            (`DistributedDataParallel._get_active_ddp_module()`): then `CatchErrorsWrapper.__call__`
            (`torch/_dynamo/convert_frame.py`) compiles the frame with `DDPOptimizer(bucket_bytes_cap=...).compile_fn`
            as the backend, which calls your backend once per subgraph. DDP's own `forward` breaks the graph (at its
            reducer's logger call in `DistributedDataParallel._pre_forward`, then at `_inside_ddp_forward`, which
            Dynamo skips — the flag it sets is what `_get_active_ddp_module()` reads); the model's `forward` run
            inside it is the frame that gets split.

            How `DDPOptimizer.compile_fn` draws the buckets: it walks the graph's nodes **from the output back**
            (the order in which gradients become ready), adding the bytes of each parameter a node uses
            (`param.untyped_storage().nbytes()`) to the current bucket. Before each node, a full bucket — its size
            ≥ `bucket_bytes_cap` (DDP's `bucket_cap_mb` × 2²⁰ bytes), or, for the first bucket, ≥
            `torch.distributed._DEFAULT_FIRST_BUCKET_BYTES` (1 MiB, whatever `bucket_cap_mb` is:
            `CatchErrorsWrapper.__call__` gives `DDPOptimizer` no `first_bucket_cap`) — is closed and a new one
            starts, but only if one of its nodes feeds a node outside it (`bucket_has_external_output`): otherwise
            the full bucket keeps growing until one does. At the end, a first bucket that holds no parameter is
            merged into the next. Each bucket becomes a subgraph (`torch.fx.passes.split_module.split_module`), and TORCH_TRACE
            records it: one `optimize_ddp_split_graph`, one `optimize_ddp_split_child` per subgraph. DDP's own
            reducer keeps that small first bucket, so that the first all_reduce starts early, only when
            `bucket_cap_mb` is left at its default (`_BucketCapacityConfig.create` in
            `torch/nn/parallel/distributed.py`), so with another cap the graph's first split need not match DDP's
            first bucket. (A `bucket_cap_mb` below 1 does not work: `DDPOptimizer.__init__` requires the first
            bucket to be no larger than the others.)

            The job, `tcompile_labs/ddp_job.py`: two ranks train this MLP with `torch.compile(train_step)`, then
            the same steps in eager DDP for comparison.
            """),
        code("""
            from tcompile_labs.ddp_job import MLP, train

            print(inspect.getsource(MLP))
            print(inspect.getsource(train))

            for name, p in MLP().named_parameters():
                print(f"{name}: {tuple(p.shape)}, {p.untyped_storage().nbytes():,} bytes")
            print(f"1 MiB = {2**20:,} bytes; this session's bucket_cap_mb: {BUCKET_CAP_MB}")
            """),
        md("""
            The job with this session's `bucket_cap_mb` (its logs are read after your prediction, below):
            """),
        code("""
            split = run_ddp_job("split", bucket_cap_mb=BUCKET_CAP_MB)
            print(sorted(p.name for p in split.iterdir()))
            """),
        md("""
            ### Exercise 8.3 — predict the split

            Into how many subgraphs does DDPOptimizer split the MLP's forward graph with this session's
            `bucket_cap_mb` (`BUCKET_CAP_MB`, printed above)? Work it out from the rule above and the parameter
            sizes; the checker counts the subgraphs torch logged in the job's traces.
            """),
        exercise("""
            predicted_subgraphs = ...
            check_ddp_subgraphs_answer(predicted_subgraphs, split)
            """),
        solution_note(),
        solution("""
            # from the output back: layers.3 (1 MiB + its 2 KiB bias) fills the first bucket (its cap: 1 MiB);
            # then each bucket takes layers until it holds bucket_cap_mb MiB or more; the last bucket takes the rest
            layer_bytes = 512 * 512 * 4 + 512 * 4
            cap, subgraphs, size = BUCKET_CAP_MB * 2**20, 1, 0
            for i in range(4):
                if size >= (2**20 if subgraphs == 1 else cap):
                    subgraphs, size = subgraphs + 1, 0
                size += layer_bytes
            predicted_subgraphs = subgraphs
            check_ddp_subgraphs_answer(predicted_subgraphs, split)
            """),
        md("""
            The split as torch logged it, loaded by tcompile (the records it keeps besides the compiles, in
            `cap.extra_records`): the split graph calls one `submod_N` per subgraph, in forward order.
            """),
        code("""
            split_job = compiler.load_trace(split / "trace")
            rank0 = split_job.captures[0]
            print([r.get("kind") for r in rank0.extra_records if str(r.get("kind")).startswith("optimize_ddp")])
            graph = next(r for r in rank0.extra_records if r.get("kind") == "optimize_ddp_split_graph")
            print(*[line.strip()[:110] for line in str(graph.get("payload")).splitlines() if "= self.submod_" in line],
                  sep="\\n")
            """),
        md("""
            ## 6. The all_reduces in the compiled backward

            With DDPOptimizer the all_reduces still run outside every graph: DDP's C++ reducer launches them from
            autograd hooks, and the graph splits are what lets them overlap. **Compiled autograd**
            (`torch._dynamo.compiled_autograd`, switched on in `torch._dynamo.config`) goes
            further: at `backward()` it traces what autograd's engine would run — AOTAutograd's backward graphs,
            the gradient accumulation, the hooks — into one FX graph (`AutogradCompilerInstance`, logged to
            TORCH_TRACE as `compiled_autograd_graph`), and Dynamo compiles that graph, its TORCH_TRACE records
            carrying a `compiled_autograd_id`. A hook Dynamo can trace becomes ops of that graph, where a backend
            can schedule the communication itself. (The job compiles `train_step` with its `loss.backward()`:
            the config is read when `torch.compile` is called, `OptimizeContext.__init__` in
            `torch/_dynamo/eval_frame.py`, and compiled autograd is on for the calls of that function.)

            ### Exercise 8.4 — all_reduce inside the compiled backward

            Write `configure()` — run on every rank before DDP is built — so that in every rank the gradient
            all_reduces are ops of the backward graph compiled autograd traced and Dynamo compiled, and training is
            unchanged (the compiled run's weights equal eager DDP's). `torch/_dynamo/config.py` documents the
            modes of `optimize_ddp`; read what `DistributedDataParallel.__init__` does with it. If the job fails,
            the checker shows torch's error: read it.
            """),
        exercise("""
            def configure():
                pass   # set torch._dynamo.config here

            traced = run_ddp_job("traced", configure=configure)
            check_collectives_in_backward(traced)
            """),
        solution_note(),
        solution("""
            def configure():
                # DDP's C++ reducer runs its all_reduces from hooks compiled autograd cannot trace: with it, compiled
                # autograd raises "Compiled autograd is not compatible with C++ DDP Reducer" (the reducer's check).
                # "python_reducer": DistributedDataParallel.__init__ registers a post-accumulate-grad hook per
                # parameter (_register_accum_grad_hook) that all_reduces with the functional collective
                # (torch.distributed._functional_collectives.all_reduce), which Dynamo traces; alone, without
                # compiled autograd, those hooks are compiled one by one, each a graph outside the backward.
                torch._dynamo.config.optimize_ddp = "python_reducer"
                torch._dynamo.config.compiled_autograd = True

            traced = run_ddp_job("traced", configure=configure)
            check_collectives_in_backward(traced)
            """),
        md("""
            What the checker read: each rank's backward as Dynamo compiled it from compiled autograd's graph
            (`job_records(traced)`: the records of each rank's log), one all_reduce per gradient.
            """),
        code("""
            backward = [r for r in job_records(traced)[0] if "compiled_autograd_id" in r.metadata
                        and r.kind == "aot_inference_graph"]
            for r in backward:
                print(r.compile_id, *[line.strip()[:110] for line in r.payload.splitlines() if "all_reduce" in line], sep="\\n")
            """),
        md("""
            **FSDP2 on this CPU, as seen.** The same MLP sharded with `fully_shard` (FSDP2: each layer, then the
            model) instead of DDP, compiled the same way on gloo with torch 2.13: Dynamo breaks the graph at the
            FSDP module calls with GB0007 (*Attempted to call function marked as skipped*), because FSDP2's module
            hooks `FSDPState._pre_forward` and `_post_forward` (`torch/distributed/fsdp/_fully_shard/_fsdp_state.py`)
            are wrapped in `_dynamo_disable` (`_fsdp_common.py`: `torch._dynamo.disable(func, recursive=True,
            reason="skipping FSDP hooks")`). So each layer compiles on its own, between hooks that run eagerly; this
            lab has no exercise on it.
            """),
    ]

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
            - capture inside the job with `compiler.capture(job_dir=...)` and write an offline HTML report.
            """, "Runs a 2-process job on this CPU (gloo backend, DDP + torch.compile with backend=\"aot_eager\") "
                 "three times; about a minute."),
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


            def run_job(name, prepare=None):
                \"\"\"torchrun --nproc_per_node 2 dist_job.py: TORCH_TRACE logs in WORK/name/trace, one tcompile
                capture per rank in WORK/name/captures. ``prepare``: a function run on every batch in the job.\"\"\"
                out = WORK / name
                shutil.rmtree(out, ignore_errors=True)  # a re-run starts from empty directories
                out.mkdir(parents=True)
                flags = ["--uneven", str(UNEVEN)]
                if prepare is not None:                  # its source, into a file the job loads
                    (out / "prepare.py").write_text(inspect.getsource(prepare))
                    flags += ["--prepare", str(out / "prepare.py")]
                env = {**os.environ, "TORCH_TRACE": str(out / "trace"), "OMP_NUM_THREADS": "1"}
                torchrun = Path(sys.executable).parent / "torchrun"
                result = subprocess.run([str(torchrun), "--nproc_per_node", "2", "--master_port", str(next(PORTS)), str(JOB),
                                         str(out / "captures"), *flags], capture_output=True, text=True, env=env)
                if result.returncode != 0:
                    raise RuntimeError(result.stderr[-3000:])
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
    ]

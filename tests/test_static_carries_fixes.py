"""The static copy and the report carry what Overview points to (issue 35, item 5): the Fixes section with
what trying them measured, and a job's divergences — within their budgets (static copy <= 1 MB, report
<= 10 MB), for captures too big to fit whole.

The capture is real: a function with graph breaks compiled with backend="eager", its fixes tried
(``cap.try_fixes()``); the big one is that capture's JSON with its compiles repeated (tests/sized_captures.py).
"""
from __future__ import annotations

import html

import pytest
import torch

import compiler
from explorer.job_view import REPORT_BYTES, render_job, report_page
from explorer.page import FALLBACK_BYTES, render_static

from sized_captures import replicated_data



def f(x):
    y = x.nonzero()
    print("f ran")
    if x.sum() > 0:
        y = y + 1
    return y.float().sum()


@pytest.fixture(scope="module")
def tried():
    torch._dynamo.reset()
    cap = compiler.explore(f, torch.randn(16), backend="eager", timing=False, errors="return")
    cap.try_fixes()
    assert any(fix.result is not None for fix in cap.fixes())
    return cap


def repeated(cap, compiles: int):
    return compiler.Capture.from_data(replicated_data(cap.to_data(), compiles))


@pytest.fixture(scope="module")
def big(tried):
    return repeated(tried, 300)


def fixes_section(page: str) -> str:
    """The Fixes section of a static page, whole (not a stub naming its size)."""
    start = page.find("<summary>Fixes (")
    assert start >= 0, "no Fixes section"
    end = page.find("</details>", start)
    section = page[start:end]
    assert "left out of this saved copy" not in section
    return section


def assert_carries_results(section: str, cap) -> None:
    """Every tried fix's result is in ``section`` as the Fixes tab shows it: its status and what its outputs
    compared to (whatever the experiment measured on this machine: the check is that it is carried)."""
    results = [fix.result for fix in cap.fixes() if fix.result is not None]
    assert results
    for result in results:
        shown = [html.escape(result.status, quote=True)]
        if result.output_note:
            shown.append(html.escape(result.output_note, quote=True))
        missing = [text for text in shown if text not in section]
        assert not missing, (missing, result)


def test_the_static_copy_of_a_big_capture_keeps_fixes_with_their_results(big):
    page = render_static(big, fallback=True)
    assert len(page.encode()) <= FALLBACK_BYTES
    assert len(render_static(big).encode()) > FALLBACK_BYTES  # it does not fit whole: something was left out
    assert_carries_results(fixes_section(page), big)
    overview = page.split("<summary>Fixes (")[0]
    assert all(html.escape(line.partition(": ")[2], quote=True) in overview for line in big.fixes().verdicts())


def test_the_report_keeps_fixes_with_their_results(big):
    page = report_page(big)
    assert len(page.encode()) <= REPORT_BYTES
    assert_carries_results(fixes_section(page), big)


def test_a_jobs_static_copy_and_report_keep_divergences_and_fixes(tried, big, tmp_path):
    """Rank 1 compiled 300 times where rank 0 compiled its 3: the job diverges; both pages say so first."""
    job_dir = tmp_path / "job"
    job_dir.mkdir()
    tried.save(job_dir / "tcompile_capture_rank_0.json")
    big.save(job_dir / "tcompile_capture_rank_1.json")
    job = compiler.load_job(job_dir)
    assert job.divergences
    for page, budget in ((render_job(job, fallback=True), FALLBACK_BYTES), (report_page(job), REPORT_BYTES)):
        assert len(page.encode()) <= budget
        overview = page.split("Every rank")[0]
        assert all(d.kind.replace("_", " ") in overview for d in job.divergences)
        assert_carries_results(fixes_section(page), big)

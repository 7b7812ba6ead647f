"""Screenshots of what a saved notebook and the offline report keep of a capture's Fixes (issue 35, item 5):
a notebook whose cell is ``%tcompile --load CAPTURE``, run under nbclient and saved, reopened in JupyterLab with
no kernel (the static copy: its first screen, then its Fixes section opened), light and dark; and
``python -m compiler report CAPTURE`` in headless Chromium (first screen, Fixes opened).

    .venv/bin/python scripts/screenshot_fixes.py OUT_DIR [CAPTURE.json[.gz]] [--report]

``--report``: the offline report's screenshots only (its Overview's first screen, then its Fixes section opened),
no JupyterLab — e.g. for the Mask R-CNN capture ``scripts/gpu_try_fixes_maskrcnn.py`` saves.

Without CAPTURE: the function tests/test_static_carries_fixes.py checks (graph breaks), compiled with
backend="eager", its fixes tried (``cap.try_fixes()``).
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from jupyterlab_harness import open_browser, screenshot, set_theme, write_notebook  # noqa: E402
from test_reopen_in_jupyterlab import NoKernelServer, sign  # noqa: E402
from test_static_carries_fixes import f as breaks  # noqa: E402 — the capture that test checks is carried

OPEN_FIXES = """scope => { for (const d of document.querySelectorAll(scope + ' details')) {
  const s = d.querySelector('summary');
  if (s && s.textContent.startsWith('Fixes')) { d.open = true; d.scrollIntoView({block: 'start'}); return true; } }
  return false; }"""


def tried_capture(path: Path) -> Path:
    import torch

    import compiler

    cap = compiler.explore(breaks, torch.randn(16), backend="eager", timing=False, errors="return")
    cap.try_fixes()
    return Path(cap.save(path))


def reopened(capture: Path, out: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    root = out / "notebook"
    root.mkdir(parents=True, exist_ok=True)
    path = write_notebook(root / "reopened.ipynb", ["%load_ext explorer", f"%tcompile --load {capture}"])
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3", store_widget_state=False,
                   resources={"metadata": {"path": str(root)}}).execute()
    nbformat.write(notebook, path)
    with NoKernelServer(root, out / "server") as server:
        sign(server, path)
        with open_browser() as page:
            page.goto(server.lab_url(f"tree/{path.name}", reset=True))
            page.locator(".jp-Dialog", has_text="Select Kernel").wait_for()
            page.locator(".jp-Dialog .jp-mod-accept").click()  # "No Kernel"
            fallback = page.locator(".jp-NotebookPanel .tc-fallback").first
            fallback.wait_for(state="visible")
            for theme in ("light", "dark"):
                set_theme(page, theme)
                fallback.evaluate("n => n.closest('.jp-Cell').scrollIntoView({block: 'start'})")
                screenshot(page, out / f"reopened_{theme}.png")
                assert page.evaluate(OPEN_FIXES, ".tc-fallback"), "no Fixes section in the static copy"
                page.wait_for_timeout(300)
                screenshot(page, out / f"reopened_fixes_{theme}.png")


def report(capture: Path, out: Path) -> None:
    html = out / "report.html"
    subprocess.run([sys.executable, "-m", "compiler", "report", str(capture), "-o", str(html)], check=True, cwd=REPO)
    with open_browser() as page:
        page.goto(html.as_uri(), timeout=120_000)
        screenshot(page, out / "report.png")
        assert page.evaluate(OPEN_FIXES, "body"), "no Fixes section in the report"
        page.wait_for_timeout(300)
        screenshot(page, out / "report_fixes.png")


def main(argv: list[str]) -> int:
    only_report = "--report" in argv
    argv = [a for a in argv if a != "--report"]
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    capture = Path(argv[1]).resolve() if len(argv) > 1 else tried_capture(out / "tried.json")
    if not only_report:
        reopened(capture, out)
    report(capture, out)
    print(f"screenshots in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

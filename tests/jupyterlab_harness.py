"""Browser-test harness: a throwaway JupyterLab server driven by headless Debian Chromium.

Load it from tests/conftest.py or a test module (tests/ is on sys.path: pytest's default
"prepend" import mode inserts the folder of a conftest.py or test module without __init__.py):

    pytest_plugins = ["jupyterlab_harness"]      # preferred: registers the fixtures once
    from jupyterlab_harness import *             # also works (fixtures copied into conftest)

Both give one server per session. Don't also import the fixtures by name into a test
module: a session fixture defined there again would start a second server.

Fixtures: ``jupyterlab_server`` (session), ``browser_page``, ``artifact_dir``.
Helpers: ``write_notebook``, ``open_notebook``, ``run_all_cells``, ``wait_for_output``,
``set_theme``, ``screenshot``, ``render_html_screenshot``, ``require_browser``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

import pytest

__all__ = [
    "CHROMIUM",
    "JupyterLabServer",
    "artifact_dir",
    "browser_page",
    "browser_unavailable_reason",
    "jupyterlab_server",
    "open_browser",
    "open_notebook",
    "render_html_screenshot",
    "require_browser",
    "run_all_cells",
    "screenshot",
    "set_theme",
    "wait_for_kernel_idle",
    "wait_for_output",
    "wait_for_splash_gone",
    "write_notebook",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
TEST_OUTPUT = REPO_ROOT / "test-output"

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
]
VIEWPORT = {"width": 1400, "height": 1000}
TIMEOUT_MS = 30_000

THEMES = {"light": "JupyterLab Light", "dark": "JupyterLab Dark"}
THEME_CSS_DIR = Path(sys.prefix, "share", "jupyter", "lab", "themes", "@jupyterlab")

# Settings file name -> values; keeps the news / update-check toast from covering the page.
USER_SETTINGS = {
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}


# --------------------------------------------------------------------------- skip / fail


def browser_unavailable_reason() -> str | None:
    """Why browser tests cannot run here, or None when they can."""
    if not CHROMIUM.exists():
        return f"{CHROMIUM} not found (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed (pip install -e '.[test]')"
    return None


def _running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}


def require_browser() -> None:
    """Skip the current test when no browser is available; fail instead when CI is set."""
    reason = browser_unavailable_reason()
    if reason is None:
        return
    if _running_in_ci():
        pytest.fail(f"browser test cannot run in CI: {reason}", pytrace=False)
    pytest.skip(reason)


# --------------------------------------------------------------------------- server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _tail(path: Path, lines: int = 40) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no server log)"


def _write_user_settings(settings_dir: Path) -> None:
    for name, values in USER_SETTINGS.items():
        path = settings_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values, indent=2))


def _isolated_env(home: Path) -> dict[str, str]:
    """The server's environment: private config/data/runtime dirs.

    sys.prefix/share/jupyter stays on the search path, so installed lab extensions
    (the ipywidgets manager) and kernelspecs are still found.
    """
    config = home / "config"
    env = dict(os.environ)
    env.update(
        JUPYTER_CONFIG_DIR=str(config),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        IPYTHONDIR=str(home / "ipython"),
        JUPYTERLAB_SETTINGS_DIR=str(config / "lab" / "user-settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(config / "lab" / "workspaces"),
        PATH=os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
        # the kernel imports compiler/explorer from this checkout, not from wherever the venv installed
        # them (an editable install points at one checkout; a worktree's tests must test the worktree)
        PYTHONPATH=os.pathsep.join(p for p in [str(REPO_ROOT), env.get("PYTHONPATH", "")] if p),
    )
    return env


class JupyterLabServer:
    """A JupyterLab server on 127.0.0.1, isolated from the user's Jupyter config.

    with JupyterLabServer(root_dir, output_dir) as server:
        server.lab_url("tree/demo.ipynb")
    """

    def __init__(self, root_dir: Path | str, output_dir: Path | str, startup_timeout: float = 90):
        self.root_dir = Path(root_dir)
        self.output_dir = Path(output_dir)
        self.log_path = self.output_dir / "jupyterlab-server.log"
        self.startup_timeout = startup_timeout
        self.token = secrets.token_hex(16)
        self.port: int | None = None
        self.process: subprocess.Popen | None = None
        self._home: tempfile.TemporaryDirectory | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def lab_url(self, path: str = "", reset: bool = False) -> str:
        """URL of a /lab page, e.g. lab_url("tree/demo.ipynb", reset=True)."""
        query = ("reset&" if reset else "") + f"token={self.token}"
        return f"{self.url}/lab/{path}?{query}"

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "jupyter", "lab",
            "--no-browser",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={self.port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={self.token}",
            "--ServerApp.allow_root=True",
            "--LabApp.expose_app_in_browser=True",
            f"--ServerApp.root_dir={self.root_dir}",
        ]  # fmt: skip

    def __enter__(self) -> JupyterLabServer:
        self.start()
        return self

    def __exit__(self, *exc_info) -> None:
        self.stop()

    def start(self) -> None:
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self.root_dir.mkdir(parents=True, exist_ok=True)
        self._home = tempfile.TemporaryDirectory(
            prefix="tcompile-jupyter-", ignore_cleanup_errors=True
        )
        env = _isolated_env(Path(self._home.name))
        _write_user_settings(Path(env["JUPYTERLAB_SETTINGS_DIR"]))
        self.port = _free_port()
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                self.command(), cwd=self.root_dir, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        try:
            self._wait_until_ready()
        except BaseException:
            self.stop()
            raise

    def api(self, path: str, method: str = "GET", timeout: float = 5) -> bytes:
        """Call the REST API (path like "status") with the token; returns the body."""
        request = urllib.request.Request(
            f"{self.url}/api/{path}",
            method=method,
            data=b"" if method == "POST" else None,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.read()

    def _wait_until_ready(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self._fail(f"exited with code {self.process.returncode} during startup")
            try:
                self.api("status", timeout=2)
                return
            except OSError:  # URLError, refused, reset, timed out: not up yet
                time.sleep(0.25)
        self._fail(f"did not answer /api/status within {self.startup_timeout:g} s")

    def _fail(self, what: str) -> None:
        raise RuntimeError(
            f"JupyterLab server on port {self.port} {what}.\n"
            f"Log {self.log_path} ends with:\n{_tail(self.log_path)}"
        )

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            try:
                self.api("shutdown", method="POST")
            except OSError:  # not answering: no graceful shutdown to wait for
                self.process.terminate()
            _wait_or_kill(self.process)
        if self._home is not None:
            self._home.cleanup()
            self._home = None


def _wait_or_kill(process: subprocess.Popen, grace: float = 10) -> None:
    for stop in (None, process.terminate, process.kill):
        if stop is not None:
            stop()
        try:
            process.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


# --------------------------------------------------------------------------- browser


@contextmanager
def open_browser(viewport: dict | None = None):
    """Yield a Playwright page in headless Debian Chromium with a fresh profile."""
    require_browser()
    from playwright.sync_api import sync_playwright

    with (
        tempfile.TemporaryDirectory(prefix="tcompile-chromium-") as profile,
        sync_playwright() as playwright,
    ):
        context = playwright.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            headless=True,
            args=CHROMIUM_ARGS,
            viewport=viewport or VIEWPORT,
        )
        try:
            page = context.pages[0] if context.pages else context.new_page()
            page.set_default_timeout(TIMEOUT_MS)
            yield page
        finally:
            context.close()


def screenshot(target, path: Path | str, **options) -> Path:
    """Save a PNG of a Page or Locator (options go to Playwright's screenshot())."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    target.screenshot(path=str(path), **options)
    return path


_PAGE_CSS = """body { margin: 16px; background: var(--jp-layout-color0);
    color: var(--jp-ui-font-color0); font: var(--jp-ui-font-size1) var(--jp-ui-font-family); }"""


def render_html_screenshot(
    html: str, path: Path | str, theme: str = "light", width: int = 1000
) -> Path:
    """Render an HTML string (fragment or document) and save a full-page PNG (``rendered_html``)."""
    with rendered_html(html, theme, width) as page:
        return screenshot(page, path, full_page=True)


@contextlib.contextmanager
def rendered_html(html: str, theme: str = "light", width: int = 1000):
    """Yield a headless Chromium page showing an HTML string (fragment or document).

    The JupyterLab theme's CSS variables (--jp-*) are defined and the page background
    and text follow the theme, so HTML written for notebook outputs looks as in Lab.
    """
    variables = (THEME_CSS_DIR / f"theme-{theme}-extension" / "index.css").read_text()
    light = "true" if theme == "light" else "false"
    document = (
        f'<!doctype html><html><head><meta charset="utf-8"><style>{variables}\n{_PAGE_CSS}'
        f'</style></head><body data-jp-theme-light="{light}" data-jp-theme-name="{THEMES[theme]}">'
        f"{html}</body></html>"
    )
    with open_browser(viewport={"width": width, "height": 400}) as page:
        page.emulate_media(color_scheme=theme)
        page.set_content(document, wait_until="load")
        yield page


# --------------------------------------------------------------------------- notebooks


def write_notebook(path: Path | str, sources: list[str]) -> Path:
    """Write a python3 notebook with one code cell per source string."""
    import nbformat

    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell(source) for source in sources],
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
    )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, path)
    return path


# JavaScript predicates evaluated in the page; `panel` is the active notebook panel.
_PANEL_JS = "const panel = window.jupyterapp?.shell?.currentWidget;"
_KERNEL_IDLE_JS = f"""() => {{ {_PANEL_JS}
    const session = panel?.sessionContext;
    return !!session?.session?.kernel && session.kernelDisplayStatus === 'idle'; }}"""
_RUN_ALL_DONE_JS = f"""() => {{ {_PANEL_JS}
    const running = [...panel.node.querySelectorAll('.jp-InputPrompt')]
        .some(prompt => prompt.textContent.includes('[*]'));
    return window.__harnessRunAll !== 'running' && !running
        && panel.sessionContext.kernelDisplayStatus === 'idle'; }}"""
_START_RUN_ALL_JS = """() => {
    window.__harnessRunAll = 'running';
    window.jupyterapp.commands.execute('notebook:run-all-cells').then(
        ok => { window.__harnessRunAll = ok ? 'ok' : 'failed'; },
        error => { window.__harnessRunAll = 'error: ' + error; });
}"""


_ERROR_MIME = "application/vnd.jupyter.stderr"  # what Lab tags a traceback output with


def wait_for_kernel_idle(page, timeout: float = 60_000) -> None:
    """Wait until the active notebook has a kernel and it is idle."""
    page.wait_for_function(_KERNEL_IDLE_JS, timeout=timeout)


def open_notebook(page, server: JupyterLabServer, nb_name: str, theme: str = "light") -> None:
    """Open a notebook (path relative to the server root) in a reset workspace.

    Returns once the notebook panel shows, its kernel is idle and the theme is set
    (the theme is a user setting, so it would otherwise leak from an earlier test).
    """
    page.goto(server.lab_url(f"tree/{quote(nb_name)}", reset=True))
    page.wait_for_function(
        f"() => {{ {_PANEL_JS} return panel?.context?.path === {json.dumps(nb_name)}; }}",
        timeout=60_000,
    )
    page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(state="visible")
    wait_for_kernel_idle(page)
    set_theme(page, theme)


def run_all_cells(page, timeout: float = 120_000, allow_errors: bool = False) -> None:
    """Run every cell of the active notebook; wait for the kernel to settle.

    Raises AssertionError with the error output if a cell failed, unless allow_errors.
    """
    page.evaluate(_START_RUN_ALL_JS)
    page.wait_for_function(_RUN_ALL_DONE_JS, timeout=timeout)
    outcome = page.evaluate("() => window.__harnessRunAll")
    if outcome != "ok" and not allow_errors:
        errors = page.locator(f'.jp-OutputArea-output[data-mime-type="{_ERROR_MIME}"]')
        details = "\n".join(errors.all_inner_texts()) or "(no error output shown)"
        raise AssertionError(f"run-all-cells ended with {outcome!r}:\n{details}")


def wait_for_output(page, selector: str, text: str | None = None, timeout: float = TIMEOUT_MS):
    """Wait until an element matching selector (and containing text) shows in a cell
    output; returns its Locator."""
    locator = page.locator(f".jp-OutputArea-output {selector}")
    if text is not None:
        locator = locator.filter(has_text=text)
    locator = locator.first
    locator.wait_for(state="visible", timeout=timeout)
    return locator


def set_theme(page, theme: str) -> None:
    """Switch JupyterLab to the "light" or "dark" theme and wait until it is applied."""
    name = THEMES[theme]
    page.evaluate(
        "name => window.jupyterapp.commands.execute('apputils:change-theme', {theme: name})", name
    )
    page.wait_for_function(
        "name => document.body.dataset.jpThemeName === name", arg=name, timeout=TIMEOUT_MS
    )
    wait_for_splash_gone(page)


def wait_for_splash_gone(page) -> None:
    """Wait until JupyterLab's loading splash (shown at start and on theme change) is gone."""
    page.locator("#jupyterlab-splash").wait_for(state="detached", timeout=TIMEOUT_MS)


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="session")
def jupyterlab_server(tmp_path_factory):
    """A JupyterLab server for the session; write notebooks into .root_dir."""
    root = tmp_path_factory.mktemp("jupyterlab-root")
    with JupyterLabServer(root, TEST_OUTPUT / "jupyterlab-server") as server:
        yield server


@pytest.fixture
def artifact_dir(request) -> Path:
    """An empty test-output/<test name>/ folder in the repo for screenshots and logs."""
    path = TEST_OUTPUT / re.sub(r"[^\w.-]+", "_", request.node.name)
    shutil.rmtree(path, ignore_errors=True)
    path.mkdir(parents=True)
    return path


@pytest.fixture
def browser_page(request, artifact_dir):
    """A fresh Chromium page; keeps its console log, and a screenshot if the test failed."""
    with open_browser() as page:
        console: list[str] = []
        page.on("console", lambda message: console.append(f"{message.type}: {message.text}"))
        page.on("pageerror", lambda error: console.append(f"pageerror: {error}"))
        failures_before = request.session.testsfailed
        yield page
        (artifact_dir / "browser-console.log").write_text("\n".join(console) + "\n")
        if request.session.testsfailed > failures_before:
            screenshot(page, artifact_dir / "failure.png")

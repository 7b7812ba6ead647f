"""The labs as an nbgrader course (notebooks/labs/grading.py, ``build_labs.py --course``): ``nbgrader
generate_assignment`` makes the student release, ``nbgrader autograde`` grades a submission. Graded here on
labs 02 and 03 (the quick ones that compile live): the solutions get full marks, the unanswered release zero
(and no crash), and each planted wrong answer zero for its exercise — including wrong answers the visible
checkers never name. Every lab (these two included) is also graded in tests/test_labs.py's top-to-bottom run,
in the lab's own kernel: the same test cells after the starting code, a planted wrong answer and the solution.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("nbgrader")
import nbformat  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"
LABS = {"lab02": "lab02_graph_breaks", "lab03": "lab03_guards"}

# exercise -> a wrong answer (the student's whole cell); each must score 0 for that exercise
PLANTED = {
    "lab02": {
        "ex2_1": ["def train_step(x):\n    y = torch.relu(x) * 3\n    return y.sum()\n\n"
                  "ex21 = compiler.explore(train_step, x, backend='eager', timing=False)",
                  # the log moved out of the function: printed once by the cell, not by the compiled function
                  "def train_step(x):\n    y = torch.relu(x) * 3\n    return y.sum()\n\n"
                  "print('train_step: activation sum', train_step(x))\n"
                  "ex21 = compiler.explore(train_step, x, backend='eager', timing=False)"],
        "ex2_2": ["def clip_large(x):\n    return x / x.abs().max() * 2\n\n"
                  "ex22 = compiler.explore(clip_large, x, backend='eager', timing=False)",
                  # compiling switched off: nothing left to break
                  "torch.compiler.set_stance('force_eager')\n"
                  "def clip_large(x):\n    m = x.abs().max()\n    if m > 1:\n        x = x / m\n    return x * 2\n\n"
                  "ex22 = compiler.explore(clip_large, x, backend='eager', timing=False)"],
        "ex2_3": ["def normalize(x):\n    scale = x.abs().max().item()\n    return x / scale\n\n"
                  "ex23 = compiler.explore(normalize, x, backend='eager', fullgraph=True, timing=False)",
                  # a config switch: .item() captured into the graph, the code unchanged
                  "torch._dynamo.config.capture_scalar_outputs = True\n"
                  "def normalize(x):\n    scale = x.abs().max().item()\n    return x / scale\n\n"
                  "ex23 = compiler.explore(normalize, x, backend='eager', timing=False)"],
        "ex2_4": ["def fingerprint(x):\n    return x * 2\n\n"
                  "ex24 = compiler.explore(fingerprint, x, backend='eager', fullgraph=True, errors='return', "
                  "timing=False)",
                  # a hard-coded checksum: no graph break, no custom op
                  "def fingerprint(x):\n    y = x * 2\n    return y + 123.0\n\n"
                  "ex24 = compiler.explore(fingerprint, x, backend='eager', fullgraph=True, errors='return', "
                  "timing=False)"],
        "ex2_5": ["predicted_breaks_after = 0", "predicted_breaks_after = 2   # the fix counted as doing nothing"],
        "ex2_6": "def act(x, name):\n    return x * 2\n\n"
                 "ex26 = compiler.explore(act, x, 'tanh', backend='eager', fullgraph=True, errors='return', "
                 "timing=False)",
    },
    "lab03": {
        "ex3_2": "my_input = torch.randn(8, 4, requires_grad=True)",
        "ex3_3": ["class Gain(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                  "        self.register_buffer('gain', torch.tensor(2.0))\n\n    def forward(self, x):\n"
                  "        return x * self.gain\n\ndef set_gain(model, value):\n    pass",
                  # the issue's: the float attribute, compiling switched off after the first value
                  "class Gain(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                  "        self.gain = 2.0\n\n    def forward(self, x):\n        return x * self.gain\n\n"
                  "_seen = []\ndef set_gain(model, value):\n    model.gain = value\n    _seen.append(value)\n"
                  "    if len(_seen) > 1:\n        torch.compiler.set_stance('force_eager')",
                  # a config switch: no recompile allowed, the new values run eagerly
                  "torch._dynamo.config.recompile_limit = 1\n\nclass Gain(torch.nn.Module):\n"
                  "    def __init__(self):\n        super().__init__()\n        self.gain = 2.0\n\n"
                  "    def forward(self, x):\n        return x * self.gain\n\ndef set_gain(model, value):\n"
                  "    model.gain = value"],
        "ex3_4": ["predicted_recompiles_after = 1", "predicted_recompiles_after = '0'"],
        "ex3_5": "accepting = '0/1'\nfailed_against = '0/0'",
        "ex3_6": "keep_guard = torch.compiler.keep_tensor_guards_unsafe\ntorch._dynamo.reset()\n"
                 "ex36 = compiler.explore(sgd_step, w, g, backend='eager', timing=False, "
                 "options={'guard_filter_fn': keep_guard})",
        "ex3_7": "stance = 'eager_on_recompile'",
        "ex3_9": "compiles_default = 3\ncompiles_dynamic = 1",
        "ex3_8": ["def mean_times_rows(x):\n    return x.mean(0) * x.shape[0]\n\ntorch._dynamo.reset()\n"
                  "batch = torch.randn(8, 4)\ntorch._dynamo.decorators.mark_unbacked(batch, 0)\n"
                  "ex38 = compiler.explore(mean_times_rows, batch, backend='eager', timing=False)",
                  # the issue's: the branch deleted, `== 0` left in a comment, torch._check kept
                  "def mean_times_rows(x):\n    n = x.shape[0]\n    torch._check(n > 0)\n"
                  "    # if n == 0: return x.sum(0)\n    return x.mean(0) * n\n\ntorch._dynamo.reset()\n"
                  "batch = torch.randn(8, 4)\ntorch._dynamo.decorators.mark_unbacked(batch, 0)\n"
                  "ex38 = compiler.explore(mean_times_rows, batch, backend='eager', timing=False)",
                  # a guard filter that drops the 0/1 guard: mark_dynamic, a batch of 1 reused
                  "def mean_times_rows(x):\n    n = x.shape[0]\n    if n == 0:\n        return x.sum(0)\n"
                  "    return x.mean(0) * n\n\ntorch._dynamo.reset()\nbatch = torch.randn(8, 4)\n"
                  "torch._dynamo.mark_dynamic(batch, 0)\n"
                  "ex38 = compiler.explore(mean_times_rows, batch, backend='eager', timing=False, "
                  "options={'guard_filter_fn': lambda es: [e.guard_type != 'SHAPE_ENV' for e in es]})"],
        "ex3_10": ["def mark(batch):\n    pass                       # automatic dynamic: one recompile",
                   # a config switch: every size dynamic by default, the batch left alone
                   "def mark(batch):\n    torch._dynamo.config.assume_static_by_default = False",
                   "def mark(batch):\n    torch._dynamo.decorators.mark_static(batch, 0)"],
        "ex3_1": ["torch._dynamo.reset()\nex31 = compiler.explore(f, torch.randn(32, 4), backend='eager', "
                  "dynamic=True, timing=False)",
                  # the size check filtered away: the compile for 8 rows reused for anything
                  "torch._dynamo.reset()\nex31 = compiler.explore(f, torch.randn(8, 4), backend='eager', dynamic=False, "
                  "timing=False, options={'guard_filter_fn': torch.compiler.skip_all_guards_unsafe})"],
    },
}


# exercise -> right answers written otherwise than the solution; each must score full marks
RIGHT = {
    "lab02": {
        "ex2_5": "predicted_breaks_after = 1.0",
        "ex2_3": "def normalize(x):\n    return x / x.abs().amax()\n\n"
                 "ex23 = compiler.explore(normalize, x, backend='eager', timing=False)",
        "ex2_2": "def clip_large(x):\n    return x / torch.clamp(x.abs().max(), min=1) * 2\n\n"
                 "ex22 = compiler.explore(clip_large, x, backend='eager', timing=False)",
    },
    "lab03": {
        "ex3_1": "torch._dynamo.reset()\nfirst = torch.randn(8, 4)\ntorch._dynamo.decorators.mark_unbacked(first, 0)\n"
                 "ex31 = compiler.explore(f, first, backend='eager', dynamic=False, timing=False)",
        "ex3_2": "my_input = torch.ones(1, 4) * 3   # a batch of 1: 0/1 specialization",
        "ex3_3": "class Gain(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n"
                 "        self.gain = torch.nn.Parameter(torch.tensor(2.0), requires_grad=False)\n\n"
                 "    def forward(self, x):\n        return x * self.gain\n\ndef set_gain(model, value):\n"
                 "    with torch.no_grad():\n        model.gain.copy_(torch.tensor(value))",
        "ex3_4": "predicted_recompiles_after = 0.0",
        "ex3_10": "from torch._dynamo.decorators import maybe_mark_dynamic\n\ndef mark(batch):\n"
                  "    maybe_mark_dynamic(batch, index=0)",
        "ex3_8": "def mean_times_rows(x):\n    n = x.shape[0]\n    torch._check(x.size(0) >= 1)\n    if n < 1:\n"
                 "        return x.sum(0)\n    return x.mean(0) * n\n\ntorch._dynamo.reset()\nbatch = torch.randn(6, 4)\n"
                 "torch._dynamo.decorators.mark_unbacked(batch, 0)\n"
                 "ex38 = compiler.explore(mean_times_rows, batch, backend='eager', timing=False)",
    },
}


# nbgrader grades the first two planted wrong answers of each exercise (a submission each: CI time); every planted
# answer is graded in tests/test_labs.py's run of the lab, in its kernel
WRONG_STUDENTS = ("wrong", "wrong2")


def planted(lab: str, index: int) -> dict[str, str]:
    """The ``index``-th planted wrong answer of each exercise of ``lab`` that has one."""
    found = {}
    for grade_id, answers in PLANTED[lab].items():
        answers = [answers] if isinstance(answers, str) else answers
        if index < len(answers):
            found[grade_id] = answers[index]
    return found


def _nbgrader(course: Path, *args: str) -> subprocess.CompletedProcess:
    """Runs nbgrader in ``course`` with this venv on PATH (nbgrader calls alembic) and this checkout importable."""
    bin_dir = str(Path(sys.executable).parent)
    env = {**os.environ, "PATH": bin_dir + os.pathsep + os.environ.get("PATH", ""),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run([sys.executable, "-m", "nbgrader", *args], cwd=course, env=env,
                            capture_output=True, text=True, timeout=1200)
    assert result.returncode == 0, f"nbgrader {' '.join(args)}: {result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    built = tmp_path_factory.mktemp("built") / "course"
    sys.path.insert(0, str(NOTEBOOKS))
    try:
        import build_labs
        build_labs.write_course(built, list(LABS.values()))
    finally:
        sys.path.remove(str(NOTEBOOKS))
    root = tmp_path_factory.mktemp("moved") / "course"  # grading works wherever the course is copied (issue 47)
    shutil.move(str(built), str(root))
    start = time.perf_counter()
    _nbgrader(root, "generate_assignment", "lab0*", "--force")  # one process for every lab (a glob)
    print(f"generate_assignment {', '.join(LABS)}: {time.perf_counter() - start:.0f} s")
    return root


def _notebook(course: Path, where: str, lab: str):
    path = next((course / where / lab).glob("*.ipynb"))
    return path, nbformat.read(path, as_version=4)


def _grade_id(cell) -> str:
    return cell.metadata.get("nbgrader", {}).get("grade_id", "")


def _solutions(course: Path, lab: str) -> dict[str, str]:
    _, source = _notebook(course, "source", lab)
    return {_grade_id(c): c.source.replace("### BEGIN SOLUTION\n", "").replace("\n### END SOLUTION", "")
            for c in source.cells if c.metadata.get("nbgrader", {}).get("solution")}


def _submit(course: Path, lab: str, student: str, answers: dict[str, str]) -> None:
    """The release of ``lab`` with ``answers`` (grade id -> the student's cell), as ``student`` hands it in."""
    path, nb = _notebook(course, "release", lab)
    for cell in nb.cells:
        if _grade_id(cell) in answers:
            cell.source = answers[_grade_id(cell)]
    folder = course / "submitted" / student / lab
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(course / "release" / lab, folder)
    nbformat.write(nb, folder / path.name)


@pytest.fixture(scope="module")
def grades(course):
    """Every submission autograded in one nbgrader run: {(lab, student): {exercise: (score, max score)}}.
    Students: "solutions" (labs 02, 03), "empty" (the release as handed out, lab 02), "wrong" (PLANTED)."""
    from nbgrader.api import Gradebook

    for lab in LABS:
        _submit(course, lab, "solutions", _solutions(course, lab))
        _submit(course, lab, "different", {**_solutions(course, lab), **RIGHT[lab]})
        for index, student in enumerate(WRONG_STUDENTS):
            if planted(lab, index):
                _submit(course, lab, student, planted(lab, index))
    _submit(course, "lab02", "empty", {})
    start = time.perf_counter()
    _nbgrader(course, "autograde", "lab0*", "--force")
    print(f"autograde (every submission): {time.perf_counter() - start:.0f} s")
    found = {}
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        for lab in LABS:
            for student in ("solutions", "different", "empty", *WRONG_STUDENTS):
                try:
                    submission = gradebook.find_submission(lab, student)
                except Exception:  # noqa: BLE001 - nbgrader's MissingEntry: not submitted
                    continue
                found[lab, student] = {g.name.removesuffix("_tests"): (g.score, g.max_score)
                                       for notebook in submission.notebooks for g in notebook.grades}
    for (lab, student), scores in sorted(found.items()):
        print(f"{lab} {student}: {sum(s for s, _ in scores.values()):g} / {sum(t for _, t in scores.values()):g}",
              {ex: s for ex, (s, _) in scores.items()})
    return found


def test_the_release_holds_no_solution_and_no_hidden_test(course):
    for lab in LABS:
        _, release = _notebook(course, "release", lab)
        text = "\n".join(c.source for c in release.cells)
        assert "BEGIN SOLUTION" not in text and "BEGIN HIDDEN TESTS" not in text and "_gc." not in text
        for grade_id, solution in _solutions(course, lab).items():
            starter = next(c.source for c in release.cells if _grade_id(c) == grade_id)
            assert starter.strip() != solution.strip(), f"{lab} {grade_id}: the release holds the solution"
        assert not list((course / "release" / lab).rglob("*.py"))


@pytest.mark.slow
@pytest.mark.parametrize("lab", sorted(LABS))
def test_autograde_gives_the_solutions_full_marks(grades, lab):
    scores = grades[lab, "solutions"]
    assert scores and all(score == top for score, top in scores.values()), scores


@pytest.mark.slow
def test_autograde_gives_the_unanswered_release_zero(grades):
    scores = grades["lab02", "empty"]
    assert len(scores) == len(PLANTED["lab02"]) and all(score == 0 for score, _ in scores.values()), scores


@pytest.mark.slow
@pytest.mark.parametrize("lab", sorted(PLANTED))
def test_autograde_gives_each_planted_wrong_answer_zero(grades, lab):
    for index, student in enumerate(WRONG_STUDENTS):
        if not planted(lab, index):
            continue
        scores = grades[lab, student]
        assert sorted(scores) == sorted(PLANTED[lab]), scores
        scored = {ex: score for ex, (score, _) in scores.items() if score and ex in planted(lab, index)}
        assert not scored, f"{student}: wrong answers that scored: {scored}"


@pytest.mark.slow
@pytest.mark.parametrize("lab", sorted(RIGHT))
def test_autograde_gives_right_answers_written_otherwise_full_marks(grades, lab):
    scores = grades[lab, "different"]
    assert scores and all(score == top for score, top in scores.values()), scores


def test_the_release_needs_nothing_from_the_repository(course):
    """The release imports only installed packages (tcompile's) and names no path of the repository."""
    for lab in LABS:
        _, release = _notebook(course, "release", lab)
        text = "\n".join(c.source for c in release.cells if c.cell_type == "code")
        assert "from labs" not in text and "import labs" not in text
        assert "assets" not in text and "tests/" not in text and ".parent.parent" not in text
        assert sorted(p.name for p in (course / "release" / lab).iterdir()) == sorted(
            ["README.md", next((course / "release" / lab).glob("*.ipynb")).name])

"""Wrongly shaped capture files, generated: real captures mutated at random places (type swaps,
deletions, huge strings, unknown keys). Each mutant either raises CaptureFormatError naming the
JSON path, or loads and renders every view, the summary, repr, as_text and the widget."""
import copy
import json
from pathlib import Path

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import compiler
import explorer

GPU_CAPTURE = Path(__file__).resolve().parent.parent / "assets" / "gpu" / "mlp_forward_backward.json"
REPLACEMENTS = [5, -1, 2.5, True, None, "x", "", [], [1, "a"], {}, {"k": 1}, "é" * 200_000]


def _break_and_recompile(x):
    y = x.sin()
    print("tcompile-fuzz")
    return y.cos() + x.shape[0]


@pytest.fixture(scope="module")
def documents():
    with compiler.capture() as cap:
        f = torch.compile(_break_and_recompile, backend="eager")
        f(torch.ones(3))
        f(torch.ones(4, 2))
    return [cap.to_data(), json.loads(GPU_CAPTURE.read_text())]


def _paths(value, path=()):
    """Every place in a JSON document: (path to the container, key or index)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield path, key
            yield from _paths(item, path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value[:20]):
            yield path, index
            yield from _paths(item, path + (index,))


def _mutate(document, data):
    mutant = copy.deepcopy(document)
    places = list(_paths(mutant))
    container_path, key = places[data.draw(st.integers(0, len(places) - 1), label="place")]
    container = mutant
    for step in container_path:
        container = container[step]
    how = data.draw(st.sampled_from(["replace", "delete", "unknown key", "huge string"]), label="how")
    if how == "replace":
        container[key] = data.draw(st.sampled_from(REPLACEMENTS), label="value")
    elif how == "delete":
        del container[key]
    elif how == "unknown key":
        target = container[key] if isinstance(container[key], dict) else container
        if isinstance(target, dict):
            target["from_a_newer_tcompile"] = {"nested": [1, 2]}
    else:
        container[key] = "y" * 1_000_000
    return mutant


def _render_everything(cap):
    repr(cap)
    cap.as_text()
    explorer.summary_text(cap)
    explorer.render_static(cap)
    for c in cap.compiles:
        for view in explorer.VIEWS:
            html = explorer.render_view(view.key, cap, c)
            assert " view failed: " not in html, html[:2000]
        c._repr_html_()
    explorer.Explorer(cap, static_html=False)


@pytest.mark.slow  # ~3 min; the loader it fuzzes imports no torch, so the other torch's fast suite gains nothing from it
@settings(max_examples=520, deadline=None, suppress_health_check=list(HealthCheck), database=None,
          derandomize=True)  # the same 520 cases in every run: CI must not depend on the draw
@given(data=st.data())
def test_mutated_captures_fail_cleanly_or_render(documents, data):
    document = documents[data.draw(st.integers(0, len(documents) - 1), label="document")]
    mutant = _mutate(document, data)
    try:
        cap = compiler.Capture.from_json(json.dumps(mutant))
    except compiler.CaptureFormatError as exc:
        assert str(exc).strip() and "\n" not in str(exc)
        return
    _render_everything(cap)

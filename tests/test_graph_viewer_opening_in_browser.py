"""The graph viewer opens on boxes (issue 46, item 5): a picture too big to read whole opens on its first row at a
readable zoom — not on the picture's empty corner with the first box cut at the edge (Mask R-CNN 1/0's AOT graph) —
and an opened group whose first row is wider than the view starts at that row's first box, not in the middle of
it (36/0's row of 39 getitem boxes). explorer/static/graph_viewer.js drawn in headless Chromium on scenes shaped
like those, with a stand-in for the widget's model."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from jupyterlab_harness import rendered_html

STATIC = Path(__file__).resolve().parent.parent / "explorer" / "static"
BOX_W, BOX_H = 120, 40


def box(i, x, y):
    return {"id": f"n:b{i}", "kind": "call_function", "x": x, "y": y, "w": BOX_W, "h": BOX_H, "label": [f"b{i}"]}


def page_with(scene: dict):
    """The viewer drawn on ``scene``, in a 1,000 px wide page; window.tcFire(name) calls its model's listeners."""
    code = (STATIC / "graph_viewer.js").read_text().replace("export default { render };", "window.tcRender = render;")
    data = {"scene": scene, "expanded": [], "focus": "", "matches": {}, "query": "", "colour_compile": False,
            "error": ""}
    html = (f"<style>{(STATIC / 'tcompile.css').read_text()}</style><div id='host' style='width: 1000px'></div>"
            "<script>window.tcData = " + json.dumps(data) + "; window.tcListeners = {};"
            "window.tcModel = {get: k => window.tcData[k], set: (k, v) => { window.tcData[k] = v; },"
            "save_changes() {}, on(name, f) { (window.tcListeners[name] ||= []).push(f); }};"
            "window.tcFire = name => (window.tcListeners[name] || []).forEach(f => f());</script>"
            f"<script type='module'>{code}\nwindow.tcRender({{model: window.tcModel, el: document.getElementById('host')}});"
            "window.tcReady = true;</script>")
    return rendered_html(html, width=1040)


def shown(page, box_id: str) -> bool:
    """Whether the box lies whole inside the viewer's viewport."""
    return page.evaluate("""id => { const v = document.querySelector('.tc-gv-viewport').getBoundingClientRect();
        const b = document.querySelector(`[data-id="${id}"] rect`).getBoundingClientRect();
        return b.left >= v.left - 1 && b.right <= v.right + 1 && b.top >= v.top - 1 && b.bottom <= v.bottom + 1; }""",
                         box_id)


def settle(page):
    page.wait_for_function("() => window.tcReady")
    page.wait_for_timeout(200)


@pytest.mark.browser
def test_a_big_picture_opens_on_its_first_row_not_an_empty_corner():
    """The first box centred over a wide picture (its input, above a wide body): shown whole on opening."""
    boxes = [box(0, 1940, 10)] + [box(i, 10 + (i - 1) * 130, 300 + 60 * (i % 20)) for i in range(1, 31)]
    scene = {"width": 4000, "height": 3000, "boxes": boxes, "clusters": [], "edges": []}
    with page_with(scene) as page:
        settle(page)
        assert shown(page, "n:b0")


@pytest.mark.browser
def test_an_opened_group_with_a_wide_first_row_starts_at_its_first_box():
    """A group opened whose first row is 39 boxes (a getitem each): the view starts at the row's first box."""
    row = [box(i, 20 + i * 130, 40) for i in range(39)]
    below = [box(100 + i, 20 + i * 130, 200) for i in range(5)]
    start = {"width": 600, "height": 200, "boxes": [box(900, 20, 20)], "clusters": [], "edges": []}
    opened = {"width": 5200, "height": 300, "boxes": row + below, "edges": [],
              "clusters": [{"id": "m:paste", "kind": "module", "depth": 0, "x": 10, "y": 10, "w": 5100, "h": 260,
                            "label": "paste_masks"}]}
    with page_with(start) as page:
        settle(page)
        page.evaluate("s => { window.tcData.focus = 'm:paste'; window.tcData.scene = s; window.tcFire('change:scene'); }",
                      opened)
        page.wait_for_timeout(200)
        assert shown(page, "n:b0")

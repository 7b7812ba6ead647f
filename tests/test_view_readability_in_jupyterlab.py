"""Readable in real JupyterLab, light and dark: badges in the compiles table's selected (blue) row read
as well as in a plain row, WCAG contrast ≥ 7:1 (computed from the browser's own colours, the row's
highlight composited under the badge; near-black on that blue measured 4.6:1, which WCAG's formula calls
enough but reads poorly; a plain row's badge measures 12-14:1), and a diff of two compiles shows its code lines left-aligned in a monospace font, unchanged
lines readable, both as a notebook HTML output (where JupyterLab right-aligns table cells) and inside a
widget. Screenshots (and of a cut text's mark) land in test-output/<test>/."""
import pytest

from jupyterlab_harness import (
    open_notebook,
    render_html_screenshot,
    rendered_html,
    run_all_cells,
    screenshot,
    set_theme,
    wait_for_output,
    write_notebook,
)

pytest.importorskip("itables")

CAPTURE = """\
import torch, compiler, ipywidgets
from compiler.analyses.diff import diff
from IPython.display import HTML, display
from explorer.widget import Explorer
from explorer.html import style_tag, view_frame
from explorer.views.diff import compare_style_tag, render_diff

def scale(x):
    return (x * 2).sum(0)

caps = []
for dynamic in (False, True):
    torch._dynamo.reset()
    with compiler.capture() as cap:
        torch.compile(scale, backend="aot_eager", dynamic=dynamic)(torch.ones(8, 3))
    caps.append(cap)
torch._dynamo.reset()
with compiler.capture() as twice:  # two compiles: the first is the selected row
    f = torch.compile(scale, backend="eager", dynamic=False)
    f(torch.ones(8, 3)); f(torch.ones(5, 3))
graph_diff = view_frame(render_diff(diff(*caps, labels=("static", "dynamic")), "graph"))
print("compiles:", len(twice.compiles))
"""
SHOW_EXPLORER = "Explorer(twice, static_html=False)"
SHOW_DIFF_HTML = "display(HTML(style_tag() + compare_style_tag() + graph_diff))"
SHOW_DIFF_WIDGET = """\
ipywidgets.VBox([ipywidgets.HTML(style_tag() + compare_style_tag()),
                 ipywidgets.HTML(graph_diff, layout=ipywidgets.Layout(width="100%"))])
"""

BADGE_CONTRAST = 7.0  # WCAG AAA for normal text

# The colours a reader sees: each ancestor's background, and the inset box-shadows that paint a
# highlighted row (DataTables' selected row), composited from the page down; then WCAG contrast.
CONTRAST_JS = """el => {
  const parse = c => {
    let m = c.match(/^rgba?\\(([^)]*)\\)/);
    if (m) { const v = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
             return [v[0] / 255, v[1] / 255, v[2] / 255, v.length > 3 ? v[3] : 1]; }
    m = c.match(/^color\\(srgb ([^)]*)\\)/);
    if (m) { const v = m[1].split(/[ \\/]+/).filter(Boolean).map(Number); return [v[0], v[1], v[2], v.length > 3 ? v[3] : 1]; }
    throw new Error('colour not understood: ' + c);
  };
  const over = (top, under) => {
    const a = top[3] + under[3] * (1 - top[3]);
    return [0, 1, 2].map(i => (top[i] * top[3] + under[i] * under[3] * (1 - top[3])) / a).concat([a]);
  };
  const shadows = s => [...s.matchAll(/(rgba?\\([^)]*\\)|color\\([^)]*\\))\\s+((?:-?[\\d.]+px\\s*){3,4})inset/g)]
    .filter(m => Math.max(...m[2].trim().split(/\\s+/).map(parseFloat)) >= 100).map(m => parse(m[1]));
  const chain = [];
  for (let e = el; e; e = e.parentElement) chain.unshift(e);
  let bg = [1, 1, 1, 1];
  for (const e of chain) {
    const s = getComputedStyle(e);
    bg = over(parse(s.backgroundColor), bg);
    for (const sh of shadows(s.boxShadow).reverse()) bg = over(sh, bg);
  }
  const fg = over(parse(getComputedStyle(el).color), bg);
  const lum = c => c.slice(0, 3).map(v => v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
    .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
  const hex = c => '#' + c.slice(0, 3).map(v => Math.round(v * 255).toString(16).padStart(2, '0')).join('');
  return {contrast: (hi + 0.05) / (lo + 0.05), fg: hex(fg), bg: hex(bg), text: el.textContent.trim()};
}"""

# Where a code line's text starts and which font it has: a left-aligned line starts at the cell's left padding.
ALIGN_JS = """td => {
  const s = getComputedStyle(td), range = document.createRange();
  range.selectNodeContents(td);
  const text = range.getClientRects()[0], box = td.getBoundingClientRect();
  return {align: s.textAlign, font: s.fontFamily, text: td.textContent,
          offset: text ? text.left - box.left - parseFloat(s.paddingLeft) : null};
}"""


def check_diff(output, where: str, theme: str) -> list[str]:
    problems = []
    lines = output.locator("table.tc-diff td.tc-diff-line")
    assert lines.count() > 4, where
    for i in range(lines.count()):
        td = lines.nth(i)
        got = td.evaluate(ALIGN_JS)
        if not got["text"].strip():
            continue
        if got["align"] not in ("left", "start") or got["offset"] > 2:
            problems.append(f"{where} ({theme}): {got['text'][:40]!r} aligned {got['align']}, starts "
                            f"{got['offset']:.0f}px in")
        if not any(mono in got["font"] for mono in ("monospace", "Mono", "Menlo", "Consolas")):
            problems.append(f"{where} ({theme}): {got['text'][:40]!r} in {got['font']}")
    for td in output.locator("table.tc-diff tr.tc-diff-equal td.tc-diff-line").all():
        if td.inner_text().strip() and (got := td.evaluate(CONTRAST_JS))["contrast"] < 4.5:
            problems.append(f"{where} ({theme}): unchanged line {got}")
    return problems


@pytest.mark.browser
def test_selected_row_badges_and_diff_lines_are_readable(jupyterlab_server, browser_page, artifact_dir):
    page = browser_page
    write_notebook(jupyterlab_server.root_dir / "readable.ipynb",
                   [CAPTURE, SHOW_EXPLORER, SHOW_DIFF_HTML, SHOW_DIFF_WIDGET])
    open_notebook(page, jupyterlab_server, "readable.ipynb")
    run_all_cells(page, timeout=240_000)
    wait_for_output(page, "pre", text="compiles: 2")
    explorer = wait_for_output(page, ".tc-explorer")
    table = explorer.locator(".tc-itable-widget").first
    table.locator("tbody tr.selected .tc-badge").first.wait_for(state="visible")
    diff_outputs = page.locator(".jp-OutputArea-output:has(table.tc-diff)")
    assert diff_outputs.count() == 2

    problems, measured = [], []
    for theme in ("light", "dark"):
        if theme == "dark":
            set_theme(page, "dark")
        page.wait_for_timeout(300)
        for row in table.locator("tbody tr").all():
            selected = "selected" in (row.get_attribute("class") or "")
            for badge in row.locator(".tc-badge").all():
                got = badge.evaluate(CONTRAST_JS)
                measured.append(f"{theme} {'selected' if selected else 'plain'} row: {got}")
                if got["contrast"] < BADGE_CONTRAST:
                    problems.append(f"compiles table ({theme}, {'selected' if selected else 'plain'} row): {got}")
        screenshot(table, artifact_dir / f"compiles_table_{theme}.png")
        for output, where in zip(diff_outputs.all(), ("HTML output", "widget")):
            output.scroll_into_view_if_needed()
            problems += check_diff(output, where, theme)
            screenshot(output, artifact_dir / f"diff_{where.replace(' ', '_').lower()}_{theme}.png")
    (artifact_dir / "badge_contrast.txt").write_text("\n".join(measured) + "\n")
    assert not problems, "\n".join(problems)


@pytest.mark.browser
def test_cut_marks_screenshots(artifact_dir):
    """For people to look at: the static page's cut marks, inline (a table cell) and after a block."""
    from explorer.html import cut_text, join, style_tag, table, tag, view_frame

    name = "torch_dynamo_resume_in_<forward>_at_" * 4
    shown, inline = cut_text(name, 40, inline=True)
    code_text = "".join(f"    buf{i} = torch.ops.aten.add.Tensor(arg{i}, 1)\n" for i in range(12))
    block_shown, block_mark = cut_text(code_text, 200)
    fragment = join([style_tag(), view_frame(join([
        table(["compile", "function"], [["0/0", join([shown, inline])]]),
        tag("pre", block_shown, cls="tc-pre"), block_mark]))])
    for theme in ("light", "dark"):
        with rendered_html(fragment, theme=theme, width=900) as page:
            marks = page.evaluate("""() => [...document.querySelectorAll('.tc-cut, .tc-pre + *')].map(e => {
                const r = e.getBoundingClientRect();
                return {text: e.innerText, right: r.right, width: r.width, height: r.height}; })""")
            overflow = page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
            screenshot(page, artifact_dir / f"cut_marks_{theme}.png", full_page=True)
        # both marks drawn, each saying how much is cut and where the rest is, inside the 900 px page
        assert len(marks) >= 2, marks
        assert all("more characters" in m["text"] and m["width"] > 0 and m["height"] > 0 for m in marks), marks
        assert all(m["right"] <= 900 for m in marks) and overflow <= 0, (marks, overflow)

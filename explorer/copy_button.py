"""A button that copies a text to the browser's clipboard (an anywidget: the copy happens in the page,
where the clipboard is; the kernel only sets the text). Used for the Fixes tab's snippets."""
from __future__ import annotations

import anywidget
import traitlets

_ESM = """
function render({ model, el }) {
  const button = document.createElement("button");
  button.className = "jupyter-button widget-button tc-copy-button";
  const label = () => { button.textContent = model.get("label"); button.disabled = !model.get("text"); };
  label();
  button.title = "copy to the clipboard";
  button.addEventListener("click", async () => {
    const text = model.get("text");
    try {
      await navigator.clipboard.writeText(text);
    } catch (error) {  // no clipboard API (an insecure origin): a selected textarea and execCommand
      const area = document.createElement("textarea");
      area.value = text;
      document.body.appendChild(area);
      area.select();
      document.execCommand("copy");
      area.remove();
    }
    button.textContent = "Copied ✓";
    setTimeout(label, 1500);
  });
  model.on("change:label", label);
  model.on("change:text", label);
  el.appendChild(button);
}
export default { render };
"""


class CopyButton(anywidget.AnyWidget):
    _esm = _ESM
    text = traitlets.Unicode("").tag(sync=True)
    label = traitlets.Unicode("Copy snippet").tag(sync=True)

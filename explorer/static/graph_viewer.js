// tcompile graph viewer: draws the scene Python laid out with Graphviz (explorer/views/graph_layout.py).
// Pan (drag, arrow keys), zoom (wheel, + / -), fit (0 or the Fit button), click a module to open it,
// click an open module's title to close it, click a node for its source line and kernel.
// Every text from the capture goes through textContent: nothing from torch is read as markup.

const SVG = "http://www.w3.org/2000/svg";
const PAD_Y = 10, LINE = 16;

const READABLE = 0.82;  // the least zoom a fit or a search goes to: 11 px sub-labels stay above 9 px, 12 px labels 9.8 px

function svg(name, attrs = {}, parent = null) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

function html(name, attrs = {}, text = null, parent = null) {
  const node = document.createElement(name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== null) node.textContent = text;
  if (parent) parent.appendChild(node);
  return node;
}

function render({ model, el }) {
  el.classList.add("tc-gv", "tc-gv-interactive");
  const toolbar = html("div", { class: "tc-gv-toolbar" }, null, el);
  const search = html("input", { type: "search", placeholder: "search nodes: softmax, linear, line text…",
                                 "aria-label": "search nodes" }, null, toolbar);
  const count = html("span", { class: "tc-gv-count" }, "", toolbar);
  const buttons = {};
  for (const [key, label, title] of [["fit", "Fit", "fit the whole graph (0)"], ["in", "+", "zoom in (+)"],
                                     ["out", "−", "zoom out (-)"], ["collapse", "Reset", "back to the opening view: modules closed"]]) {
    buttons[key] = html("button", { type: "button", title, class: `tc-gv-${key}` }, label, toolbar);
  }
  // colour modules by the compile seconds sampled on them (scene.compile_s_max: there is such data)
  const heatLabel = html("label", { class: "tc-gv-heat", title: "shade each module by the compile time sampled on it" },
                         null, toolbar);
  const heatBox = html("input", { type: "checkbox" }, null, heatLabel);
  heatLabel.append(" compile time");
  heatBox.checked = !!model.get("colour_compile");
  heatBox.addEventListener("change", () => { model.set("colour_compile", heatBox.checked); model.save_changes(); draw(); });
  html("span", { class: "tc-gv-hint" }, "drag to pan · wheel or +/− to zoom · click a module to open it", toolbar);
  const viewport = html("div", { class: "tc-gv-viewport", tabindex: "0" }, null, el);
  const root = svg("svg", {}, viewport);
  const defs = svg("defs", {}, root);
  const marker = svg("marker", { id: "tc-gv-arrow-" + Math.random().toString(36).slice(2), viewBox: "0 0 10 10",
                                 refX: "9", refY: "5", markerWidth: "7", markerHeight: "7", orient: "auto" }, defs);
  svg("path", { d: "M0,0L10,5L0,10z", class: "tc-gv-arrowhead" }, marker);
  const layer = svg("g", {}, root);
  const busy = html("div", { class: "tc-gv-busy" }, "", viewport);
  const details = html("div", { class: "tc-gv-details" }, null, el);
  details.appendChild(html("span", { class: "tc-gv-muted" }, "Click a node for its source line (and, after Inductor, its kernel)."));

  let view = { x: 0, y: 0, k: 1 };
  let boxes = new Map();  // id → {entry, node}
  let selected = null;
  let fitted = false;

  const apply = () => layer.setAttribute("transform", `translate(${view.x},${view.y}) scale(${view.k})`);
  const size = () => ({ w: viewport.clientWidth || 800, h: viewport.clientHeight || 560 });

  // Never fitted below a readable zoom: labels are 11–12 px, so below READABLE they would read under 9 px.
  // What does not fit at READABLE shows its top left at that zoom; drag, the keys or the wheel reach the rest.
  function fitTo(x, y, w, h, most = 1.25) {
    const { w: W, h: H } = size();
    const k = Math.min((W - 24) / Math.max(w, 1), (H - 24) / Math.max(h, 1), most);
    if (k < READABLE) {
      view = { k: READABLE, x: (w * READABLE < W - 24 ? (W - w * READABLE) / 2 : 12) - x * READABLE, y: 12 - y * READABLE };
    } else view = { k, x: (W - w * k) / 2 - x * k, y: Math.max(12, (H - h * k) / 2) - y * k };
    apply();
  }
  // The whole picture: a picture too tall to read when fitted first makes the viewport taller (up to 85 % of
  // the window), so a model of a few dozen boxes opens whole and readable; a taller one shows its top.
  const BASE_HEIGHT = 560;
  function fitAll() {
    const s = model.get("scene");
    if (!s || !s.width) return;
    const { w: W } = size();
    const tallest = Math.round((window.innerHeight || 1000) * 0.85);
    const wanted = Math.min(Math.max(BASE_HEIGHT, s.height * READABLE + 24), tallest);
    if ((W - 24) / s.width >= READABLE && wanted > viewport.clientHeight) viewport.style.height = `${wanted}px`;
    const { h: H } = size();
    const boxesOf = s.boxes || [];
    if (Math.min((W - 24) / s.width, (H - 24) / s.height) >= READABLE || !boxesOf.length) {
      fitTo(0, 0, s.width, s.height);
      return;
    }
    // too big to read whole: its first row of boxes, at a readable zoom — never the picture's empty corner with
    // the first box cut at the edge (Mask R-CNN's AOT graph opened so; issue 46)
    firstRow(boxesOf, READABLE, W, Math.min(...boxesOf.map((b) => b.y)) - 8, null);
  }

  // The first row of ``inside`` (the boxes within 1.5 box heights of the top one) at zoom k, from ``top``: centred
  // when it fits (from ``titleX`` when that shows it whole too), else from its first box on the left — never the
  // middle of a row wider than the view (a row of 39 getitem boxes opened in its middle; issue 46).
  function firstRow(inside, k, W, top, titleX) {
    const y0 = Math.min(...inside.map((b) => b.y)), hmin = Math.min(...inside.map((b) => b.h));
    const row = inside.filter((b) => b.y <= y0 + 1.5 * hmin);
    const fx0 = Math.min(...row.map((b) => b.x)), fx1 = Math.max(...row.map((b) => b.x + b.w));
    let x;
    if ((fx1 - fx0 + 16) * k <= W - 24) {
      x = titleX !== null && (fx1 - titleX + 8) * k <= W - 24 ? 12 - titleX * k : W / 2 - ((fx0 + fx1) / 2) * k;
    } else x = 12 - (fx0 - 8) * k;
    view = { k, x, y: 12 - top * k };
    apply();
  }

  function zoomAt(factor, cx, cy) {
    const k = Math.min(4, Math.max(0.02, view.k * factor));
    view = { k, x: cx - (cx - view.x) * (k / view.k), y: cy - (cy - view.y) * (k / view.k) };
    apply();
  }

  function heat(entry, scene, rect) {
    if (!model.get("colour_compile") || !scene.compile_s_max || !entry.compile_s) return;
    const share = entry.compile_s / scene.compile_s_max;
    rect.setAttribute("style", `fill: rgba(234, 88, 12, ${(0.12 + 0.6 * share).toFixed(3)})`);
    rect.classList.add("tc-gv-heated");
  }

  function draw() {
    const scene = model.get("scene") || {};
    heatLabel.style.display = scene.compile_s_max ? "" : "none";
    layer.replaceChildren();
    boxes = new Map();
    for (const c of [...(scene.clusters || [])].sort((a, b) => a.depth - b.depth)) {
      const g = svg("g", { class: `tc-gv-cluster tc-gv-${c.kind}`, "data-id": c.id }, layer);
      svg("rect", { x: c.x, y: c.y, width: c.w, height: c.h, rx: 6 }, g);  // open: not shaded (it holds its boxes)
      const title = svg("text", { x: c.x + 8, y: c.y + 16 }, g);
      title.textContent = "▾ " + c.label;
      title.addEventListener("click", (event) => { event.stopPropagation(); toggle(c.id, false); });
    }
    const arrow = `url(#${marker.id})`;
    for (const e of scene.edges || []) svg("path", { d: e.d, class: "tc-gv-edge", "marker-end": arrow }, layer);
    for (const b of scene.boxes || []) {
      const g = svg("g", { class: `tc-gv-box tc-gv-${b.kind}`, "data-id": b.id }, layer);
      heat(b, scene, svg("rect", { x: b.x, y: b.y, width: b.w, height: b.h, rx: 5 }, g));
      b.label.forEach((line, i) => {
        const t = svg("text", { x: b.x + b.w / 2, y: b.y + PAD_Y + (i + 0.75) * LINE, "text-anchor": "middle",
                                class: i ? "tc-gv-sub" : "tc-gv-head" }, g);
        t.textContent = (i === 0 && b.group ? "▸ " : "") + line;
      });
      const tip = svg("title", {}, g);
      tip.textContent = (b.group ? `${b.label.join(" · ")} — click to open` : b.label.join("\n"))
        + (b.compile_s ? ` · ${b.compile_s.toFixed(2)} s compile time (sampled)` : "");
      g.addEventListener("click", (event) => {
        if (moved) return;
        event.stopPropagation();
        if (b.group) toggle(b.id, true); else select(b);
      });
      boxes.set(b.id, { entry: b, node: g });
    }
    highlight();
    if (selected && boxes.has(selected)) boxes.get(selected).node.classList.add("tc-gv-selected");
  }

  function toggle(id, open) {
    let expanded = [...(model.get("expanded") || [])];
    if (open) expanded.push(id);
    else expanded = expanded.filter((e) => e !== id && !isInside(e, id));
    busy.textContent = "laying out…";
    model.set("focus", id);
    model.set("expanded", expanded);
    model.save_changes();
  }
  const isInside = (child, parent) => {
    // ids nest: "m:transformer.h.0" lies in "m:transformer.h"; runs name their parent ("r:m:x:…")
    const path = (s) => s.replace(/^m:/, "");
    return (child.startsWith("m:") && parent.startsWith("m:") && path(child).startsWith(path(parent) + "."))
      || child.startsWith(`r:${parent}:`);
  };

  function focusOn(id) {
    const scene = model.get("scene") || {};
    const cluster = (scene.clusters || []).find((c) => c.id === id);
    const box = (scene.boxes || []).find((b) => b.id === id);
    const target = cluster || box;
    if (!target) return;
    const { w: W, h: H } = size();
    if (cluster) focusCluster(cluster, scene.boxes || [], W, H);
    else {  // a box: centred, at a readable zoom
      const k = Math.max(view.k, READABLE);
      view = { k, x: W / 2 - (box.x + box.w / 2) * k, y: H / 2 - (box.y + box.h / 2) * k };
      apply();
    }
  }

  // An opened group lands on its boxes: all of them when they read whole, else its first row (where its
  // inputs come in), centred on those boxes at a readable zoom — never on the group's empty corner.
  function focusCluster(cluster, sceneBoxes, W, H) {
    const within = (b) => b.x >= cluster.x - 1 && b.y >= cluster.y - 1 && b.x + b.w <= cluster.x + cluster.w + 1
      && b.y + b.h <= cluster.y + cluster.h + 1;
    const inside = sceneBoxes.filter(within);
    if (!inside.length) { fitTo(cluster.x, cluster.y, cluster.w, cluster.h); return; }
    const x0 = Math.min(...inside.map((b) => b.x)), x1 = Math.max(...inside.map((b) => b.x + b.w));
    const y0 = Math.min(...inside.map((b) => b.y)), y1 = Math.max(...inside.map((b) => b.y + b.h));
    const top = cluster.y;  // from its title
    if (Math.min((W - 24) / (x1 - x0 + 16), (H - 24) / (y1 - top + 8)) >= READABLE) {
      fitTo(x0 - 8, top, x1 - x0 + 16, y1 - top + 8);
      return;
    }
    const first = inside.filter((b) => b.y <= y0 + 1.5 * Math.min(...inside.map((c) => c.h)));
    const fx0 = Math.min(...first.map((b) => b.x)), fx1 = Math.max(...first.map((b) => b.x + b.w));
    const k = Math.max(READABLE, Math.min(1.25, (W - 24) / Math.max(fx1 - fx0 + 16, 1)));
    firstRow(inside, k, W, top, cluster.x);  // its title in view too, where the first row allows
  }

  function highlight() {
    const matches = model.get("matches") || {};
    let nodes = 0, shown = 0;
    for (const [id, { node }] of boxes) {
      const hit = matches[id] || 0;
      node.classList.toggle("tc-gv-match", hit > 0);
      if (hit) { nodes += hit; shown += 1; }
    }
    const query = model.get("query");
    count.textContent = query ? `${nodes} matching node${nodes === 1 ? "" : "s"} in ${shown} box${shown === 1 ? "" : "es"}` : "";
  }

  function select(b) {
    if (selected && boxes.has(selected)) boxes.get(selected).node.classList.remove("tc-gv-selected");
    selected = b.id;
    boxes.get(b.id).node.classList.add("tc-gv-selected");
    const info = b.info || {};
    details.replaceChildren();
    const head = html("div", {}, null, details);
    html("strong", {}, info.name || b.label[0], head);
    head.append(` (${info.op || b.kind})`);
    const dl = html("dl", {}, null, details);
    const row = (term, value) => { if (value === undefined || value === null || value === "") return;
      html("dt", {}, term, dl); html("dd", {}, String(value), dl); };
    row("target", info.target);
    row("type", info.type);
    row("module", info.module ? info.module + (info.module_guessed ? " (guessed)" : "") : null);
    if (info.line) row("source", `${info.file}:${info.line}` + (info.function ? ` in ${info.function}` : ""));
    else row("source", "no source line (torch made this node, e.g. an input or the output)");
    if (info.kernels && info.kernels.length) row("kernel", info.kernels.join(", "));
    if (info.code) html("pre", { class: "tc-gv-code" }, info.code, details);
  }

  // pan, zoom, keys
  let drag = null, moved = false;
  viewport.addEventListener("pointerdown", (event) => {
    if (event.button !== 0) return;
    drag = { x: event.clientX, y: event.clientY, vx: view.x, vy: view.y };
    moved = false;
  });
  viewport.addEventListener("pointermove", (event) => {
    if (!drag) return;
    const dx = event.clientX - drag.x, dy = event.clientY - drag.y;
    if (!moved && Math.hypot(dx, dy) < 4) return;
    if (!moved) { moved = true; viewport.setPointerCapture(event.pointerId); viewport.classList.add("tc-gv-dragging"); }
    view.x = drag.vx + dx; view.y = drag.vy + dy; apply();
  });
  const endDrag = () => { drag = null; viewport.classList.remove("tc-gv-dragging"); setTimeout(() => { moved = false; }, 0); };
  viewport.addEventListener("pointerup", endDrag);
  viewport.addEventListener("pointercancel", endDrag);
  viewport.addEventListener("wheel", (event) => {
    event.preventDefault();
    const r = viewport.getBoundingClientRect();
    zoomAt(Math.exp(-event.deltaY * 0.0015), event.clientX - r.left, event.clientY - r.top);
  }, { passive: false });
  viewport.addEventListener("keydown", (event) => {
    const { w: W, h: H } = size();
    const step = 60;
    const keys = { "+": () => zoomAt(1.25, W / 2, H / 2), "=": () => zoomAt(1.25, W / 2, H / 2),
                   "-": () => zoomAt(0.8, W / 2, H / 2), "0": fitAll, "f": fitAll,
                   ArrowLeft: () => { view.x += step; apply(); }, ArrowRight: () => { view.x -= step; apply(); },
                   ArrowUp: () => { view.y += step; apply(); }, ArrowDown: () => { view.y -= step; apply(); } };
    if (keys[event.key]) { event.preventDefault(); event.stopPropagation(); keys[event.key](); }
  });
  buttons.fit.addEventListener("click", fitAll);
  buttons.in.addEventListener("click", () => { const { w, h } = size(); zoomAt(1.25, w / 2, h / 2); });
  buttons.out.addEventListener("click", () => { const { w, h } = size(); zoomAt(0.8, w / 2, h / 2); });
  buttons.collapse.addEventListener("click", () => {
    model.set("focus", ""); model.set("expanded", []); model.save_changes(); fitted = false;
  });
  let timer = null;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => { model.set("query", search.value); model.save_changes(); }, 150);
  });
  // Search: the first hit is centred at a readable zoom as soon as the matches arrive; Enter steps on
  // through the hits (innermost first: opened nodes before closed groups), saying which one is shown
  let nextMatch = 0;
  const hitIds = () => Object.keys(model.get("matches") || {}).filter((id) => boxes.has(id))
    .sort((a, b) => (a.startsWith("n:") ? 0 : 1) - (b.startsWith("n:") ? 0 : 1));
  function showHit() {
    const hits = hitIds();
    if (!hits.length) return;
    const index = nextMatch++ % hits.length;
    focusOn(hits[index]);
    for (const { node } of boxes.values()) node.classList.remove("tc-gv-current");
    boxes.get(hits[index]).node.classList.add("tc-gv-current");
    highlight();
    count.textContent += ` · box ${index + 1} of ${hits.length} shown (Enter: next)`;
  }
  search.addEventListener("keydown", (event) => {
    event.stopPropagation();  // keep Lab's shortcuts out
    if (event.key === "Enter") showHit();
  });

  model.on("change:scene", () => {
    busy.textContent = model.get("error") || "";
    draw();
    const focus = model.get("focus");
    if (focus && fitted) focusOn(focus); else { fitAll(); fitted = true; }
  });
  // a new search shows its first hit; matches that change because a group opened or closed (same query) do not move the view
  let shownQuery = "";
  model.on("change:matches", () => {
    highlight();
    const query = model.get("query");
    if (query && query !== shownQuery) { nextMatch = 0; showHit(); }
    shownQuery = query;
  });
  model.on("change:error", () => { busy.textContent = model.get("error") || ""; });

  draw();
  // fit once the viewport has its size (the tab may be hidden when the widget is first drawn)
  const observer = new ResizeObserver(() => { if (!fitted && viewport.clientWidth > 0) { fitAll(); fitted = true; } });
  observer.observe(viewport);
  requestAnimationFrame(() => { if (viewport.clientWidth > 0) { fitAll(); fitted = true; } });
  return () => observer.disconnect();
}

export default { render };

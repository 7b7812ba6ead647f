"""Figure — the notebook's static copy (``render_static(cap, fallback=True)``, budget 1 MB for ANY capture)
and the seconds it takes, for captures of N compiles made by repeating a real recorded trace's capture
(tests/sized_captures.py), with the tcompile of REPO (before → after on the same machine):

    python bench/static_copy_size.py REPO 300 3000 20000
"""
import json
import resource
import sys
import time
from pathlib import Path

repo = sys.argv[1]
sys.path.insert(0, repo)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
import sized_captures  # noqa: E402

data = sized_captures.seed_data()
from explorer.page import render_static  # noqa: E402

for n in map(int, sys.argv[2:]):
    cap = sized_captures.replicated_capture(n, data)
    start = time.perf_counter()
    html = render_static(cap, fallback=True)
    print(json.dumps({"repo": repo, "compiles": n, "static_bytes": len(html.encode()),
                      "seconds": round(time.perf_counter() - start, 2),
                      "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3}), flush=True)

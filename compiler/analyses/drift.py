"""Measuring drift from eager (``compiler.stages.drift``): compiled outputs against eager's, per output.

    drift = measure(compiled_outputs, eager_outputs)   # each: the list of every call's return value
    print(drift.as_text())
"""
from __future__ import annotations

from compiler.stages.drift import Drift, OutputDrift, meaning_of

METHOD = ("each output of the replayed calls, compiled without any fix against eager on copies of the same "
          "arguments: relative L2 error ‖compiled − eager‖₂/‖eager‖₂ and max abs error in float64, "
          "torch.testing.assert_close at the dtype's defaults")


def output_names(outputs) -> list[str]:
    """Each leaf's path in the calls' return values (``[0]['boxes']``), the call's index left out for one call."""
    import torch.utils._pytree as pytree

    paths = [pytree.keystr(path) for path, _ in pytree.tree_flatten_with_path(outputs)[0]]
    if isinstance(outputs, list) and len(outputs) == 1:
        paths = [p.removeprefix("[0]") or "output" for p in paths]
    return paths


def measure(compiled, eager) -> Drift:
    """``compiled`` (every replayed call's outputs, a list) against ``eager`` → the Drift, with each output's
    likely meaning."""
    from compiler.analyses.fix_verdicts import compare

    comparison = compare(compiled, eager, "the compile without any fix vs eager")
    drift = Drift(calls=len(eager) if isinstance(eager, list) else 1, method=METHOD, note=comparison.note)
    names = output_names(eager)
    for error in comparison.outputs:
        output = OutputDrift(name=names[error.index] if error.index < len(names) else f"output {error.index}",
                             kind=error.kind, shape=error.shape, reference_shape=error.reference_shape,
                             rel_l2=error.rel_l2, max_abs=error.max_abs, close=error.close)
        output.meaning = meaning_of(output)
        drift.outputs.append(output)
    return drift

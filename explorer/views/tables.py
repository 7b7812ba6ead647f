"""The capture's tables as pandas DataFrames, for sorting and filtering in a notebook."""
from __future__ import annotations


def dataframes(capture) -> dict:
    """``compiles``, ``guards``, ``breaks``, ``recompiles``, ``kernels`` and ``compile_phases``."""
    import pandas as pd

    def per_compile(stage_name: str) -> pd.DataFrame:
        frames = [c.stage(stage_name).table.assign(compile_id=c.compile_id)
                  for c in capture.compiles if c.stage(stage_name).available]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    compiles = pd.DataFrame([{"compile_id": c.compile_id, "name": c.name, "status": c.status,
                              "ops": c.graph.op_count if c.graph.available else None,
                              "guards": c.guards.count if c.guards.available else None,
                              "compile_time_s": c.metrics.get("entire_frame_compile_time_s")}
                             for c in capture.compiles])
    recompiles = pd.DataFrame([{"compile_id": r.compile_id, "name": r.name, **reason.to_data()}
                               for r in capture.recompiles for reason in r.reasons])
    return {"compiles": compiles, "guards": capture.guards_df, "breaks": capture.breaks.table,
            "recompiles": recompiles, "kernels": per_compile("kernels"),
            "compile_phases": per_compile("timings")}

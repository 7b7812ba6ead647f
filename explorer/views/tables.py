"""The capture's tables as pandas DataFrames, for sorting and filtering in a notebook."""
from __future__ import annotations


def dataframes(capture) -> dict:
    """``compiles``, ``guards``, ``breaks``, ``recompiles``, ``kernels`` and ``compile_phases``."""
    import pandas as pd

    def per_compile(stage_name: str, key: str) -> pd.DataFrame:
        frames = [c.stage(stage_name).table(key).assign(compile_id=c.compile_id)
                  for c in capture.compiles if c.stage(stage_name).available]
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()

    compiles = pd.DataFrame([{"compile_id": c.compile_id, "name": c.name, "status": c.status,
                              "ops": c.graph.get("op_count"), "guards": c.guards.get("count"),
                              "compile_time_s": c.metrics.get("entire_frame_compile_time_s")}
                             for c in capture.compiles])
    recompiles = pd.DataFrame([{"compile_id": r["compile_id"], "name": r.get("name"), **reason}
                               for r in capture.recompiles for reason in r.get("reasons", [])])
    return {"compiles": compiles, "guards": capture.guards_df, "breaks": capture.breaks.table("items"),
            "recompiles": recompiles, "kernels": per_compile("kernels", "kernels"),
            "compile_phases": per_compile("timings", "phases")}

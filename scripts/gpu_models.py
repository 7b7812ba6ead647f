"""Small real models for checking GPU costs against Nsight Compute (issue 26).

`python -m scripts.gpu_models capture OUT_DIR [NAME …]`: capture each model with `compiler.run` (fresh
Inductor cache, inference under no_grad) and save `<name>.json`.
`python -m scripts.gpu_models ncu-target NAME`: compile the same model the same way, warm it up, and
call it once between cudaProfilerStart/Stop — the process to run under
`ncu --profile-from-start off` (see compiler.capturing.ncu), so only that one call's kernels are measured.
"""
import sys
from pathlib import Path

import torch


def gpt2(layers: int = 2, batch: int = 8, seq: int = 256, dtype=torch.float32):
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=layers, use_cache=False)
    model = GPT2LMHeadModel(config).to("cuda", dtype).eval()
    ids = torch.randint(0, config.vocab_size, (batch, seq), device="cuda")

    def f(ids):
        with torch.no_grad():
            return model(input_ids=ids).logits

    return f, (ids,)


def resnet18(batch: int = 32):
    import torchvision

    model = torchvision.models.resnet18().cuda().eval()
    x = torch.randn(batch, 3, 224, 224, device="cuda")

    def f(x):
        with torch.no_grad():
            return model(x)

    return f, (x,)


def timm_model(name: str, batch: int = 32):
    import timm

    model = timm.create_model(name, pretrained=False).cuda().eval()
    x = torch.randn(batch, 3, 224, 224, device="cuda")

    def f(x):
        with torch.no_grad():
            return model(x)

    return f, (x,)


MODELS = {"gpt2_2layer": gpt2, "resnet18": resnet18, "vit_tiny": lambda: timm_model("vit_tiny_patch16_224"),
          "convnext_atto": lambda: timm_model("convnext_atto"),
          "gpt2_4layer_bf16": lambda: gpt2(layers=4, batch=4, seq=512, dtype=torch.bfloat16)}


def capture(out_dir: Path, names) -> None:
    import json
    import time

    import compiler

    for name in names:
        start = time.perf_counter()
        fn, args = MODELS[name]()
        cap = compiler.run(fn, args, fresh=True, errors="return", options={"case": name})
        path = cap.save(out_dir / f"{name}.json")
        print(json.dumps({"model": name, "seconds": round(time.perf_counter() - start, 1),
                          "bytes": path.stat().st_size, "error": str(cap.error) if cap.error else None}), flush=True)
        torch._dynamo.reset()


def ncu_target(name: str) -> None:
    from torch._inductor.utils import fresh_cache

    fn, args = MODELS[name]()
    with fresh_cache():
        compiled = torch.compile(fn)
        for _ in range(3):
            compiled(*args)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        compiled(*args)
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStop()


if __name__ == "__main__":
    if sys.argv[1] == "capture":
        out = Path(sys.argv[2])
        out.mkdir(parents=True, exist_ok=True)
        capture(out, sys.argv[3:] or list(MODELS))
    else:
        ncu_target(sys.argv[2])

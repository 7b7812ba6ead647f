"""Real models, built from their configs (no weights), for checking GPU costs against Nsight Compute (issue 26).

`python -m compiler gpu-profile -o NAME.json scripts/gpu_models.py run NAME`: the model captured by
`compiler.run` (fresh Inductor cache) and measured by ncu — what `scripts/verify_gpu_models.py` runs per model.
`python -m scripts.gpu_models capture OUT_DIR [NAME …]`: capture each model with `compiler.run` (fresh
Inductor cache, inference under no_grad) and save `<name>.json`.
`python -m scripts.gpu_models ncu-target NAME`: compile the same model the same way, warm it up, and
call it once between cudaProfilerStart/Stop — the process to run under
`ncu --profile-from-start off` (see compiler.capturing.ncu), so only that one call's kernels are measured.
"""
import sys
from pathlib import Path

import torch

if __package__ in (None, ""):  # run as a script (gpu-profile runs `python scripts/gpu_models.py run NAME`)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


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


def llama(layers: int = 4, batch: int = 4, seq: int = 512, dtype=torch.bfloat16):
    """A Llama-style decoder (RMSNorm, rotary embeddings, SwiGLU, grouped-query attention) in bf16."""
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=layers, num_attention_heads=16,
                         num_key_value_heads=4, vocab_size=32000, max_position_embeddings=2048, use_cache=False)
    model = LlamaForCausalLM(config).to("cuda", dtype).eval()
    ids = torch.randint(0, config.vocab_size, (batch, seq), device="cuda")

    def f(ids):
        with torch.no_grad():
            return model(input_ids=ids).logits

    return f, (ids,)


def torchvision_model(name: str, batch: int = 32):
    import torchvision

    model = getattr(torchvision.models, name)(weights=None).cuda().eval()
    x = torch.randn(batch, 3, 224, 224, device="cuda")

    def f(x):
        with torch.no_grad():
            return model(x)

    return f, (x,)


def maskrcnn(images: int = 2):
    """Mask R-CNN (ResNet-50 FPN) inference on two 480 × 640 images: detection's data-dependent shapes make graph
    breaks and several compiles."""
    import torchvision

    model = torchvision.models.detection.maskrcnn_resnet50_fpn(weights=None, weights_backbone=None).cuda().eval()
    batch = [torch.rand(3, 480, 640, device="cuda") for _ in range(images)]

    def f(batch):
        with torch.no_grad():
            return model(batch)

    return f, (batch,)


def train_adamw(batch: int = 8, seq: int = 256):
    """One training step of GPT-2 (2 layers) under bf16 autocast: forward, loss, backward, AdamW step."""
    from transformers import GPT2Config, GPT2LMHeadModel

    config = GPT2Config(n_layer=2, use_cache=False)
    model = GPT2LMHeadModel(config).cuda().train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, config.vocab_size, (batch, seq), device="cuda")

    def step(ids):
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.detach()

    return step, (ids,)


MODELS = {"gpt2_2layer": gpt2, "resnet18": resnet18, "vit_tiny": lambda: timm_model("vit_tiny_patch16_224"),
          "convnext_atto": lambda: timm_model("convnext_atto"),
          "gpt2_4layer_bf16": lambda: gpt2(layers=4, batch=4, seq=512, dtype=torch.bfloat16),
          # the models of issue 26
          "gpt2_small": lambda: gpt2(layers=12), "llama_bf16": llama, "resnet50": lambda: torchvision_model("resnet50"),
          "convnext_tiny": lambda: timm_model("convnext_tiny"), "efficientnet_b0": lambda: timm_model("efficientnet_b0"),
          "maskrcnn": maskrcnn, "train_adamw": train_adamw}


def run(name: str) -> None:
    """Capture one model's call with compiler.run (fresh Inductor cache): the call gpu-profile measures."""
    import compiler

    fn, args = MODELS[name]()
    cap = compiler.run(fn, *args, fresh=True, errors="return", options={"case": name})
    print(f"{name}: {len(cap.compiles)} compiles, error: {cap.error.as_text() if cap.error else None}", flush=True)


def capture(out_dir: Path, names) -> None:
    import json
    import time

    import compiler

    for name in names:
        start = time.perf_counter()
        fn, args = MODELS[name]()
        cap = compiler.run(fn, *args, fresh=True, errors="return", options={"case": name})
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
    if sys.argv[1] == "run":
        run(sys.argv[2])
    elif sys.argv[1] == "capture":
        out = Path(sys.argv[2])
        out.mkdir(parents=True, exist_ok=True)
        capture(out, sys.argv[3:] or list(MODELS))
    else:
        ncu_target(sys.argv[2])

"""The GPU cases tcompile ships recorded captures of (issue: GPU stages). Each case returns
``(fn, args, compile_kwargs, calls)``: ``calls`` are extra argument tuples called after the
first (e.g. other shapes), so recompiles and CUDA-graph re-recording show up."""
import torch


def pointwise_chain():
    def f(x):
        return (x.sin() * x.cos() + 1).relu() * 2

    return f, (torch.randn(4096, 1024, device="cuda"),), {}, []


def softmax_layernorm():
    norm = torch.nn.LayerNorm(1024).cuda()

    def f(x):
        return norm(torch.softmax(x, -1) * 3)

    return f, (torch.randn(2048, 1024, device="cuda"),), {}, []


def matmul_epilogue_max_autotune():
    bias = torch.randn(1024, device="cuda", dtype=torch.float16)

    def f(a, b):
        return torch.relu(a @ b + bias) * 0.5

    args = (torch.randn(1024, 1024, device="cuda", dtype=torch.float16),
            torch.randn(1024, 1024, device="cuda", dtype=torch.float16))
    return f, args, {"mode": "max-autotune-no-cudagraphs"}, []


def mlp_forward_backward():
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 512)).cuda()

    def step(x):
        loss = model(x).pow(2).mean()
        loss.backward()
        return loss.detach()

    return step, (torch.randn(256, 512, device="cuda"),), {}, []


def reduce_overhead_small_model():
    model = torch.nn.Sequential(*[torch.nn.Linear(64, 64) for _ in range(8)]).cuda().eval()

    def f(x):
        with torch.no_grad():
            return model(x).tanh()

    return f, (torch.randn(8, 64, device="cuda"),), {"mode": "reduce-overhead"}, []


def cudagraphs_skipped_input_mutation():
    def f(buf, x):
        buf.add_(1)
        return x * 2 + buf

    return f, (torch.zeros(64, device="cuda"), torch.randn(64, device="cuda")), {"mode": "reduce-overhead"}, []


def dynamic_shapes_rerecord():
    def f(x):
        return (x * 2).sum(0).sigmoid()

    calls = [(torch.randn(n, 128, device="cuda"),) for n in (64, 96, 128)]
    return f, (torch.randn(32, 128, device="cuda"),), {"mode": "reduce-overhead", "dynamic": True}, calls


def cudagraph_output_overwritten():
    """Keeping the output of one replay while calling again: the next replay overwrites it."""
    def f(x):
        return x.sin() * 2

    return f, (torch.randn(256, device="cuda"),), {"mode": "reduce-overhead", "_keep_first_output": True}, []


def graph_break_repeated_kernel_names():
    """Two compiled graphs around an eager matmul (a graph break): Inductor names each graph's fused kernel
    alike (``triton_poi_fused_mul_sin_0``), and the profiler sums launches by name."""
    eager_mm = torch._dynamo.disable(lambda a, b: a @ b)
    w = torch.randn(1024, 1024, device="cuda")

    def f(x):
        y = eager_mm(x.sin() * 2, w)
        return y.sin() * 2

    return f, (torch.randn(4096, 1024, device="cuda"),), {}, []


CASES = {fn.__name__: fn for fn in (pointwise_chain, softmax_layernorm, matmul_epilogue_max_autotune,
                                    mlp_forward_backward, reduce_overhead_small_model,
                                    cudagraphs_skipped_input_mutation, dynamic_shapes_rerecord,
                                    cudagraph_output_overwritten, graph_break_repeated_kernel_names)}

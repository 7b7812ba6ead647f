"""Operations the detector calls from another file (like torchvision.ops)."""
import torch


def roi_pool(features, boxes, spatial_scale: float):
    # a float argument used in Python arithmetic: Dynamo specialises it, one compile per value
    size = int(round(8 * spatial_scale)) + 1
    scaled = boxes * spatial_scale
    pooled = torch.nn.functional.adaptive_avg_pool2d(features, size)
    return pooled.flatten(1).sum(1, keepdim=True) + scaled.sum()


def normalize(x):
    return (x - x.mean()) / (x.std() + 1e-5)

"""The detector: backbone → proposals (a loop Dynamo skips) → multi-scale pooling (recompiles) → head."""
import torch
from torch import nn

from . import ops

SCALES = [1.0 / (2 + i) for i in range(10)]  # more scales than torch's recompile limit (8)


def filter_proposals(scores, boxes):
    kept = []
    for i in range(scores.shape[0]):
        if scores[i] > 0:  # data-dependent branch inside a loop: Dynamo skips the whole frame
            kept.append(boxes[i])
    return torch.stack(kept) if kept else boxes[:1]


def multiscale_pool(features, boxes):
    pooled = []
    for scale in SCALES:
        if not torch.isfinite(boxes).all():  # a check in the loop: this frame is skipped too
            raise ValueError("boxes must be finite")
        pooled.append(ops.roi_pool(features, boxes, scale))  # a new float each time: recompiles
    return torch.cat(pooled, dim=1)


def sharpen(features):
    # ops.normalize (ops.py) and this line fuse into one kernel: its lines come from two files
    return ops.normalize(features).relu() * 2


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1))
        self.scorer = nn.Linear(8, 1)
        self.head = nn.Linear(len(SCALES), 4)

    def forward(self, image, boxes):
        features = sharpen(self.backbone(image))
        scores = self.scorer(features.mean((2, 3)).expand(boxes.shape[0], -1)).squeeze(1)
        kept = filter_proposals(scores, boxes)
        pooled = multiscale_pool(features, kept)
        return self.head(pooled).softmax(-1)


def example_inputs():
    torch.manual_seed(0)
    return torch.randn(1, 3, 16, 16), torch.rand(6, 4)

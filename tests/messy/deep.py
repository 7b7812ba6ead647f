"""A deep module tree, the way a detection model's backbone is one (backbone.body.layerN.M.convK,
downsample inside blocks): four stages of blocks, each block five modules deep."""
import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, channels, downsample=False):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels)
        self.conv2, self.bn2 = nn.Conv2d(channels, channels, 3, padding=1), nn.BatchNorm2d(channels)
        self.relu = nn.ReLU()
        self.downsample = nn.Sequential(nn.Conv2d(channels, channels, 1), nn.BatchNorm2d(channels)) if downsample else None

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + (self.downsample(x) if self.downsample is not None else x))


class Body(nn.Module):
    def __init__(self, channels=8, blocks=(3, 4, 6, 3)):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, channels, 3, padding=1), nn.BatchNorm2d(channels), nn.ReLU())
        for index, count in enumerate(blocks, start=1):
            setattr(self, f"layer{index}", nn.Sequential(*(Block(channels, downsample=i == 0) for i in range(count))))

    def forward(self, x):
        x = self.stem(x)
        for index in range(1, 5):
            x = getattr(self, f"layer{index}")(x)
        return x


class Backbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = Body()
        self.fpn = nn.Conv2d(8, 8, 1)

    def forward(self, x):
        return self.fpn(self.body(x))


class DeepModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = Backbone()
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.backbone(x).mean((2, 3)))


def example_input():
    torch.manual_seed(0)
    return torch.randn(1, 3, 16, 16)

"""Small networks and program features (several methods, dtypes, dynamic shapes, state across
calls, memory layouts) of the fixtures, portable or lowered to XNNPACK.

Export environment only (torch + executorch): imported by tools/export_fixtures.py.
"""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F


class Add(nn.Module):
    def forward(self, x, y):
        return x + y


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 8)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1, groups=2)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16, 10)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.bn1(self.conv1(x))), 2, 2)
        x = F.hardtanh(self.bn2(self.conv2(x)), -0.5, 3.0)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return torch.softmax(self.fc(x), dim=-1)


class IntBool(nn.Module):
    def forward(self, x, mask):
        y = torch.where(mask, x * 3, x - 7)
        return y, y > 4, (x == 2), y.sum(dim=1)


class Half(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 6)

    def forward(self, x):
        return torch.sigmoid(self.fc(x)) * 2.0


class MultiMethodA(nn.Module):
    def forward(self, x):
        return x * 2.0 + 1.0


class MultiMethodB(nn.Module):
    def forward(self, x, y):
        return torch.matmul(x, y), x.mean()


class MobileNetV2(nn.Module):
    """MobileNetV2 (width 1.0) written out by hand; random seeded weights."""

    def __init__(self, num_classes=1000):
        super().__init__()

        def cbr(i, o, k, s, g=1):
            return nn.Sequential(nn.Conv2d(i, o, k, s, (k - 1) // 2, groups=g, bias=False), nn.BatchNorm2d(o),
                                 nn.ReLU6())

        class Inv(nn.Module):
            def __init__(self, i, o, s, t):
                super().__init__()
                h = i * t
                layers = [] if t == 1 else [cbr(i, h, 1, 1)]
                layers += [cbr(h, h, 3, s, h), nn.Conv2d(h, o, 1, bias=False), nn.BatchNorm2d(o)]
                self.conv = nn.Sequential(*layers)
                self.res = s == 1 and i == o

            def forward(self, x):
                return x + self.conv(x) if self.res else self.conv(x)

        cfg = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1), (6, 160, 3, 2),
               (6, 320, 1, 1)]
        feats = [cbr(3, 32, 3, 2)]
        c = 32
        for t, o, n, s in cfg:
            for k in range(n):
                feats.append(Inv(c, o, s if k == 0 else 1, t))
                c = o
        feats.append(cbr(c, 1280, 1, 1))
        self.features = nn.Sequential(*feats)
        self.classifier = nn.Linear(1280, num_classes)

    def forward(self, x):
        x = self.features(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.classifier(x)


class Encoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                                batch_first=True)

    def forward(self, x):
        return self.layer(x)


class ChannelsLast(nn.Module):
    """Inputs and outputs in channels-last (NHWC dim order) memory: ExecuTorch keeps their dim
    order in the program; callers still pass and get logical NCHW arrays."""
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x, y):
        return torch.relu(self.conv(x)) + y.mean(), x * 2.0


class KVState(nn.Module):
    """A stateful forward: a KV-cache-like buffer written at `pos` (index_put_), a running sum
    (add_ into a buffer) and a step counter; ExecuTorch writes the buffers back with copy_ and
    keeps them across calls of the same loaded method."""
    def __init__(self):
        super().__init__()
        # ExecuTorch 1.3.1 keeps no initial contents for mutated buffers (both runtimes start them
        # at zero), so they start at zero here too
        self.register_buffer("cache", torch.zeros(1, 6, 4))
        self.register_buffer("total", torch.zeros(4))
        self.register_buffer("steps", torch.zeros(1, dtype=torch.int64))

    def forward(self, x, pos):
        self.cache[:, pos] = x
        self.total.add_(x.sum(dim=(0, 1)))
        self.steps.add_(1)
        return self.cache.sum(dim=1) * 2.0, self.total + 0, self.steps * 1

"""Images as tokens: patches, a patch embedding with a <cls> token, windows and patch merging.

Shapes: B images, C channels, H x W pixels, p patch side, N = (H/p)(W/p) patches, d width,
w window side (in patches).
"""
from __future__ import annotations

import torch
from torch import nn


def patchify(images: torch.Tensor, p: int) -> torch.Tensor:
    """(B, C, H, W) -> (B, N, C p p): patches in row-major order, each flattened channel-first."""
    if images.dim() != 4:
        raise ValueError(f"images must be (B, C, H, W), got shape {tuple(images.shape)}")
    B, C, H, W = images.shape
    if H % p or W % p:
        raise ValueError(f"image size {H}x{W} is not divisible by the patch size {p}")
    x = images.reshape(B, C, H // p, p, W // p, p)                  # (B, C, H/p, p, W/p, p)
    x = x.permute(0, 2, 4, 1, 3, 5)                                 # (B, H/p, W/p, C, p, p)
    return x.reshape(B, (H // p) * (W // p), C * p * p)             # (B, N, C p p)


class PatchEmbedding(nn.Module):
    """Patches -> linear embedding, a learned <cls> token in front, learned 1-D positions added."""

    def __init__(self, channels: int, patch: int, width: int, n_patches: int):
        super().__init__()
        self.patch = patch
        self.project = nn.Linear(channels * patch * patch, width)
        self.cls = nn.Parameter(torch.zeros(1, 1, width))
        self.position = nn.Parameter(torch.randn(n_patches + 1, width) * 0.02)   # (N + 1, d)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) -> (B, N + 1, d); row 0 is the <cls> token."""
        tokens = self.project(patchify(images, self.patch))          # (B, N, d)
        if tokens.shape[1] + 1 != self.position.shape[0]:
            raise ValueError(f"expected {self.position.shape[0] - 1} patches, got {tokens.shape[1]}")
        cls = self.cls.expand(tokens.shape[0], -1, -1)               # (B, 1, d)
        return torch.cat([cls, tokens], 1) + self.position           # (B, N + 1, d)


def window_ids(grid: int, window: int, shift: int = 0) -> torch.Tensor:
    """(grid, grid) ids of the window each patch falls in, after rolling the grid by ``shift``.

    Shifted windows: the grid is rolled by ``shift`` patches (cyclically, as Swin does) before it
    is cut into ``window`` x ``window`` windows, so patches at old window borders now share one.
    """
    if grid % window:
        raise ValueError(f"a grid of {grid} patches does not split into windows of {window}")
    r = (torch.arange(grid) - shift) % grid                         # where each patch lands
    per_row = grid // window
    return (r[:, None] // window) * per_row + (r[None, :] // window)


def window_mask(grid: int, window: int, shift: int = 0) -> torch.Tensor:
    """(N, N) bool: patches that may attend to each other (the same window)."""
    ids = window_ids(grid, window, shift).flatten()
    return ids[:, None] == ids[None, :]


class PatchMerging(nn.Module):
    """Concatenate each 2 x 2 block of patches (4C features) and map them to 2C."""

    def __init__(self, channels: int):
        super().__init__()
        self.reduce = nn.Linear(4 * channels, 2 * channels, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, H, W, C) -> (B, H/2, W/2, 2C)."""
        B, H, W, C = x.shape
        if H % 2 or W % 2:
            raise ValueError(f"patch merging needs an even grid, got {H}x{W}")
        blocks = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], -1)
        return self.reduce(blocks)                                   # (B, H/2, W/2, 2C)

"""Export the test networks from real PyTorch into tests/models/ (opset 17).

    pip install torch==2.13.0 && python tests/models/export_torch.py

Writes `mlp.onnx` (Linear 32-64-64-10 with ReLU, batch 4) and `lenet.onnx`
(LeNet-5 on 1x1x28x28), the same architectures as `tools/testkit/models.py::mlp/lenet`.
The files are checked in; the tests load them without torch
(`tools/testkit/models.py::torch_mlp/torch_lenet`). Weights are seeded, so a re-export
with the same torch version gives the same numbers.
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch
from torch import nn

OUT_DIR = Path(__file__).parent
OPSET = 17


class MLP(nn.Module):
    """fc1 32->64, relu, fc2 64->64, relu, fc3 64->10."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(32, 64)
        self.fc2 = nn.Linear(64, 64)
        self.fc3 = nn.Linear(64, 10)
        self.relu = nn.ReLU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc3(self.relu(self.fc2(self.relu(self.fc1(x)))))


class LeNet(nn.Module):
    """LeNet-5: conv 5x5 pad 2 (6), relu, maxpool 2; conv 5x5 (16), relu, maxpool 2;
    flatten; fc 400-120-84-10 with relu."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.pool = nn.MaxPool2d(2)
        self.relu = nn.ReLU()
        self.flatten = nn.Flatten()
        self.fc1 = nn.Linear(400, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.relu(self.conv1(x)))
        x = self.pool(self.relu(self.conv2(x)))
        x = self.flatten(x)
        x = self.relu(self.fc1(x))
        x = self.relu(self.fc2(x))
        return self.fc3(x)


def export(model: nn.Module, example: torch.Tensor, name: str) -> Path:
    """Export `model` (eval mode) at opset 17 with input 'x' and output 'y'."""
    path = OUT_DIR / f"{name}.onnx"
    model.eval()
    torch.onnx.export(model, (example,), str(path), input_names=["x"], output_names=["y"],
                      opset_version=OPSET, dynamo=False, do_constant_folding=True)
    return path


def main() -> int:
    torch.manual_seed(0)
    for model, example, name in ((MLP(), torch.randn(4, 32), "mlp"),
                                 (LeNet(), torch.randn(1, 1, 28, 28), "lenet")):
        path = export(model, example, name)
        print(f"wrote {path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

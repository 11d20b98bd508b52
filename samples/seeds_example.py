"""The first example of Ivy's trace_graph documentation, in torch.

`k`, `j` and `s` do not contribute to the result and `print` is not an output, so the traced
graph holds one op: the power. The traced callable also accepts inputs of another shape.
"""
import torch

import ivytrace


def fn(x, y):
    z = x**y
    print(z)
    k = x * y
    j = torch.cat([x, z, y])
    s = torch.sum(j)
    return z


if __name__ == "__main__":
    x = torch.tensor([1.0, 2.0, 3.0])
    y = torch.tensor([2.0, 3.0, 4.0])
    traced = ivytrace.trace_graph(fn, args=(x, y))
    print(traced.source)
    a = torch.tensor([[1.0, 2.0]])
    b = torch.tensor([[2.0, 3.0]])
    print("traced:", traced(a, b), " original:", fn(a, b))

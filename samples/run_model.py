"""Runs a sample model once, marking its forward pass as an ivytrace region.

    python3 samples/run_model.py cnn            # plain run
    ivytrace record -o cnn.ivt -- python3 samples/run_model.py cnn --save-io cnn_io.pt

The region makes the forward pass the graph's scope: `ivytrace optimize/export` build the graph
of what `forward` returns. --save-io writes the input and output so exports can be checked.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from models import make_input, make_model  # noqa: E402

import ivytrace  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=["mlp", "cnn", "gpt"])
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--save-io", metavar="PATH", help="save {'input', 'output'} with torch.save")
    args = parser.parse_args()

    model = make_model(args.model)
    x = make_input(args.model, batch=args.batch)

    @ivytrace.region("forward")
    def forward(x):
        return model(x)

    with torch.no_grad():
        y = forward(x)
    print(f"{args.model}: input {tuple(x.shape)} -> output {tuple(y.shape)}, "
          f"argmax {y.argmax(-1).tolist()}")
    if args.save_io:
        torch.save({"input": x, "output": y}, args.save_io)


if __name__ == "__main__":
    main()

"""What the tiny-model generators other than make_models.py share: writing
one model's folder (config.json, model.safetensors, reference.json and the
ONNX export) the way make_models.py writes its own."""

import json
import os
import sys

import torch

import make_models


def write(out_dir, name, c, model, batch, names, onames, opset, published=False):
    """Writes folder name under out_dir: c as config.json, the model's
    state dict as model.safetensors (not for a published-shape model, whose
    weights are only there to be timed), PyTorch's outputs onames of the
    batch's inputs names as reference.json, and torch.onnx.export with
    dynamic batch and sequence axes (per-token outputs: both)."""
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)
        f.write("\n")
    if not published:
        make_models.save_safetensors(os.path.join(d, "model.safetensors"), dict(model.state_dict()))
    args = tuple(torch.from_numpy(batch[n]) for n in names)
    with torch.no_grad():
        outs = make_models.as_tuple(model(*args))
    ref = {
        "inputs": {n: batch[n].tolist() for n in names},
        "outputs": {n: {"shape": list(o.shape), "data": make_models.to_list(o.numpy())} for n, o in zip(onames, outs)},
        "torch_version": torch.__version__,
    }
    with open(os.path.join(d, "reference.json"), "w") as f:
        json.dump(ref, f, separators=(",", ":"))
        f.write("\n")
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    for n in onames:
        axes[n] = {0: "batch", 1: "sequence"} if n == "last_hidden_state" else {0: "batch"}
    with torch.no_grad():
        torch.onnx.export(model, args, os.path.join(d, "model.onnx"), input_names=names, output_names=onames,
                          dynamic_axes=axes, opset_version=opset, do_constant_folding=True)
    print("%s: %s, %d parameters" % (name, c["architectures"][0], sum(p.numel() for p in model.parameters())), file=sys.stderr)

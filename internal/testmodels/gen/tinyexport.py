"""What the tiny-model generators other than make_models.py share: writing
one model's folder (config.json, model.safetensors, reference.json and the
ONNX export) the way make_models.py writes its own, and their command
line."""

import argparse
import json
import os
import sys

import torch

import make_models


def write(out_dir, name, c, model, batch, names, onames, opset, published=False, per_token=("last_hidden_state",), drop=()):
    """Writes folder name under out_dir: c as config.json, the model's
    state dict as model.safetensors (not for a published-shape model, whose
    weights are only there to be timed), PyTorch's outputs onames of the
    batch's inputs names as reference.json, and torch.onnx.export with
    dynamic batch and sequence axes (the outputs per_token names: both).
    The checkpoint leaves out the tensors drop names (tied weights, which
    save_pretrained does not save)."""
    d = os.path.join(out_dir, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)
        f.write("\n")
    if not published:
        state = {k: v for k, v in model.state_dict().items() if k not in drop}
        make_models.save_safetensors(os.path.join(d, "model.safetensors"), state)
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
        axes[n] = {0: "batch", 1: "sequence"} if n in per_token else {0: "batch"}
    with torch.no_grad():
        torch.onnx.export(model, args, os.path.join(d, "model.onnx"), input_names=names, output_names=onames,
                          dynamic_axes=axes, opset_version=opset, do_constant_folding=True)
    print("%s: %s, %d parameters" % (name, c["architectures"][0], sum(p.numel() for p in model.parameters())), file=sys.stderr)


def input_names(batch, lengths, types):
    """The graph inputs of a model with token types (types) or without;
    with them, batch gets token_type_ids with segment B in the second
    half of every row but the first, as BERT's pairs."""
    if not types:
        return ["input_ids", "attention_mask"]
    t = batch["input_ids"] * 0
    for i, n in enumerate(lengths):
        if i > 0:
            t[i, n // 2:n] = 1
    batch["token_type_ids"] = t
    return ["input_ids", "attention_mask", "token_type_ids"]


def main(doc, tiny, published, build, seed0, shapes_help):
    """The generators' command line: --out DIR (default testdata/tiny) and
    --published (the published shapes instead of the tiny models); builds
    each model with seeds seed0, seed0+17, ... and make_models.py's batch
    lengths (padding, a length-1 body, one full row)."""
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(here, "..", "testdata", "tiny"))
    ap.add_argument("--published", action="store_true", help=shapes_help + " (random weights) instead of the tiny models")
    a = ap.parse_args()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    for i, (name, c, opset) in enumerate(published() if a.published else tiny):
        build(name, c, opset, a.out, seed0 + 17 * i, [24, 7, 32] if a.published else [9, 3, 16, 12], a.published)

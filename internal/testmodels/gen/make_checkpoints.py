"""The tiny deberta-v3-base's weights (testdata/tiny/deberta-v3-base) in the
other checkpoint layouts save_pretrained writes, for sqc's loaders, written
to testdata/checkpoints:

  torch-f32      pytorch_model.bin (torch.save's zip format), float32
  torch-f16      pytorch_model.bin, float16
  st-f16         model.safetensors, float16 (the same values as torch-f16)
  sharded-st     model.safetensors.index.json and two safetensors shards
  sharded-torch  pytorch_model.bin.index.json and two torch.save shards
  legacy         pytorch_model.bin in torch.save's format before torch 1.6
                 (its storage keys are object ids: it differs run to run)
  views          pytorch_model.bin of hand-made tensors: a transposed view,
                 a slice at a storage offset, bfloat16, int64, and a view
                 shared with another tensor

each with the model's config.json (views has none):

    /usr/bin/python3 internal/testmodels/gen/make_checkpoints.py [--out DIR]
"""

import argparse
import json
import os
import shutil
import struct

import numpy as np
import torch

import make_models

here = os.path.dirname(os.path.abspath(__file__))
tiny = os.path.join(here, "..", "testdata", "tiny", "deberta-v3-base")


def load_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32"
        a, b = info["data_offsets"]
        out[name] = torch.from_numpy(np.frombuffer(data[a:b], dtype="<f4").copy().reshape(info["shape"]))
    return out


def folder(out, name):
    d = os.path.join(out, name)
    os.makedirs(d, exist_ok=True)
    shutil.copy(os.path.join(tiny, "config.json"), d)
    return d


def shards(tensors):
    names = sorted(tensors)
    half = len(names) // 2
    return [{n: tensors[n] for n in names[:half]}, {n: tensors[n] for n in names[half:]}]


def index(path, parts, files):
    weight_map = {n: f for part, f in zip(parts, files) for n in part}
    total = sum(t.numel() * 4 for part in parts for t in part.values())
    with open(path, "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2, sort_keys=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(here, "..", "testdata", "checkpoints"))
    a = ap.parse_args()
    w = load_safetensors(os.path.join(tiny, "model.safetensors"))
    torch.save(w, os.path.join(folder(a.out, "torch-f32"), "pytorch_model.bin"))
    half = {n: t.half() for n, t in w.items()}
    torch.save(half, os.path.join(folder(a.out, "torch-f16"), "pytorch_model.bin"))
    make_models.save_safetensors(os.path.join(folder(a.out, "st-f16"), "model.safetensors"), {n: t.float() for n, t in half.items()}, "F16")
    parts = shards(w)
    d = folder(a.out, "sharded-st")
    files = ["model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"]
    for part, f in zip(parts, files):
        make_models.save_safetensors(os.path.join(d, f), part)
    index(os.path.join(d, "model.safetensors.index.json"), parts, files)
    d = folder(a.out, "sharded-torch")
    files = ["pytorch_model-00001-of-00002.bin", "pytorch_model-00002-of-00002.bin"]
    for part, f in zip(parts, files):
        torch.save(part, os.path.join(d, f))
    index(os.path.join(d, "pytorch_model.bin.index.json"), parts, files)
    torch.save(w, os.path.join(folder(a.out, "legacy"), "pytorch_model.bin"), _use_new_zipfile_serialization=False)
    base = torch.arange(24, dtype=torch.float32).reshape(4, 6)
    views = {
        "transposed": base.t(),                      # [6, 4], strides (1, 6)
        "sliced": base[1:3, 2:5],                    # offset 8, strides (6, 1)
        "bf16": (torch.arange(6, dtype=torch.float32) / 4).to(torch.bfloat16).reshape(2, 3),
        "ids": torch.arange(5, dtype=torch.int64),
        "shared": base,                              # the storage of the two views
    }
    d = os.path.join(a.out, "views")
    os.makedirs(d, exist_ok=True)
    torch.save(views, os.path.join(d, "pytorch_model.bin"))


if __name__ == "__main__":
    main()

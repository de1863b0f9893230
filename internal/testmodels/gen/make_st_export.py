"""A sentence-transformers model as optimum exports it for feature
extraction: the tiny BERT encoder (make_models.py's bert-base-gelutanh
shape, its own random weights) followed by sentence-transformers' Pooling
(mean over the tokens by the attention mask, the count clamped at 1e-9)
and Normalize (F.normalize), with outputs token_embeddings and
sentence_embedding; written to testdata/tiny/st-bert-mean with
reference.json (a padded batch and PyTorch's outputs) for sqc's tests:

    /usr/bin/python3 internal/testmodels/gen/make_st_export.py [--out DIR]
"""

import argparse
import json
import os

import torch
import torch.nn.functional as F

import make_models


class SentenceTransformer(torch.nn.Module):
    """Transformer -> Pooling(mean) -> Normalize, as sentence-transformers'
    modules compute them."""

    def __init__(s, encoder):
        super().__init__()
        s.encoder = encoder

    def forward(s, ids, mask, types):
        tokens = s.encoder(ids, mask, types)[0]
        expanded = mask.unsqueeze(-1).expand(tokens.size()).float()
        mean = torch.sum(tokens * expanded, 1) / torch.clamp(expanded.sum(1), min=1e-9)
        return tokens, F.normalize(mean, p=2, dim=1)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(here, "..", "testdata", "tiny"))
    a = ap.parse_args()
    torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
    name, c, opset = "st-bert-mean", make_models.bert_config("BertModel", 120, 32, 2, 2, 64, "gelu_pytorch_tanh", 64), 14
    seed = 4000
    d = os.path.join(a.out, name)
    os.makedirs(d, exist_ok=True)
    torch.manual_seed(seed)
    encoder = make_models.CLASSES[c["architectures"][0]](c)
    make_models.randomize(encoder, seed)
    model = SentenceTransformer(encoder).eval()
    batch = make_models.make_batch(c, seed + 1, [9, 3, 16, 12])
    names = make_models.input_names(c)
    args = tuple(torch.from_numpy(batch[n]) for n in names)
    with torch.no_grad():
        outs = model(*args)
    onames = ["token_embeddings", "sentence_embedding"]
    ref = {
        "inputs": {n: batch[n].tolist() for n in names},
        "outputs": {n: {"shape": list(o.shape), "data": make_models.to_list(o.numpy())} for n, o in zip(onames, outs)},
        "torch_version": torch.__version__,
    }
    with open(os.path.join(d, "reference.json"), "w") as f:
        json.dump(ref, f, separators=(",", ":"))
        f.write("\n")
    axes = {n: {0: "batch", 1: "sequence"} for n in names}
    axes["token_embeddings"] = {0: "batch", 1: "sequence"}
    axes["sentence_embedding"] = {0: "batch"}
    with torch.no_grad():
        torch.onnx.export(model, args, os.path.join(d, "model.onnx"), input_names=names, output_names=onames,
                          dynamic_axes=axes, opset_version=opset, do_constant_folding=True)


if __name__ == "__main__":
    main()

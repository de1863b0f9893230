#!/usr/bin/python3
"""Torch reference for the tiny sentence-transformers folder.

Reads st-bert-tiny/ (config.json, model.safetensors, 1_Pooling, 2_Dense)
with nothing but torch (transformers and sentence-transformers are not
installable here), runs the BERT encoder written by hand after the eager
`transformers` BertModel code on a right-padded batch of fixed token ids,
and pools the last hidden state with every sentence-transformers Pooling
mode, written after sentence_transformers/models/Pooling.py (3.0), then
the folder's own head (mean, Dense tanh, Normalize). Writes the result as
JSON to stdout; folder_reference_test.go compares sqc with it.

    /usr/bin/python3 reference.py > st-bert-tiny.reference.json
"""
import json
import math
import os
import struct
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
DIR = os.path.join(HERE, "st-bert-tiny")

INPUTS = [
    [101, 1996, 2143, 2003, 1037, 4251, 102],
    [101, 2053, 102],
    [101] + [2000 + 37 * i % 3000 for i in range(22)] + [102],
    [101, 1037, 4951, 1010, 3057, 102, 1998, 2411, 102],
]
TYPES = [[0] * len(x) for x in INPUTS]
TYPES[3] = [0] * 6 + [1] * 3


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        assert info["dtype"] == "F32", name
        lo, hi = info["data_offsets"]
        buf = bytearray(data[8 + n + lo : 8 + n + hi])
        out[name] = torch.frombuffer(buf, dtype=torch.float32).reshape(info["shape"]).clone()
    return out


def layer_norm(x, w, b, eps):
    return torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps)


def bert(p, cfg, ids, types, mask):
    L = ids.shape[1]
    x = p["embeddings.word_embeddings.weight"][ids]
    x = x + p["embeddings.position_embeddings.weight"][torch.arange(L)].unsqueeze(0)
    x = x + p["embeddings.token_type_embeddings.weight"][types]
    eps = cfg["layer_norm_eps"]
    x = layer_norm(x, p["embeddings.LayerNorm.weight"], p["embeddings.LayerNorm.bias"], eps)
    heads = cfg["num_attention_heads"]
    d = cfg["hidden_size"] // heads
    # transformers' extended attention mask: 0 to attend, finfo.min not to.
    ext = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
    lin = lambda t, name: t @ p[name + ".weight"].T + p[name + ".bias"]
    for i in range(cfg["num_hidden_layers"]):
        pre = "encoder.layer.%d." % i
        split = lambda t: t.view(t.shape[0], L, heads, d).permute(0, 2, 1, 3)
        q = split(lin(x, pre + "attention.self.query"))
        k = split(lin(x, pre + "attention.self.key"))
        v = split(lin(x, pre + "attention.self.value"))
        s = q @ k.transpose(-1, -2) / math.sqrt(d) + ext
        ctx = (torch.softmax(s, dim=-1) @ v).permute(0, 2, 1, 3).reshape(x.shape)
        x = layer_norm(lin(ctx, pre + "attention.output.dense") + x, p[pre + "attention.output.LayerNorm.weight"], p[pre + "attention.output.LayerNorm.bias"], eps)
        h = torch.nn.functional.gelu(lin(x, pre + "intermediate.dense"))
        x = layer_norm(lin(h, pre + "output.dense") + x, p[pre + "output.LayerNorm.weight"], p[pre + "output.LayerNorm.bias"], eps)
    return x


def pool(tok, mask, mode):
    """sentence_transformers.models.Pooling.forward, one mode."""
    m = mask.unsqueeze(-1).expand(tok.size()).to(tok.dtype)
    if mode == "cls":
        return tok[:, 0]
    if mode == "max":
        t = tok.clone()
        t[m == 0] = -1e9
        return torch.max(t, 1)[0]
    if mode in ("mean", "mean_sqrt_len"):
        s = torch.sum(tok * m, 1)
        n = torch.clamp(m.sum(1), min=1e-9)
        return s / n if mode == "mean" else s / torch.sqrt(n)
    if mode == "weightedmean":
        w = torch.arange(start=1, end=tok.shape[1] + 1).unsqueeze(0).unsqueeze(-1).expand(tok.size()).to(tok.dtype)
        w = w * m
        return torch.sum(tok * w, 1) / torch.clamp(w.sum(1), min=1e-9)
    if mode == "lasttoken":
        bs, L, h = tok.shape
        values, indices = mask.flip(1).max(1)
        indices = torch.where(values == 0, L - 1, indices)
        gather = (L - indices - 1).unsqueeze(-1).repeat(1, h).unsqueeze(1)
        return torch.gather(tok, 1, gather).squeeze(dim=1)
    raise ValueError(mode)


def main():
    with open(os.path.join(DIR, "config.json")) as f:
        cfg = json.load(f)
    p = read_safetensors(os.path.join(DIR, "model.safetensors"))
    L = max(len(x) for x in INPUTS)
    pad = lambda rows: torch.tensor([r + [0] * (L - len(r)) for r in rows])
    ids, types = pad(INPUTS), pad(TYPES)
    mask = pad([[1] * len(x) for x in INPUTS])
    with torch.no_grad():
        tok = bert(p, cfg, ids, types, mask)
        out = {"input_ids": INPUTS, "token_type_ids": TYPES, "pooling": {}}
        for mode in ("cls", "max", "mean", "mean_sqrt_len", "weightedmean", "lasttoken"):
            out["pooling"][mode] = pool(tok, mask, mode).tolist()
        dense = read_safetensors(os.path.join(DIR, "2_Dense", "model.safetensors"))
        e = torch.tanh(pool(tok, mask, "mean") @ dense["linear.weight"].T + dense["linear.bias"])
        out["embedding"] = torch.nn.functional.normalize(e, p=2, dim=1).tolist()
    out["torch"] = torch.__version__
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


main()

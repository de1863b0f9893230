#!/usr/bin/python3
"""Trains small RoBERTa and XLM-RoBERTa sentiment classifiers on GLUE SST-2
from scratch, the way ../shared/models trained its BERT and DistilBERT ones:
so that INT8 accuracy can be measured on trained weights of those families
(random weights lack the activation statistics training gives).

The modules are make_models.py's (written after modeling_roberta.py); the
folders are laid out as `save_pretrained` writes them, plus the tokenizer:

  config.json        RobertaForSequenceClassification /
                     XLMRobertaForSequenceClassification
  model.safetensors  F32, transformers' parameter names
  tokenizer.json     the byte-level BPE (roberta) or Unigram (xlm-roberta)
                     tokenizer of runtime/tokenizer/testdata/oracle, which
                     the oracle tests check against the tokenizers library
  reference.json     FP32 logits PyTorch computes for a padded batch of dev
                     sentences (make_models.py's format)
  train.json         what was trained and the dev accuracy it reached

Token ids come from `sqc tokenize` (python has no tokenizers library here;
the Go tokenizer is the one shown identical to it).

usage: /usr/bin/python3 train_sst2.py --sqc BIN --glue DIR --out DIR [--only NAME]
  (Debian: apt-get install python3-torch python3-numpy). Deterministic for
  a given torch build and CPU: fixed seeds, a fixed thread count.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

# One OpenBLAS thread: with more, its threads and torch's OpenMP ones spin
# against each other (half the time in the kernel, 4x slower on 2 cores).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_models as mm  # noqa: E402

ORACLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                      "runtime", "tokenizer", "testdata", "oracle")

# name, architecture, model_type, tokenizer file. 4 layers x 256, 4 heads,
# 1024 FFN: the shape of ../shared/models/sst2-bert-mini, so the families
# are compared at one size.
MODELS = [
    ("sst2-roberta-mini", "RobertaForSequenceClassification", "roberta", "roberta.json"),
    ("sst2-xlmr-mini", "XLMRobertaForSequenceClassification", "xlm-roberta", "xlmr.json"),
]

MAX_TOKENS = 128  # SST-2's longest train sentence has under 70 tokens


def read_tsv(path):
    texts, labels = [], []
    with open(path, encoding="utf-8") as f:
        next(f)
        for line in f:
            text, label = line.rstrip("\n").rsplit("\t", 1)
            texts.append(text)
            labels.append(int(label))
    return texts, labels


def tokenize(sqc, tokenizer, texts):
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "texts.jsonl")
        with open(src, "w", encoding="utf-8") as f:
            for t in texts:
                f.write(json.dumps({"text": t}) + "\n")
        out = subprocess.run([sqc, "tokenize", "--tokenizer", tokenizer, "--texts", src],
                             check=True, capture_output=True, text=True).stdout
    ids = [json.loads(line)["input_ids"][:MAX_TOKENS] for line in out.splitlines()]
    if len(ids) != len(texts):
        sys.exit("sqc tokenize gave %d lines for %d texts" % (len(ids), len(texts)))
    return ids


def pad(rows, pad_id):
    seq = max(len(r) for r in rows)
    ids = np.full((len(rows), seq), pad_id, dtype=np.int64)
    mask = np.zeros((len(rows), seq), dtype=np.int64)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = r
        mask[i, :len(r)] = 1
    return torch.from_numpy(ids), torch.from_numpy(mask)


def length_batches(rows, batch, rng, window=50):
    """Batches in random order whose sentences have similar lengths: the
    shuffled rows are sorted by length within windows of `window` batches,
    so a batch pads little (SST-2 train mixes 3-token phrases with
    60-token sentences), and each epoch still sees its own mix."""
    order = rng.permutation(len(rows))
    out = []
    for w in range(0, len(order), batch * window):
        chunk = sorted(order[w:w + batch * window], key=lambda j: len(rows[j]))
        out += [chunk[i:i + batch] for i in range(0, len(chunk), batch)]
    return [out[i] for i in rng.permutation(len(out))]


def init_weights(model, c, seed):
    """transformers' _init_weights: normal(0, initializer_range) linears and
    embeddings (the padding row zero), LayerNorm 1 and 0, zero biases."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                m.weight.copy_(torch.randn(m.weight.shape, generator=g) * c["initializer_range"])
                if isinstance(m, nn.Linear) and m.bias is not None:
                    m.bias.zero_()
                if isinstance(m, nn.Embedding) and m.padding_idx is not None:
                    m.weight[m.padding_idx].zero_()
            elif isinstance(m, nn.LayerNorm):
                m.weight.fill_(1.0)
                m.bias.zero_()


def accuracy(model, rows, labels, pad_id, batch=128):
    model.eval()
    right = 0
    with torch.no_grad():
        for i in range(0, len(rows), batch):
            ids, mask = pad(rows[i:i + batch], pad_id)
            right += int((model(ids, mask).argmax(-1) == torch.tensor(labels[i:i + batch])).sum())
    return right / len(rows)


def train(name, arch, model_type, tok_file, a, data):
    tokenizer = os.path.join(ORACLE, tok_file)
    with open(tokenizer, encoding="utf-8") as f:
        vocab = len(json.load(f)["model"]["vocab"])
    c = mm.bert_config(arch, vocab, 256, 4, 4, 1024, "gelu", MAX_TOKENS, 2, model_type)
    c["id2label"], c["label2id"] = {"0": "negative", "1": "positive"}, {"negative": 0, "positive": 1}
    pad_id = c["pad_token_id"]
    train_rows = tokenize(a.sqc, tokenizer, data["train"][0])
    dev_rows = tokenize(a.sqc, tokenizer, data["dev"][0])
    train_labels, dev_labels = data["train"][1], data["dev"][1]

    torch.manual_seed(a.seed)
    model = mm.CLASSES[arch](c)
    init_weights(model, c, a.seed)
    steps = a.epochs * len(length_batches(train_rows, a.batch, np.random.default_rng(0)))
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
    warmup = steps // 10
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / (steps - warmup))))
    loss_fn = nn.CrossEntropyLoss()
    rng = np.random.default_rng(a.seed)
    start, step = time.time(), 0
    for epoch in range(a.epochs):
        model.train()
        for pick in length_batches(train_rows, a.batch, rng):
            ids, mask = pad([train_rows[j] for j in pick], pad_id)
            loss = loss_fn(model(ids, mask), torch.tensor([train_labels[j] for j in pick]))
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            step += 1
            if step % 200 == 0:
                print("%s: epoch %d step %d/%d loss %.4f (%.0f s)" % (name, epoch, step, steps, loss.item(), time.time() - start),
                      file=sys.stderr)
        print("%s: epoch %d dev accuracy %.4f" % (name, epoch, accuracy(model, dev_rows, dev_labels, pad_id)), file=sys.stderr)
    model.eval()
    dev_acc = accuracy(model, dev_rows, dev_labels, pad_id)

    d = os.path.join(a.out, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(c, f, indent=2, sort_keys=True)
        f.write("\n")
    mm.save_safetensors(os.path.join(d, "model.safetensors"), dict(model.state_dict()))
    with open(tokenizer, "rb") as src, open(os.path.join(d, "tokenizer.json"), "wb") as dst:
        dst.write(src.read())
    # The reference: the first 16 dev sentences, right-padded to the longest.
    ids, mask = pad(dev_rows[:16], pad_id)
    with torch.no_grad():
        logits = model(ids, mask)
    ref = {
        "inputs": {"input_ids": ids.tolist(), "attention_mask": mask.tolist()},
        "outputs": {"logits": {"shape": list(logits.shape), "data": mm.to_list(logits.numpy())}},
        "torch_version": torch.__version__,
    }
    with open(os.path.join(d, "reference.json"), "w") as f:
        json.dump(ref, f, separators=(",", ":"))
        f.write("\n")
    info = {"architecture": arch, "parameters": sum(p.numel() for p in model.parameters()),
            "epochs": a.epochs, "batch": a.batch, "lr": a.lr, "seed": a.seed,
            "dev_accuracy": dev_acc, "train_seconds": round(time.time() - start),
            "torch_version": torch.__version__}
    with open(os.path.join(d, "train.json"), "w") as f:
        json.dump(info, f, indent=2, sort_keys=True)
        f.write("\n")
    print("%s: %s" % (name, json.dumps(info)), file=sys.stderr)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sqc", required=True, help="an sqc binary (for sqc tokenize)")
    ap.add_argument("--glue", required=True, help="the GLUE SST-2 folder (train.tsv, dev.tsv)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="", help="comma-separated model names")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=5e-4)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (one per model: run models side by side)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    data = {s: read_tsv(os.path.join(a.glue, s + ".tsv")) for s in ("train", "dev")}
    for name, arch, model_type, tok in MODELS:
        if a.only and name not in a.only.split(","):
            continue
        train(name, arch, model_type, tok, a, data)


if __name__ == "__main__":
    main()

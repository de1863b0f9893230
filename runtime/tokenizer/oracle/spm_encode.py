"""spm_encode.py is the oracle for SentencePiece model files: it encodes
a JSON-lines corpus ({"text", "text_pair"}) with the real SentencePiece
library the way transformers' slow tokenizers use it, and writes one
{"ids": [...], "type_ids": [...]} line per input (special tokens added,
pairs truncated longest first to 512 tokens by transformers' loop).

sentencepiece.bpe.model gets XLM-RoBERTa's fairseq ids (<s>=0 <pad>=1
</s>=2 <unk>=3, pieces shifted by one) and <s> A </s> (</s> B </s>); any
other model its own ids and T5's A </s> (B </s>). Inputs that contain a
special token literally are written as {"skip": true}: the slow
tokenizers split those out first, which is not the SentencePiece library.

usage: python3 spm_encode.py MODEL CORPUS_JSONL OUT_JSONL
"""
import json
import os
import sys

import sentencepiece as spm

MAX_LENGTH = 512


def main():
    model, corpus, out = sys.argv[1:4]
    sp = spm.SentencePieceProcessor(model_file=model)
    fairseq = os.path.basename(model) == 'sentencepiece.bpe.model'
    if fairseq:
        specials = ['<s>', '<pad>', '</s>', '<unk>', '<mask>']
        cls, sep = 0, 2

        def ids(text):
            return [3 if i == sp.unk_id() else i + 1 for i in sp.encode(text)]
    else:
        specials = [sp.id_to_piece(i) for i in range(sp.get_piece_size()) if sp.is_control(i) or sp.is_unknown(i)]
        eos = sp.piece_to_id('</s>')

        def ids(text):
            return sp.encode(text)

    with open(corpus, encoding='utf-8') as f, open(out, 'w') as w:
        for line in f:
            item = json.loads(line)
            texts = [item['text']] + ([item['text_pair']] if item.get('text_pair') is not None else [])
            if any(s in t for s in specials for t in texts):
                w.write('{"skip": true}\n')
                continue
            a = ids(texts[0])
            if len(texts) == 1:
                a = a[:MAX_LENGTH - 2]
                seq = [cls] + a + [sep] if fairseq else a + [eos]
                w.write(json.dumps({'ids': seq, 'type_ids': [0] * len(seq)}) + '\n')
                continue
            b = ids(texts[1])
            for _ in range(len(a) + len(b) - (MAX_LENGTH - (4 if fairseq else 2))):
                if len(a) > len(b):
                    a = a[:-1]
                else:
                    b = b[:-1]
            seq = [cls] + a + [sep, sep] + b + [sep] if fairseq else a + [eos] + b + [eos]
            w.write(json.dumps({'ids': seq, 'type_ids': [0] * len(seq)}) + '\n')


if __name__ == '__main__':
    main()

"""Build the real-SGLang tier's tiny Llama model in a folder: no download, about 10 s, ~300 KB.

Run with the real-SGLang environment's python (it has torch, transformers and tokenizers):
    python make_tiny_model.py OUT_DIR

transformers' LlamaConfig (hidden 64, 2 layers, 4 heads, 2 KV heads, intermediate 128), random weights
(seeded), and a byte-level BPE tokenizer trained on a few sentences with `tokenizers`, saved with
`save_pretrained`.
The weights are random: the server answers with nonsense, which is all the tier needs (it tests the launch).
"""

from __future__ import annotations

import sys
from pathlib import Path

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "SGLang is a fast serving framework for large language models.",
    "Hello, world! The server is fired up and ready to roll.",
    "Once upon a time there was a tiny model that answered every question.",
    "Numbers like 0 1 2 3 4 5 6 7 8 9 and punctuation: ; , . ! ? ( ) [ ] { }",
]


def build(out: Path) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out.mkdir(parents=True, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=512,
        special_tokens=["<s>", "</s>", "<unk>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(SENTENCES * 4, trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", unk_token="<unk>", model_max_length=2048
    )
    fast.save_pretrained(out)

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        intermediate_size=128,
        max_position_embeddings=2048,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        torch_dtype="float32",
    )
    model = LlamaForCausalLM(config)
    model.save_pretrained(out, safe_serialization=True)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_tiny_model.py OUT_DIR")
    build(Path(sys.argv[1]))

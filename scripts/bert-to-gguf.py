"""Rewrites a sentence-transformers BERT folder (model.safetensors, config.json, tokenizer.json
with a WordPiece model) as one GGUF file llama.cpp's server can load for embeddings.

    python bert-to-gguf.py MODEL_FOLDER OUT.gguf

It writes what llama.cpp's own converter (convert_hf_to_gguf.py, class BertModel) writes for
such a model, without the converter's torch and transformers: the same hyperparameter keys, the
WordPiece vocabulary in its "phantom space" form, mean pooling (the sentence-transformers
pooling of all-MiniLM-L6-v2) and every tensor at f32 under the GGUF tensor names gguf-py maps
to. Used by scripts/llama-server, with gguf-py (and numpy) from llama.cpp's tree.
"""

import json
import struct
import sys
from pathlib import Path

import gguf
import numpy as np


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    dtypes = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    data = path.read_bytes()
    (header_len,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + header_len])
    base = 8 + header_len
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        start, end = info["data_offsets"]
        array = np.frombuffer(data[base + start : base + end], dtype=dtypes[info["dtype"]])
        tensors[name] = array.reshape(info["shape"])
    return tensors


def pooling_of(folder: Path) -> gguf.PoolingType:
    config = folder / "1_Pooling" / "config.json"
    if config.is_file():
        pooling = json.loads(config.read_text())
        if pooling.get("pooling_mode_cls_token"):
            return gguf.PoolingType.CLS
        if not pooling.get("pooling_mode_mean_tokens", True):
            raise SystemExit(f"{config}: only mean or CLS pooling is supported")
    return gguf.PoolingType.MEAN


def main() -> None:
    folder, out = Path(sys.argv[1]), Path(sys.argv[2])
    config = json.loads((folder / "config.json").read_text())
    tokenizer = json.loads((folder / "tokenizer.json").read_text())
    if tokenizer["model"]["type"] != "WordPiece":
        raise SystemExit(f"{folder}: not a WordPiece tokenizer")
    n_layers = config["num_hidden_layers"]

    writer = gguf.GGUFWriter(out, gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.BERT])
    writer.add_name(folder.name)
    writer.add_block_count(n_layers)
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_layer_norm_eps(config["layer_norm_eps"])
    writer.add_causal_attention(False)
    writer.add_pooling_type(pooling_of(folder))
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)

    # The vocabulary as llama.cpp's WordPiece tokenizer reads it: special tokens as they are,
    # a word-start piece with a leading "▁", a continuation ("##x") without its marks.
    vocab = tokenizer["model"]["vocab"]
    special = {t["content"] for t in tokenizer.get("added_tokens", []) if t.get("special")}
    by_id = sorted(vocab.items(), key=lambda item: item[1])
    if [i for _, i in by_id] != list(range(len(by_id))):
        raise SystemExit(f"{folder}: the vocabulary's ids are not 0..n")
    tokens, types = [], []
    for token, _ in by_id:
        if token in special:
            tokens.append(token)
            types.append(gguf.TokenType.CONTROL)
        else:
            tokens.append(token[2:] if token.startswith("##") else "\u2581" + token)
            types.append(gguf.TokenType.NORMAL)
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_type_count(config.get("type_vocab_size", 1))
    ids = {token: i for token, i in vocab.items()}
    for token, add in (
        ("[CLS]", writer.add_bos_token_id),
        ("[SEP]", writer.add_sep_token_id),
        ("[UNK]", writer.add_unk_token_id),
        ("[PAD]", writer.add_pad_token_id),
        ("[MASK]", writer.add_mask_token_id),
    ):
        if token in ids:
            add(ids[token])
    writer.add_add_bos_token(True)
    writer.add_add_sep_token(True)

    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, n_layers)
    skipped = ("embeddings.position_ids", "pooler.dense.weight", "pooler.dense.bias")
    for name, array in read_safetensors(folder / "model.safetensors").items():
        name = name.removeprefix("bert.")
        if name in skipped:
            continue
        mapped = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if mapped is None:
            raise SystemExit(f"{folder}: no GGUF name for tensor {name}")
        writer.add_tensor(mapped, np.ascontiguousarray(array, dtype=np.float32))

    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


if __name__ == "__main__":
    main()

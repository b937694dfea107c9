"""The checkpoint's real size and `load_model_facts`: reading JSON and safetensors headers, never tensors."""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any

from sgtui.core.bounded import BoundedInputError, load_json
from sgtui.core.errors import read_utf8
from sgtui.core.model.config import model_facts_from_config
from sgtui.core.model.facts import ModelError, ModelFacts

_SAFETENSORS_BYTES = {
    "F64": 8,
    "I64": 8,
    "U64": 8,
    "F32": 4,
    "I32": 4,
    "U32": 4,
    "F16": 2,
    "BF16": 2,
    "I16": 2,
    "U16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "F8_E8M0": 1,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}

# Architectures whose text layers mix full attention with Gated DeltaNet linear attention, where
# SGLang's Qwen3NextConfig.layers_block_type decides the split from full_attention_interval.


def _read_json(path: Path) -> Any:
    try:
        text = read_utf8(path)
    except FileNotFoundError:
        raise ModelError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise ModelError(f"{path}: is a folder, expected a file") from None
    except (OSError, UnicodeError) as exc:
        raise ModelError(
            f"{path}: cannot read it ({exc.strerror if isinstance(exc, OSError) else exc})"
        ) from None
    try:
        return load_json(text, str(path))
    except BoundedInputError as exc:
        raise ModelError(str(exc)) from None
    except json.JSONDecodeError as exc:
        raise ModelError(f"{path}: line {exc.lineno}, column {exc.colno}: bad JSON ({exc.msg})") from None


def safetensors_header_bytes(path: Path) -> int:
    """Sum of the tensor sizes named in one safetensors file's header (8-byte length + JSON)."""
    try:
        with path.open("rb") as fh:
            raw_len = fh.read(8)
            if len(raw_len) != 8:
                raise ModelError(f"{path}: too short to be a safetensors file")
            (n,) = struct.unpack("<Q", raw_len)
            if n > 100 * 2**20:
                raise ModelError(f"{path}: safetensors header claims {n} bytes; the file looks corrupt")
            header = load_json(fh.read(n), str(path), max_bytes=n)
    except OSError as exc:
        raise ModelError(f"{path}: cannot read it ({exc})") from None
    except BoundedInputError as exc:
        raise ModelError(str(exc)) from None
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ModelError(
            f"{path}: the safetensors header is not valid JSON; the file looks corrupt"
        ) from None
    total = 0
    for name, entry in header.items():
        if name == "__metadata__" or not isinstance(entry, dict):
            continue
        offsets = entry.get("data_offsets")
        if isinstance(offsets, list) and len(offsets) == 2:
            total += int(offsets[1]) - int(offsets[0])
            continue
        count = 1
        for dim in entry.get("shape", []):
            count *= int(dim)
        total += count * _SAFETENSORS_BYTES.get(str(entry.get("dtype")), 2)
    return total


def checkpoint_weight_bytes(folder: Path) -> int | None:
    """The checkpoint's real size: the index's total_size, else the shards' headers (None: neither)."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        data = _read_json(index)
        total = data.get("metadata", {}).get("total_size") if isinstance(data, dict) else None
        if isinstance(total, int | float) and total > 0:
            return int(total)
    shards = sorted(folder.glob("*.safetensors"))
    if not shards:
        return None
    hf_shards = [p for p in shards if not p.name.startswith("consolidated")]
    shards = hf_shards or shards  # Mistral folders ship both layouts; count one
    return sum(safetensors_header_bytes(p) for p in shards)


def _with_modelopt_quant(cfg: Any, folder: Path) -> Any:
    """ModelOpt checkpoints (nvidia/*-FP8) describe their quantization, including an FP8 KV cache, in
    hf_quant_config.json next to config.json; SGLang's ModelOpt config reads it from there."""
    sidecar = folder / "hf_quant_config.json"
    if not isinstance(cfg, dict) or cfg.get("quantization_config") or not sidecar.is_file():
        return cfg
    data = _read_json(sidecar)
    quant = data.get("quantization") if isinstance(data, dict) else None
    if not isinstance(quant, dict):
        return cfg
    return {**cfg, "quantization_config": {"quant_method": "modelopt", **quant}}


def load_model_facts(path: str | Path) -> ModelFacts:
    """Model facts from a config.json or a model folder (which also gives the real weight bytes)."""
    p = Path(path).expanduser()
    if p.is_dir():
        config = p / "config.json"
        if not config.is_file():
            raise ModelError(f"{p}: no config.json in this folder; pass the model folder or its config.json")
        return model_facts_from_config(
            _with_modelopt_quant(_read_json(config), p),
            source=str(config),
            weight_bytes=checkpoint_weight_bytes(p),
        )
    if not p.exists():
        raise ModelError(f"{p}: file not found; pass a config.json or a model folder")
    weight_bytes = checkpoint_weight_bytes(p.parent) if p.name == "config.json" else None
    cfg = _with_modelopt_quant(_read_json(p), p.parent)
    return model_facts_from_config(cfg, source=str(p), weight_bytes=weight_bytes)

"""Write the pinned requirement set of the real-SGLang test tier (tests/real_sglang/requirements-VERSION.txt).

    python3 scripts/real_sglang_requirements.py 0.5.23

asks pip to resolve `sglang==VERSION` for this interpreter (`pip install --dry-run --ignore-installed
--report`, nothing is installed), then writes every resolved package as `name==version`, less the GPU-only
kernel packages that SGLang's CPU engine never imports (DROP below). The tier installs the file with
`pip install --no-deps -r`, so the set is exactly what was resolved here. The command and the date are in
the file's header; re-run it to move the tier to another release.

Measured for 0.5.23 (issue 16): triton, tvm_ffi (apache-tvm-ffi) and torchvision are imported at module
level on the CPU path and must stay; torch's CUDA libraries (nvidia-*) stay too, since the package index's
torch is the CUDA build and links them.
"""

from __future__ import annotations

import datetime
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "tests" / "real_sglang"

# GPU-only kernel packages: CUDA kernels SGLang imports lazily, only on a GPU path. Names as pip normalizes
# them (lower case, '-'). A name ending in '*' drops every package with that prefix.
DROP = (
    "flashinfer-python",
    "flashinfer-cubin",
    "flashinfer-jit-cache",
    "flash-attn-4",
    "nvidia-cutlass-dsl*",
    "sgl-deep-ep",
    "sgl-deep-gemm",
    "sgl-flash-mla",
    "deep-gemm",
    "deep-ep",
    "flash-mla",
    "tilelang",
    "humming-kernels",
    "quack-kernels",
    "nvshmem4py-cu13",
    "nvidia-mathdx",
)


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def dropped(name: str) -> bool:
    n = normalize(name)
    return any(n.startswith(d[:-1]) if d.endswith("*") else n == d for d in DROP)


def resolve(version: str) -> list[tuple[str, str]]:
    """(name, version) of every package pip would install for sglang==version, in pip's order."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--dry-run",
                "--ignore-installed",
                "--report",
                str(report),
                f"sglang=={version}",
            ],
            check=True,
        )
        data = json.loads(report.read_text())
    return [(item["metadata"]["name"], item["metadata"]["version"]) for item in data["install"]]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: real_sglang_requirements.py SGLANG_VERSION", file=sys.stderr)
        return 2
    version = argv[0]
    resolved = resolve(version)
    kept = sorted((n, v) for n, v in resolved if not dropped(n))
    gone = sorted(n for n, _ in resolved if dropped(n))
    out = OUT_DIR / f"requirements-{version}.txt"
    header = [
        f"# The real-SGLang test tier's environment: sglang=={version} for Python "
        f"{sys.version_info.major}.{sys.version_info.minor} on linux x86_64, installed with",
        "#   pip install --no-deps -r THIS_FILE",
        f"# Generated {datetime.date.today().isoformat()} by:",
        f"#   python3 scripts/real_sglang_requirements.py {version}",
        f"# ({len(resolved)} packages resolved by pip; {len(gone)} GPU-only kernel packages left out: "
        f"{', '.join(gone)})",
    ]
    out.write_text("\n".join(header + [f"{n}=={v}" for n, v in kept]) + "\n")
    print(f"wrote {out.relative_to(REPO)}: {len(kept)} packages ({len(gone)} left out)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

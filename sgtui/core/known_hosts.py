"""Where a host's recorded key sits in a known_hosts file: the line a user must look at (or remove, once
they know why the key changed). Plain and hashed (`|1|salt|hash`) entries, `[host]:port` forms."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path


def host_patterns(hostname: str, port: int = 22) -> list[str]:
    return [hostname] if port == 22 else [f"[{hostname}]:{port}"]


def _matches(field: str, names: list[str]) -> bool:
    if field.startswith("|1|"):
        try:
            _, _, salt64, hash64 = field.split("|", 3)
            salt, want = base64.b64decode(salt64), base64.b64decode(hash64)
        except ValueError:
            return False
        digests = (hmac.new(salt, n.encode(), hashlib.sha1).digest() for n in names)
        return any(hmac.compare_digest(d, want) for d in digests)
    return any(n in field.split(",") for n in names)


def recorded_line(path: Path, hostname: str, port: int = 22) -> int | None:
    """The 1-based line of the first entry for the host (not @revoked, not @cert-authority); None if none."""
    names = host_patterns(hostname, port)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    for number, line in enumerate(text.splitlines(), 1):
        parts = line.split()
        if not parts or parts[0].startswith("#") or parts[0].startswith("@"):
            continue
        if _matches(parts[0], names):
            return number
    return None

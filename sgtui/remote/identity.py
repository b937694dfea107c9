"""Which machine (and which login) a host name reaches, so two names for one box are shown once.

Two host entries are the same place when all three agree, read once per connection:
- the SSH host key the server offered (its fingerprint): two aliases of one sshd offer the same key, two
  machines sharing an NFS home do not;
- the kernel's boot id (`/proc/sys/kernel/random/boot_id`): cloned VMs that kept the same host key boot
  their own kernels, so they differ;
- the login's uid (`id -u`): two users of one box see different runs dirs and may act on different runs.
A local transport has no host key: "local" stands for it. None when any part cannot be read."""

from __future__ import annotations

import re

from sgtui.core.shell import wrap_script
from sgtui.remote.connection import Transport
from sgtui.remote.transport import RemoteError

SCRIPT = "id -u; cat /proc/sys/kernel/random/boot_id"
_UID = re.compile(r"\d{1,10}")
_BOOT = re.compile(r"[0-9a-fA-F-]{8,64}")


def parse_identity(fingerprint: str, stdout: str) -> str | None:
    """`fingerprint`, uid and boot id as one key; None when the output is not exactly a uid then a boot id
    (a chatty login shell's banner, a missing /proc)."""
    lines = [line.strip() for line in stdout.strip().splitlines()[-2:]]
    if len(lines) != 2 or not _UID.fullmatch(lines[0]) or not _BOOT.fullmatch(lines[1]):
        return None
    return f"{fingerprint} uid={lines[0]} boot={lines[1].lower()}"


async def machine_identity(conn: Transport, timeout: float = 15.0) -> str | None:
    """Read once after a connect; None when it cannot be told (then the name is never merged)."""
    try:
        result = await conn.run(wrap_script(SCRIPT), timeout=timeout)
    except (RemoteError, OSError, TimeoutError):
        return None
    fingerprint = conn.host_key_fingerprint
    if result.rc != 0 or fingerprint is None:
        return None
    return parse_identity(fingerprint, result.stdout)

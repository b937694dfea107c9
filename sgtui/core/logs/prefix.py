"""Line hygiene and prefixes: ANSI colours, tqdm `\\r` rewrites, SGLang's `[date time TPn]` prefix,
cloud-logging exports (`SEVERITY 2025-04-05T00:01:19.2Z <line>`) and the prefixes log collectors put in
front of a container's lines (docker compose, `kubectl logs --prefix`, journald, Ray workers).

Everything here is bounded: callers cap a line before it reaches a regex.
"""

from __future__ import annotations

import re

# What a regex ever sees of one line; server_args dumps get more (they are long and parsed with str.find).
LINE_CAP = 4096
SERVER_ARGS_CAP = 65536

_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")

# [2026-01-02 10:11:12.345 DP0 TP1] / [10:11:12 TP0] / [gpu=0] / [2025-03-08 12:29:04] / [12-16 14:27:08];
# rank tags are any upper-case name and a number (TP, DP, EP, PP, ATTN_CP, MOE_DP today, more tomorrow).
_SGLANG_PREFIX = re.compile(
    r"\[(?:((?:\d{4}-)?\d\d-\d\d) )?(\d\d:\d\d:\d\d(?:[.,]\d+)?)?"
    r"((?: ?(?:[A-Z][A-Z_]{0,11}\d+|gpu(?:_id)?=\d+))*)\] ?"
)
_CLOUD_SEVERITIES = (
    "DEFAULT ",
    "DEBUG ",
    "INFO ",
    "NOTICE ",
    "WARNING ",
    "ERROR ",
    "CRITICAL ",
    "ALERT ",
    "EMERGENCY ",
)
_CLOUD_PREFIX = re.compile(
    r"(?:[A-Z]+ )?\[?(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\]? "
)


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text) if "\x1b" in text else text


# 8-bit (C1) forms of the same sequences: CSI U+009B ... final byte; OSC U+009D / DCS U+0090 / SOS U+0098 /
# PM U+009E / APC U+009F ... up to ST (U+009C, ESC \\) or BEL.
_C1_SEQUENCE = re.compile(
    r"\x9b[0-?]*[ -/]*[@-~]|[\x90\x98\x9d\x9e\x9f][^\x07\x9c\x1b]*(?:\x07|\x9c|\x1b\\)?"
)
# C0 controls except tab, DEL, and every C1 control U+0080..U+009F.
_CONTROLS = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f]")


def strip_controls(text: str) -> str:
    """Text safe to show on a terminal: escape sequences (7- and 8-bit) removed, then every C0 control but
    tab and every C1 control (U+0080..U+009F: CSI, OSC, ST, ...): a terminal acts on those."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if _CONTROLS.search(text) is None:
        return text
    return _CONTROLS.sub("", _C1_SEQUENCE.sub("", text))


def last_segment(text: str) -> str:
    """The text a terminal would show for a line rewritten with `\\r` (tqdm): its last non-empty segment."""
    end = len(text)
    while True:
        cut = text.rfind("\r", 0, end)
        if cut < 0:
            return text[:end] if text[:end].strip() else ""
        if text[cut + 1 : end].strip():
            return text[cut + 1 : end]
        end = cut


def cloud_prefix(line: str) -> tuple[str, str] | None:
    """(timestamp, rest) for a line a log collector stamped: a cloud-logging export
    (`ERROR 2025-04-05T00:01:19.5Z ...`), `docker logs -t` (`2025-11-06T02:10:00.7Z ...`) or a bracketed
    RFC 3339 stamp (`[2025-11-06T02:10:00.703Z] ...`); None for anything else."""
    if not line.startswith(_CLOUD_SEVERITIES) and not (len(line) > 20 and "T" in (line[10], line[11])):
        return None
    m = _CLOUD_PREFIX.match(line)
    if m is None:
        return None
    return m.group(1), line[m.end() :]


_TORCH_RANK = re.compile(r"\[rank(\d+)\]: ?")
_OLD_RANK = re.compile(r"Rank (\d+): ")


def split_prefix(line: str) -> tuple[str | None, tuple[str, ...], str]:
    """(time as printed, ranks, body) of one line; a line without an SGLang prefix is all body.

    torch.distributed's own `[rank3]: ` prefix counts as a rank too."""
    if not line.startswith("["):
        if line.startswith("Rank "):  # 0.1.x: "Rank 0: load weight begin."
            m = _OLD_RANK.match(line)
            if m is not None:
                return None, (f"TP{m.group(1)}",), line[m.end() :]
        return None, (), line
    if line.startswith("[rank"):
        m = _TORCH_RANK.match(line)
        if m is not None:
            return None, (f"rank{m.group(1)}",), line[m.end() :]
    m = _SGLANG_PREFIX.match(line)
    if m is None or (m.group(2) is None and not m.group(3)):
        return None, (), line
    date, clock, ranks = m.groups()
    time = f"{date} {clock}" if date and clock else clock
    return time, tuple(ranks.split()) if ranks else (), line[m.end() :]


def indented_prefix(line: str) -> tuple[str | None, tuple[str, ...], str]:
    """`split_prefix` of a line pasted with leading blanks (a GitHub list item or quote indents every line):
    the line as it is when the blanks are followed by no SGLang or torch prefix (code, a frame)."""
    stripped = line.lstrip(" \t")
    if stripped[:1] == "[":
        time, ranks, body = split_prefix(stripped)
        if time is not None or ranks:
            return time, ranks, body
    return None, (), line


# `docker compose logs`: "sglang-1  | " (v2), "sglang_1  | " (v1), a container_name padded to a column.
_COMPOSE = re.compile(r"[A-Za-z0-9][\w.-]{0,62} *\| ?")
# `kubectl logs --prefix`: "[pod/sglang-0/server] ".
_KUBECTL = re.compile(r"\[pod/[^\]\s]+\] ")
# journald's short format: "Nov 29 07:51:45 gpu-host sglang[4242]: " (ident and pid after the host).
_JOURNALD = re.compile(
    r"(?:(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [ \d]\d (\d\d:\d\d:\d\d) )?"
    r"[\w.-]+ [\w.@/-]+\[\d+\]: "
)
_MONTHS = ("Jan ", "Feb ", "Mar ", "Apr ", "May ", "Jun ", "Jul ", "Aug ", "Sep ", "Oct ", "Nov ", "Dec ")
# Python's logging format as wrappers and SGLANG_LOGGING_CONFIG set it up:
# "2025-12-11 10:34:03,939 - sglang.srt.managers.scheduler - INFO - " (an offset like "+08:00" allowed).
_PY_LOGGING = re.compile(
    r"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?)(?: ?[+-]\d\d:?\d\d|Z)? - [\w.:-]+ - "
    r"(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL) - "
)
# Wrappers logging a child's stderr with loguru or FastChat's format:
# "2024-02-08 09:56:23 | ERROR | stderr | " / "2025-01-05 10:00:00.123 | INFO     | worker:run:42 - ".
_PIPE_LOGGING = re.compile(
    r"(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[.,]\d+)?) "
    r"\| (?:TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL) *\| [\w.:<>-]+ (?:\| |- )"
)
# Docker Desktop's log view and `ts`-style stamping: "2025-02-04 21:29:17 " before the container's line.
_PLAIN_STAMP = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[.,]\d+)?) ")
# `srun --label` (Slurm, multi-node launches): "0: " / "12: " before each task's line.
_SRUN_LABEL = re.compile(r"\d{1,5}: ")
# An editor's line numbers (`:set number`, `cat -n`, `nl`): "16433 [2026-07-23 ... TP2] ..." and
# "16434   File ..." (a number, then the line: an SGLang record, an indented frame, a traceback's words).
_LINE_NUMBER = re.compile(r"\d{1,7}(?: |\t)(?=\[|\s{2}|Traceback|During handling|The above exception)")
# Ray's worker prefix (verl and other RL stacks run SGLang inside Ray actors): "(WorkerDict pid=616, ip=..) ".
_RAY = re.compile(r"\([\w.:-]+ pid=\d+(?:, ip=[\w.:-]+)?\) ")


def collector_prefix(line: str) -> tuple[str | None, str] | None:
    """(time or None, rest) for a line a log collector prefixed, else None: `name  | ` (docker compose),
    `[pod/p/c] ` (kubectl --prefix), `Mon DD HH:MM:SS host ident[pid]: ` (journald), `(Actor pid=N) ` (Ray),
    `2025-12-11 10:34:03,939 - name - INFO - ` (Python logging), `2025-02-04 21:29:17 ` (Docker Desktop's
    log view), `2024-02-08 09:56:23 | ERROR | stderr | ` (loguru, FastChat), `0: ` (`srun --label`), `> `
    (a Markdown quote).

    Cheap for other lines: one or two character tests before any regex."""
    first = line[:1]
    if first == ">":  # pasted from a Markdown quote
        return None, line[2:] if line.startswith("> ") else line[1:]
    if first == "(":
        m = _RAY.match(line)
        return (None, line[m.end() :]) if m else None
    if first == "[":
        if line.startswith("[pod/"):
            m = _KUBECTL.match(line)
            return (None, line[m.end() :]) if m else None
        return None
    if not first.isalnum():
        return None
    if first.isdigit():
        if " - " in line[:48]:
            m = _PY_LOGGING.match(line)
            if m is not None:
                return m.group(1), line[m.end() :]
        if " | " in line[:32]:
            m = _PIPE_LOGGING.match(line)
            if m is not None:
                return m.group(1), line[m.end() :]
        m = _PLAIN_STAMP.match(line)
        if m is not None:
            return m.group(1), line[m.end() :]
        m = _SRUN_LABEL.match(line)
        if m is not None:
            return None, line[m.end() :]
        m = _LINE_NUMBER.match(line)
        if m is not None:
            return None, line[m.end() :]
    if line.startswith(_MONTHS) or "]: " in line[:120]:
        m = _JOURNALD.match(line)
        if m is not None:
            return m.group(1), line[m.end() :]
    bar = line.find("|", 0, 80)
    if bar > 0 and line[bar - 1] == " ":
        m = _COMPOSE.match(line)
        if m is not None and m.end() > bar:
            return None, line[m.end() :]
    return None


def peel_collectors(line: str) -> tuple[str | None, str]:
    """(the outermost collector's time or None, the line without any collector prefix). Collectors nest:
    compose's "name  | " around docker's RFC 3339 stamp, say; at most three are peeled."""
    cloud_time = None
    for _ in range(3):
        first = line[:1]
        outer = None
        if first.isupper() or first.isdigit() or (first == "[" and line[11:12] == "T"):
            outer = cloud_prefix(line)
        if outer is None and first and (first.isalnum() or first in "([>"):
            outer = collector_prefix(line)
        if outer is None:
            break
        cloud_time, line = outer[0] or cloud_time, outer[1]
    return cloud_time, line


def cap_line(raw: str) -> str:
    """Bound a long line: keep the last `\\r` segment of a progress bar, a server_args dump's useful part."""
    if "\r" in raw[-LINE_CAP:]:
        raw = last_segment(raw)
    if raw.find("server_args", 0, 256) >= 0 or raw.find("ServerArgs(", 0, 256) >= 0:
        return raw[:SERVER_ARGS_CAP]
    return raw[:LINE_CAP]

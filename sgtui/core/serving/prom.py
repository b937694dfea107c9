"""SGLang's `/metrics` page (`--enable-metrics`), read with prometheus_client's own text parser.

SGLang names every series `sglang:NAME` (`sglang/srt/metrics/collector.py` in 0.4.6-0.5.x, moved to
`sglang/srt/observability/metrics_collector.py` by 0.5.23); a Prometheus server that stored them, a
federation or a gateway re-exporting them (Dynamo's publisher with `add_prefix="sglang_"`, dashboards
after sgl-project/sglang#15758) shows the same series as `sglang_NAME`. Both read the same here: a
`MetricsPage` keys every sample by NAME without its prefix.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

PREFIXES = ("sglang:", "sglang_")
# The series the serving view reads (derive.py). A busy server's page runs to hundreds of kB of series it
# does not need (per-stage latencies, HiCache, grammar, LoRA, ...); prometheus_client's parser is pure
# Python (~0.25 ms per kB), so only these families' TYPE, value and bucket lines are handed to it (no
# HELP, `_sum`, `_count` or `_created`: nothing here reads them; bench/bench_metrics.py).
WANTED = (
    "num_running_reqs", "num_queue_reqs", "token_usage", "gen_throughput", "cache_hit_rate",
    "spec_accept_length", "generation_tokens", "prompt_tokens", "cached_tokens", "num_retracted_reqs",
    "num_retracted_requests", "time_to_first_token_seconds", "inter_token_latency_seconds",
    "e2e_request_latency_seconds",
)  # fmt: skip


def _family_lines(names: Iterable[str]) -> re.Pattern[str]:
    alternatives = "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
    return re.compile(
        rf"^(?:# TYPE )?sglang[:_](?:{alternatives})(?:_total|_bucket)?[ {{].*$",
        re.MULTILINE,
    )


_WANTED_LINES = _family_lines(WANTED)
_WANTED_TYPES = frozenset(p + n + s for p in PREFIXES for n in WANTED for s in ("", "_total"))


def wanted_lines(text: str) -> list[str]:
    """The lines of the `WANTED` families. A page in the text format groups each family's samples under
    its `# TYPE` line, so splitting at those (C speed) and keeping the wanted groups is 4x cheaper than a
    regex over every line; whatever comes before the first `# TYPE` (an untyped page) goes through the
    regex."""
    chunks = ("\n" + text).split("\n# TYPE ")
    lines = _WANTED_LINES.findall(chunks[0])
    for chunk in chunks[1:]:
        if chunk[: chunk.find(" ")] in _WANTED_TYPES:
            lines += ("# TYPE " + chunk).splitlines()
    return lines


Labels = tuple[tuple[str, str], ...]


@dataclass
class MetricsPage:
    """One scrape: sample name (prefix removed) -> [(labels, value)], and the histograms' buckets.

    `buckets[NAME]` (NAME without `_bucket`) maps each label set but `le` to [(upper bound, count)]
    sorted by bound; `sums`/`counts` hold their `_sum` / `_count` per label set."""

    samples: dict[str, list[tuple[Labels, float]]] = field(default_factory=dict)
    buckets: dict[str, dict[Labels, list[tuple[float, float]]]] = field(default_factory=dict)

    def names(self) -> set[str]:
        return set(self.samples) | set(self.buckets)

    def values(self, name: str) -> list[tuple[Labels, float]]:
        return self.samples.get(name, [])

    def total(self, name: str) -> float | None:
        """The sum over every label set (counters of several ranks or models), None when absent."""
        rows = self.samples.get(name)
        return None if not rows else sum(v for _, v in rows)


def _strip(name: str) -> str | None:
    for prefix in PREFIXES:
        if name.startswith(prefix):
            return name[len(prefix) :]
    return None


_SAMPLE = re.compile(r"(sglang[:_][A-Za-z0-9_:]*)(?:\{([^{}\\]*)\})? (\S+)(?: -?\d+)?")
_LABELS = re.compile(r'(?:[a-zA-Z_]\w*="[^"\\]*",?)*')
_LABEL = re.compile(r'([a-zA-Z_]\w*)="([^"\\]*)"')


Sample = tuple[str, Labels, float | None, float]  # name, labels but `le`, the bucket bound, value
_LABEL_CACHE: dict[str, tuple[Labels, float | None] | None] = {}  # a server's label sets repeat each scrape


def _plain_labels(raw: str) -> tuple[Labels, float | None] | None:
    hit = _LABEL_CACHE.get(raw, False)
    if hit is not False:
        return hit  # type: ignore[return-value]
    parsed: tuple[Labels, float | None] | None = None
    if _LABELS.fullmatch(raw) is not None:
        pairs = dict(_LABEL.findall(raw))
        le = pairs.pop("le", None)
        try:
            parsed = (tuple(sorted(pairs.items())), None if le is None else float(le))
        except ValueError:
            parsed = None
    if len(_LABEL_CACHE) > 20_000:
        _LABEL_CACHE.clear()
    _LABEL_CACHE[raw] = parsed
    return parsed


def _plain_samples(lines: Iterable[str]) -> list[Sample] | None:
    """The samples of plain lines (no escapes in label values, one sample per line), as
    prometheus_client reads them; None when any line is not that plain (then prometheus_client reads
    the page: it is the parser of record, this is the measured fast path it agrees with, tests/core)."""
    out: list[Sample] = []
    for line in lines:
        if not line or line[0] == "#":
            continue
        m = _SAMPLE.fullmatch(line)
        if m is None:
            return None
        name, raw, value = m.groups()
        labels = _plain_labels(raw) if raw else ((), None)
        if labels is None or (labels[1] is not None and not name.endswith("_bucket")):
            return None  # an `le` outside a histogram's buckets: prometheus_client's reading
        try:
            out.append((name, labels[0], labels[1], float(value)))
        except ValueError:
            return None
    return out


def _client_samples(text: str) -> list[Sample]:
    out: list[Sample] = []
    for family in text_string_to_metric_families(text):
        if _strip(family.name) is None:
            continue
        for sample in family.samples:
            bucket = sample.name.endswith("_bucket") and "le" in sample.labels
            le = float(sample.labels["le"]) if bucket else None
            out.append(
                (sample.name, _labels(sample.labels, skip="le" if bucket else ""), le, float(sample.value))
            )
    return out


def parse_metrics(text: str, *, everything: bool = False, fast: bool = True) -> MetricsPage:
    """The `sglang:` / `sglang_` samples of a Prometheus text page: the `WANTED` families (everything
    with `everything=True`); other series are skipped. `fast=False` reads every line with
    prometheus_client's parser (the reference the fast path is checked against).

    A malformed page raises ValueError (prometheus_client's own), which callers report as such."""
    page = MetricsPage()
    lines = text.splitlines() if everything else wanted_lines(text)
    samples = _plain_samples(lines) if fast else None
    if samples is None:
        samples = _client_samples("\n".join(lines) + "\n")
    for sample_name, labels, le, value in samples:
        name = _strip(sample_name)
        if name is None:
            continue
        if le is not None:
            page.buckets.setdefault(name[: -len("_bucket")], {}).setdefault(labels, []).append((le, value))
            continue
        page.samples.setdefault(name, []).append((labels, value))
    for per_labels in page.buckets.values():
        for rows in per_labels.values():
            rows.sort()
    return page


def _labels(labels: dict[str, str], skip: str = "") -> Labels:
    """Sorted (name, value) pairs, `skip` left out."""
    return tuple(sorted((k, v) for k, v in labels.items() if k != skip))


def merged_buckets(rows: Iterable[list[tuple[float, float]]]) -> list[tuple[float, float]]:
    """Cumulative buckets of several label sets added up by bound."""
    total: dict[float, float] = {}
    for series in rows:
        for bound, count in series:
            total[bound] = total.get(bound, 0.0) + count
    return sorted(total.items())


def quantile(buckets: list[tuple[float, float]], q: float) -> float | None:
    """Prometheus's histogram_quantile over cumulative (bound, count) pairs: linear inside the bucket
    holding rank q*total; the +Inf bucket answers with the highest finite bound. None without samples."""
    if not buckets:
        return None
    total = buckets[-1][1]
    if total <= 0:
        return None
    rank = q * total
    lower_bound, lower_count = 0.0, 0.0
    for bound, count in buckets:
        if count >= rank:
            if bound == float("inf"):
                return lower_bound
            if count == lower_count:
                return bound
            return lower_bound + (bound - lower_bound) * (rank - lower_count) / (count - lower_count)
        lower_bound, lower_count = bound, count
    return buckets[-1][0] if buckets[-1][0] != float("inf") else lower_bound

"""Report one finished output: the stats table (HTML) and a token-length histogram (PNG).

Runs after finalize and reads the output as a user would (mintdim.open); writes only
into its report directory under the work directory, which `snakemake --report` collects.
The plot needs matplotlib (optional: without it the table is still written).
"""

from __future__ import annotations

import html
import json
import os

from ..reading.summary import format_summary, stats_rows, summarize, text_histogram


def _summary_figures(s: dict) -> list[tuple[str, str]]:
    """The (name, value) rows of the page's first table: the output's figures in words."""
    tok = s["tokenizer"]
    return [
        ("output", s["path"]),
        ("samples", f"{s['samples']:,}"),
        ("tokens", f"{s['tokens']:,}"),
        ("record slots", f"{s['slots']:,}"),
        ("padding ratio", f"{100 * s['padding_ratio']:.1f}%"),
        *(
            [
                (
                    "packing",
                    f"{s['packing']['rows']:,} rows of {s['packing']['row_length']:,}: efficiency "
                    f"{100 * s['packing']['efficiency']:.3f}% (lower bound "
                    f"{s['packing']['lower_bound_rows']:,} rows); overflow "
                    f"{s['packing']['overflow']['policy']}: {s['packing']['overflow']['dropped']:,} dropped, "
                    f"{s['packing']['overflow']['truncated']:,} truncated",
                )
            ]
            if s.get("packing")
            else []
        ),
        *(
            [
                (
                    "overflow",
                    f"{s['overflow']['policy']}: {s['overflow']['dropped']:,} dropped, "
                    f"{s['overflow']['truncated']:,} truncated",
                )
            ]
            if s.get("overflow")
            else []
        ),
        *(
            [
                (
                    "skipped records",
                    f"{s['skipped_records']:,}, listed in skipped_index.jsonl (source.on_bad_record: skip)",
                )
            ]
            if "skipped_records" in s
            else []
        ),
        ("dtype", f"{s['token_dtype']} ({s['bytes_per_token']} bytes/token, little-endian)"),
        (
            "tokenizer",
            f"{tok.get('type')} {tok.get('path')} (vocab {tok.get('vocab_size')}, "
            f"pad_id {tok.get('pad_id')}, unk_id {tok.get('unk_id')})",
        ),
        (
            "shards",
            f"{s['shards']} files, {s['bytes'] / 2**20:.1f} MiB, {s['samples_per_shard']:,} samples per "
            "shard",
        ),
        ("duplicates", f"{s['duplicate_groups']:,} groups, {s['duplicate_samples']:,} samples"),
        ("UNK", f"{s['samples_with_unk']:,} samples, {s['unk_tokens']:,} tokens"),
    ]


def render_html(s: dict) -> str:
    esc = html.escape
    figures = _summary_figures(s)
    header, rows = stats_rows(s)
    out = [
        "<!DOCTYPE html>",
        '<html><head><meta charset="utf-8"><title>MintDim output stats</title>',
        "<style>table{border-collapse:collapse}td,th{border:1px solid #bbb;padding:2px 8px;text-align:right}"
        "th{background:#eee}td.k{text-align:left}</style></head><body>",
        f"<h3>MintDim output {esc(s['path'])}</h3>",
        "<table>",
    ]
    out += [f'<tr><td class="k">{esc(k)}</td><td class="k">{esc(v)}</td></tr>' for k, v in figures]
    out += [
        "</table>",
        "<h4>Per unit size</h4>",
        "<table>",
        "<tr>" + "".join(f"<th>{esc(h)}</th>" for h in header) + "</tr>",
    ]
    out += ["<tr>" + "".join(f"<td>{esc(c)}</td>" for c in r) + "</tr>" for r in rows]
    out += [
        "</table>",
        "<p>padding = 1 - tokens / (samples &times; unit size)</p>",
        "<h4>Token lengths</h4>",
        "<pre>" + esc("\n".join(text_histogram(s))) + "</pre>",
        "</body></html>",
    ]
    return "\n".join(out) + "\n"


def plot_lengths(s: dict, path: str) -> bool:
    """Histogram of token lengths with a dashed line at each unit size. False without matplotlib."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return False
    h = s["histogram"]
    edges, counts = h["edges"], h["counts"]
    fig = Figure(figsize=(9, 5.6), dpi=100, layout="constrained")
    top, bottom = fig.subplots(2, 1, height_ratios=[3, 1.3])
    top.bar(
        edges[:-1], counts, width=h["width"], align="edge", color="#4c72b0", edgecolor="white", linewidth=0.5
    )
    peak = max(counts) if counts else 1
    for size in s["unit_sizes"]:
        top.axvline(size, color="#c44e52", linestyle="--", linewidth=1)
        top.text(
            size, peak * 1.02, f"unit {size}", rotation=90, ha="right", va="top", fontsize=8, color="#c44e52"
        )
    top.set_xlim(0, edges[-1])
    top.set_xlabel("token count per sample")
    top.set_ylabel("samples")
    top.set_title(
        f"{s['path']}: {s['samples']:,} samples, {s['tokens']:,} tokens, "
        f"padding {100 * s['padding_ratio']:.1f}%",
        fontsize=10,
    )
    units = s["units"]
    labels = [str(u["unit_size"]) for u in units]
    bottom.bar(labels, [100 * u["padding_ratio"] for u in units], color="#dd8452")
    for k, u in enumerate(units):
        bottom.text(
            k, 100 * u["padding_ratio"], f"{u['samples']:,} samples", ha="center", va="bottom", fontsize=8
        )
    bottom.set_ylim(0, 115)
    bottom.set_xlabel("unit size")
    bottom.set_ylabel("padding %")
    fig.savefig(path, metadata={"Software": None})
    return True


def write_report(done_path: str, report_dir: str, log=print) -> dict:
    with open(done_path, encoding="utf-8") as f:
        done = json.load(f)
    summary = summarize(done["path"])
    summary["path"] = done["output"]  # the directory as the config declares it
    os.makedirs(report_dir, exist_ok=True)
    with open(os.path.join(report_dir, "stats.html"), "w", encoding="utf-8") as f:
        f.write(render_html(summary))
    with open(os.path.join(report_dir, "stats.txt"), "w", encoding="utf-8") as f:
        f.write(format_summary(summary) + "\n")
    if plot_lengths(summary, os.path.join(report_dir, "lengths.png")):
        log(f"[unit-build] report {done['output']}: {report_dir} (stats.html, lengths.png)")
    else:
        log(
            f"[unit-build] report {done['output']}: {report_dir} (stats.html; no plot: matplotlib not "
            "installed)"
        )
    return summary

"""REPORT/kv_plan/measured.html: bench/kv_plan.py's results as a page of the report, self-contained
(inline style in the report's own, no script, nothing fetched)."""

import html

STYLE = """
:root { --ink: #1d1d1f; --muted: #666; --line: #ddd; --panel: #f7f7f8; --accent: #0b61a4; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff;
       font: 14px/1.45 "DejaVu Sans", "Noto Sans", system-ui, sans-serif; }
header.top { background: #22303c; color: #fff; padding: 14px 28px; }
header.top h1 { margin: 0; font-size: 22px; font-weight: 600; overflow-wrap: anywhere; }
header.top .sub { color: #c9d3dc; font-size: 13px; margin-top: 2px; overflow-wrap: anywhere; }
header.top a { color: #9fd0ff; }
main { padding: 8px 28px 48px; max-width: 1100px; }
section { margin-top: 28px; }
h2 { font-size: 18px; margin: 0 0 10px; padding-bottom: 4px; border-bottom: 2px solid #e8e8ea; }
p.note { color: var(--muted); font-size: 12.5px; }
table.results { border-collapse: collapse; }
table.results th, table.results td { padding: 3px 12px; border-bottom: 1px solid var(--line); text-align: right; }
table.results th { font-weight: 600; background: var(--panel); }
table.results td.name, table.results th.name { text-align: left; }
td.plan { font-weight: 600; }
code { font-family: "DejaVu Sans Mono", monospace; font-size: 12.5px; }
"""

DESCRIPTIONS = {
    "full": "the whole cache (no press)",
    "plan": "headscan's plan (<code>headscan.kvpress.press</code>)",
    "on-the-fly": "kvpress's <code>DuoAttentionPress(on_the_fly_scoring=True)</code> at the same ratio",
    "random": "random streaming heads at the same ratio (mean over seeds)",
}


HAYSTACKS = {"text": "held-back text", "random": "random tokens of the held-back text's vocabulary"}


def _count(number, noun):
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _cell(value, digits):
    return "—" if value is None else f"{value:.{digits}f}"


def _length_table(row):
    out = ['<table class="results"><tr><th class="name">method</th><th>needle accuracy</th>'
           '<th>loss (nats)</th></tr>']
    for name, values in row["methods"].items():
        style = "name plan" if name == "plan" else "name"
        out.append(f'<tr><td class="{style}">{DESCRIPTIONS.get(name, html.escape(name))}</td>'
                   f'<td>{_cell(values["needle_accuracy"], 3)}</td><td>{_cell(values["loss"], 4)}</td></tr>')
    seeds = row["methods"]["random"].get("seeds", [])
    if seeds:
        per_seed = ", ".join(f'{s["needle_accuracy"]:.3f}' for s in seeds)
        out.append(f'<tr><td class="name" colspan="3"><span class="note">random, needle accuracy per seed: '
                   f'{per_seed}</span></td></tr>')
    out.append("</table>")
    return "\n".join(out)


def write_page(result, path):
    settings = result["settings"]
    sections = []
    for row in result["lengths"]:
        sections.append(f'<section><h2>{row["length"]:,} tokens of context</h2>'
                        f'<p class="note">KV cache kept: {row["kv_kept"]:.3f} of the full cache; '
                        f'{_count(row["probes"], "needle probe")}, {_count(row["loss_windows"], "loss window")}</p>'
                        f'{_length_table(row)}</section>')
    page = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'">
<meta name="referrer" content="no-referrer">
<meta name="generator" content="headscan bench/kv_plan.py">
<title>headscan · KV-cache plan measured</title>
<style>{STYLE}</style>
</head>
<body>
<header class="top"><h1>KV-cache plan measured</h1>
<div class="sub">{html.escape(result["model"])} · <a href="../index.html">the report</a> ·
<a href="measured.json">measured.json</a></div></header>
<main>
<section><h2>What was measured</h2>
<p>{result["streaming_kv_heads"]} of {result["kv_heads"]} key/value heads keep only the first
{result["sink_size"]} and the last {result["recent_size"]} tokens of the context (DuoAttention's
streaming heads, applied by kvpress); each method chooses that many heads. Needle accuracy: a needle
of {settings["needle_tokens"]} random tokens at depths {", ".join(f"{d:.0%}" for d in settings["depths"])}
of {_count(settings["haystacks"], "haystack")} of {HAYSTACKS.get(settings["haystack"], "?")};
after the context its first
{settings["cue"]} tokens are given and the model continues greedily: the share of the rest it
predicts. Loss: mean next-token loss of {settings["loss_tokens"]} tokens of held-back text after the
context, over {_count(settings["loss_windows"], "window")}. Random: {settings["seeds"]} seeds
(0 … {settings["seeds"] - 1}), their mean. Held-back text: <code>{html.escape(result["heldout"])}</code>.</p></section>
{chr(10).join(sections)}
</main>
</body>
</html>
"""
    path.write_text(page, encoding="utf-8")

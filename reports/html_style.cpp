// The stylesheet inlined into every page (no web fonts: local families only).
#include "reports/html_assets.h"

namespace headscan {

const char* report_stylesheet() {
  return R"CSS(
:root { --ink: #1d1d1f; --muted: #666; --line: #ddd; --panel: #f7f7f8; --accent: #0b61a4; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--ink); background: #fff;
       font: 14px/1.45 "DejaVu Sans", "Noto Sans", "Noto Sans CJK SC", system-ui, sans-serif; }
header.top { background: #22303c; color: #fff; padding: 14px 28px; }
header.top h1 { margin: 0; font-size: 22px; font-weight: 600; overflow-wrap: anywhere; }
header.top .sub { color: #c9d3dc; font-size: 13px; margin-top: 2px; overflow-wrap: anywhere; }
header.top a { color: #9fd0ff; }
nav.sections { position: sticky; top: 0; z-index: 5; background: #fff; border-bottom: 1px solid var(--line);
               padding: 6px 28px; display: flex; gap: 16px; flex-wrap: wrap; font-size: 13px; }
nav.sections a { color: var(--accent); text-decoration: none; }
main { padding: 8px 28px 48px; max-width: 1400px; }
section { margin-top: 28px; }
h2 { font-size: 18px; margin: 0 0 10px; padding-bottom: 4px; border-bottom: 2px solid #e8e8ea; }
h3 { font-size: 15px; margin: 18px 0 8px; }
p.note, .note { color: var(--muted); font-size: 12.5px; }
code, .mono { font-family: "DejaVu Sans Mono", monospace; font-size: 12.5px; }
a { color: var(--accent); }
.cards { display: flex; flex-wrap: wrap; gap: 16px; }
.card { background: var(--panel); border: 1px solid #e6e6e9; border-radius: 6px; padding: 10px 14px; min-width: 280px; flex: 1 1 320px; }
.card h3 { margin-top: 0; }
table.kv { border-collapse: collapse; width: 100%; }
table.kv th { text-align: left; font-weight: normal; color: var(--muted); padding: 2px 12px 2px 0; white-space: nowrap; vertical-align: top; }
table.kv td { padding: 2px 0; overflow-wrap: anywhere; }
.warnings { background: #fff4e0; border: 1px solid #f0c36d; border-radius: 6px; padding: 8px 14px; margin-top: 14px; }
.warnings li { overflow-wrap: anywhere; }
.badge { display: inline-block; padding: 1px 7px; border-radius: 9px; font-size: 12px; margin: 1px 2px 1px 0; white-space: nowrap; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 14px; margin: 10px 0; font-size: 13px; }
.legend .swatch { display: inline-block; width: 14px; height: 14px; border-radius: 3px; vertical-align: -2px; margin-right: 5px; border: 1px solid rgba(0,0,0,.15); }
.grid { display: grid; gap: 2px; width: max-content; max-width: 100%; overflow-x: auto; }
.grid .axis { font-size: 11px; color: var(--muted); display: flex; align-items: center; justify-content: center; }
.grid .axis.row { justify-content: flex-end; padding-right: 6px; }
.headmap .cell { display: flex; align-items: center; justify-content: center; text-decoration: none; font-size: 11px;
                 border-radius: 3px; min-height: 34px; outline-offset: 1px; }
.headmap .cell:hover, .scoremap a:hover { outline: 2px solid #000; }
.scoremaps { display: flex; flex-wrap: wrap; gap: 22px; }
.scoremap h3 { margin: 0 0 2px; font-size: 13.5px; }
.scoremap .meaning { color: var(--muted); font-size: 11.5px; max-width: 330px; margin-bottom: 6px; }
.scoremap .grid { gap: 1px; }
.scoremap a { display: block; min-width: 10px; min-height: 14px; }
.scoremap a.missing { background: repeating-linear-gradient(45deg, #eee 0 3px, #fafafa 3px 6px); }
.scale { display: flex; align-items: center; gap: 6px; font-size: 11px; color: var(--muted); margin-top: 4px; }
.scale .bar { width: 120px; height: 9px; border-radius: 2px; }
#tooltip { position: fixed; z-index: 20; pointer-events: none; background: #fff; border: 1px solid #bbb; border-radius: 6px;
           box-shadow: 0 4px 14px rgba(0,0,0,.18); padding: 8px 10px; font-size: 12px; max-width: 420px; display: none; }
#tooltip table { border-collapse: collapse; }
#tooltip td { padding: 0 10px 0 0; }
#tooltip .title { font-weight: bold; margin-bottom: 4px; }
.table-wrap { overflow-x: auto; max-height: 640px; overflow-y: auto; border: 1px solid var(--line); border-radius: 6px; }
table.data { border-collapse: collapse; font-size: 12.5px; width: max-content; min-width: 100%; }
table.data th, table.data td { padding: 3px 10px; border-bottom: 1px solid #eee; text-align: left; white-space: nowrap; }
table.data thead th { position: sticky; top: 0; background: #f1f2f4; z-index: 1; }
table.data td.num { text-align: right; font-variant-numeric: tabular-nums; }
table.data td.count, table.data th.count { text-align: center; font-variant-numeric: tabular-nums; }
table.data.compact { min-width: 0; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th[aria-sort="ascending"]::after { content: " ▲"; font-size: 10px; }
table.sortable th[aria-sort="descending"]::after { content: " ▼"; font-size: 10px; }
table.data tbody tr:hover { background: #f5f9ff; }
.tok { font-family: "DejaVu Sans Mono", "Noto Sans Mono CJK SC", monospace; background: #f1f2f4; border-radius: 3px; padding: 0 3px; white-space: pre; }
img.plot { max-width: 100%; height: auto; border: 1px solid #eee; border-radius: 4px; }
.figures { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
.figures figure { margin: 0; max-width: 100%; }
.figures figcaption { font-size: 12px; color: var(--muted); }
.viewer { background: var(--panel); border: 1px solid #e6e6e9; border-radius: 6px; padding: 12px 14px; }
.viewer .controls { display: flex; flex-wrap: wrap; gap: 10px 18px; align-items: center; margin-bottom: 10px; }
.viewer select { font: inherit; padding: 2px 4px; max-width: 380px; }
.viewer .panes { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
.viewer svg text { font-family: "DejaVu Sans Mono", "Noto Sans Mono CJK SC", monospace; font-size: 12px; cursor: default; }
.viewer svg text.special { fill: #888; }
.viewer svg text.weight { font-size: 10px; fill: #08306b; }
.viewer .readout { min-height: 2.8em; font-size: 12.5px; margin: 6px 0 8px; overflow-wrap: anywhere; }
.viewer canvas, canvas.probe { border: 1px solid #ccc; background: #fff; image-rendering: pixelated; }
.viewer .status { color: #a33; }
.headnav { display: flex; gap: 14px; font-size: 13px; margin-top: 6px; }
details.raw pre { background: var(--panel); padding: 10px; overflow-x: auto; font-size: 12px; }
#selftest { white-space: pre-wrap; font-size: 11px; }
)CSS";
}

}  // namespace headscan

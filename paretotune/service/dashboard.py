"""The dashboard: one HTML page with no external assets (works offline); it polls the JSON API every second
and redraws the campaign table and the selected campaign's Pareto plot (an SVG of its first two objective
columns, front points highlighted) as results arrive.

``/#campaign=<id>`` opens with that campaign's plot. With a token, open ``/#token=...``: the page sends it as a bearer
header and never puts it in a URL it requests.
"""
from __future__ import annotations

PAGE = r"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>paretotune</title>
<style>
body{font:14px system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse}td,th{padding:.25em .6em;border-bottom:1px solid #ddd;text-align:left}
tr.sel{background:#eef4ff}tr{cursor:pointer}
.bar{width:140px;height:10px;background:#eee;display:inline-block;vertical-align:middle}
.bar>i{display:block;height:100%;background:#3a7}
.status-failed{color:#b00}.status-cancelled{color:#888}.status-running{color:#06c}
#plot-box{margin-top:1.2em}svg text{font-size:11px}
.pt{fill:#bbb}.pt.front{fill:#d33}.pt.base{fill:#06c}
</style></head>
<body>
<h1>paretotune campaigns</h1>
<p id="msg"></p>
<form id="submit-form"><label>queue a campaign file: <input type="file" id="campaign-file"
accept=".yaml,.yml,.json"></label> <button type="submit">submit</button> <span id="submit-msg"></span></form>
<table id="campaigns"><thead><tr><th>id</th><th>name</th><th>kind</th><th>status</th><th>progress</th>
<th>failures</th><th>open</th></tr></thead><tbody></tbody></table>
<p><small>API reference: <a href="/docs">/docs</a> (offline)</small></p>
<div id="plot-box"><h2 id="plot-title">Pareto plot</h2>
<svg id="pareto-plot" width="560" height="380" role="img" aria-label="Pareto plot"></svg>
<p><small>grey: evaluated, red: Pareto front, blue: baseline (first two objective columns)</small></p></div>
<script>
"use strict";
const params = new URLSearchParams(location.hash.slice(1));
const token = params.get("token");
const headers = token ? {Authorization: "Bearer " + token} : {};
let selected = params.get("campaign");
const esc = s => String(s).replace(/[&<>"']/g, c => ({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;","'":"&#39;"}[c]));
async function api(path) {
  const r = await fetch(path, {headers});
  if (!r.ok) throw new Error(path + ": HTTP " + r.status);
  return r.json();
}
function table(list) {
  const body = document.querySelector("#campaigns tbody");
  body.innerHTML = list.map(c => {
    const p = c.progress, pct = Math.round(100 * p.fraction);
    return `<tr data-id="${esc(c.id)}" class="${c.id === selected ? "sel" : ""}"><td>${esc(c.id)}</td>` +
      `<td>${esc(c.name)}</td><td>${esc(c.kind)}</td><td class="status-${esc(c.status)}">${esc(c.status)}</td>` +
      `<td><span class="bar"><i style="width:${pct}%"></i></span> ${p.evaluated}/${p.budget}</td>` +
      `<td>${p.failures}</td><td>${links(c.id)}</td></tr>`;
  }).join("");
  body.querySelectorAll("tr").forEach(tr => tr.onclick = () => { selected = tr.dataset.id; refresh(); });
  body.querySelectorAll("a[data-path]").forEach(a => a.onclick = ev => { ev.stopPropagation(); ev.preventDefault();
    openWithToken(a.dataset.path); });
}
function links(id) {
  const base = `/campaigns/${encodeURIComponent(id)}`;
  return [["report", "/report"], ["front", "/front"], ["artifacts", "/artifacts"]].map(([label, tail]) =>
    `<a href="${base}${tail}" data-path="${base}${tail}">${label}</a>`).join(" · ");
}
async function openWithToken(path) {
  // the API wants the bearer token in a header, which a plain link cannot send: fetch, then show the answer
  try {
    const r = await fetch(path, {headers});
    const blob = await r.blob();
    window.open(URL.createObjectURL(blob), "_blank");
  } catch (e) { document.getElementById("msg").textContent = String(e); }
}
document.getElementById("submit-form").onsubmit = async ev => {
  ev.preventDefault();
  const file = document.getElementById("campaign-file").files[0], out = document.getElementById("submit-msg");
  if (!file) { out.textContent = "choose a campaign file first"; return; }
  const json = file.name.endsWith(".json");
  const r = await fetch("/campaigns", {method: "POST", body: await file.text(),
    headers: {...headers, "Content-Type": json ? "application/json" : "application/yaml"}});
  const doc = await r.json();
  out.textContent = r.ok ? `queued as ${doc.id}` : `refused: ${JSON.stringify(doc.detail)}`;
  if (r.ok) { selected = doc.id; refresh(); }
};
function plot(doc) {
  const svg = document.getElementById("pareto-plot"), W = 560, H = 380, m = 50;
  const cols = doc.objectives;
  if (cols.length < 2) { svg.innerHTML = `<text x="20" y="30">no points yet</text>`; return; }
  const [cx, cy] = cols;
  const pts = doc.points.filter(p => p.values[cx.column] !== null && p.values[cy.column] !== null);
  const xs = pts.map(p => p.values[cx.column]), ys = pts.map(p => p.values[cy.column]);
  const span = v => { let lo = Math.min(...v), hi = Math.max(...v); if (!(hi > lo)) { lo -= 1; hi += 1; }
    return [lo, hi]; };
  const [x0, x1] = pts.length ? span(xs) : [0, 1], [y0, y1] = pts.length ? span(ys) : [0, 1];
  const sx = v => m + (v - x0) / (x1 - x0) * (W - 2 * m), sy = v => H - m - (v - y0) / (y1 - y0) * (H - 2 * m);
  const order = p => (p.front ? 2 : 0) + (p.is_baseline ? 1 : 0);
  const dots = pts.slice().sort((a, b) => order(a) - order(b)).map(p =>
    `<circle class="pt${p.front ? " front" : ""}${p.is_baseline ? " base" : ""}" r="${p.front ? 5 : 3.5}" ` +
    `cx="${sx(p.values[cx.column]).toFixed(1)}" cy="${sy(p.values[cy.column]).toFixed(1)}">` +
    `<title>#${p.candidate_id}: ${esc(cx.column)}=${p.values[cx.column]}, ` +
    `${esc(cy.column)}=${p.values[cy.column]}</title></circle>`);
  svg.innerHTML = `<line x1="${m}" y1="${H - m}" x2="${W - m}" y2="${H - m}" stroke="#444"/>` +
    `<line x1="${m}" y1="${m}" x2="${m}" y2="${H - m}" stroke="#444"/>` +
    `<text x="${W / 2}" y="${H - 12}" text-anchor="middle">${esc(cx.column)} (${cx.direction})</text>` +
    `<text transform="translate(14 ${H / 2}) rotate(-90)" text-anchor="middle">` +
    `${esc(cy.column)} (${cy.direction})</text>` +
    `<text x="${m}" y="${H - m + 14}">${x0.toPrecision(4)}</text>` +
    `<text x="${W - m}" y="${H - m + 14}" text-anchor="end">${x1.toPrecision(4)}</text>` +
    `<text x="${m - 4}" y="${H - m}" text-anchor="end">${y0.toPrecision(4)}</text>` +
    `<text x="${m - 4}" y="${m + 4}" text-anchor="end">${y1.toPrecision(4)}</text>` +
    dots.join("");
  svg.dataset.points = String(pts.length);
}
async function refresh() {
  try {
    const list = (await api("/campaigns")).campaigns;
    if (!list.some(c => c.id === selected)) {
      const running = list.find(c => c.status === "running"), done = list.filter(c => c.progress.evaluated > 0);
      selected = running ? running.id : (done.length ? done[done.length - 1].id : null);
    }
    table(list);
    if (selected) {
      document.getElementById("plot-title").textContent = "Pareto plot: " + selected;
      plot(await api(`/campaigns/${encodeURIComponent(selected)}/points`));
    }
    document.getElementById("msg").textContent = "";
  } catch (e) { document.getElementById("msg").textContent = String(e); }
}
refresh(); setInterval(refresh, 1000);
</script></body></html>
"""

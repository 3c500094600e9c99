// wanka's SQL workbench: the cluster's health, run SQL or a shipped analysis, show a table and a
// quick chart, and the dynamic tables with their freshness. Plain JavaScript, no libraries,
// nothing from the network but this server's own /v1 API.
"use strict";

const $ = (id) => document.getElementById(id);
const state = { analyses: [], chosen: null };
const STATES = ["ok", "watch", "drain", "replace"];  // warehouse/health.py, best to worst

// A user and password (what `make run` prints) log in with HTTP Basic; else a bearer token.
function headers() {
  const h = { "Content-Type": "application/json" };
  const user = $("user").value.trim(), password = $("password").value, token = $("token").value.trim();
  if (user && password) {
    const bytes = new TextEncoder().encode(`${user}:${password}`);
    h.Authorization = "Basic " + btoa(String.fromCharCode(...bytes));
  } else if (token) {
    h.Authorization = "Bearer " + token;
  }
  return h;
}

async function api(path, body) {
  const init = body === undefined ? { headers: headers() }
    : { method: "POST", headers: headers(), body: JSON.stringify(body) };
  const response = await fetch(path, init);
  const data = await response.json();
  if (!response.ok) throw Object.assign(new Error(data.error || response.statusText), { status: response.status });
  return data;
}

function el(tag, attrs = {}, text) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function isNumber(type) {
  return /INT|DOUBLE|FLOAT|DECIMAL|REAL|NUMERIC/i.test(type);
}

function renderTable(target, columns, rows) {
  const table = el("table");
  const head = table.createTHead().insertRow();
  for (const c of columns) head.appendChild(el("th", { title: c.type || "" }, c.name));
  const body = table.createTBody();
  for (const row of rows) {
    const tr = body.insertRow();
    row.forEach((v, i) => {
      const td = tr.insertCell();
      td.textContent = v === null ? "NULL" : typeof v === "object" ? JSON.stringify(v) : String(v);
      if (isNumber(columns[i].type || "")) td.className = "n";
    });
  }
  target.replaceChildren(table);
}

// A quick chart: the first numeric column against the first column (a line over time, else bars).
function renderChart(columns, rows) {
  const figure = $("chart");
  figure.replaceChildren();
  const y = columns.findIndex((c, i) => i > 0 && isNumber(c.type));
  if (y < 0 || rows.length < 2) return;
  const temporal = /TIME|DATE/i.test(columns[0].type);
  const points = rows.slice(0, 500).map((r) => [r[0], Number(r[y])]).filter((p) => isFinite(p[1]));
  const W = 720, H = 240, L = 60, B = 40;
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
  svg.setAttribute("width", W);
  svg.setAttribute("height", H);
  const max = Math.max(...points.map((p) => p[1]), 0), min = Math.min(...points.map((p) => p[1]), 0);
  const sy = (v) => H - B - ((v - min) / (max - min || 1)) * (H - B - 10);
  const sx = (i) => L + (i + 0.5) * ((W - L - 10) / points.length);
  const add = (tag, attrs, text) => {
    const n = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) n.setAttribute(k, v);
    if (text !== undefined) n.textContent = text;
    svg.appendChild(n);
  };
  add("line", { x1: L, y1: sy(min), x2: W - 10, y2: sy(min), stroke: "#999" });
  add("text", { x: 4, y: 14, "font-size": 11 }, `${columns[y].name} (max ${max.toLocaleString()})`);
  if (temporal) {
    add("polyline", { fill: "none", stroke: "#1f77b4", "stroke-width": 1.5,
      points: points.map((p, i) => `${sx(i)},${sy(p[1])}`).join(" ") });
  } else {
    const w = Math.max(1, (W - L - 10) / points.length - 2);
    points.forEach((p, i) => add("rect", { x: sx(i) - w / 2, y: Math.min(sy(p[1]), sy(0)), width: w,
      height: Math.abs(sy(0) - sy(p[1])), fill: "#1f77b4" }));
  }
  const first = points[0][0], last = points[points.length - 1][0];
  add("text", { x: L, y: H - 8, "font-size": 10 }, String(first));
  add("text", { x: W - 10, y: H - 8, "font-size": 10, "text-anchor": "end" }, String(last));
  figure.appendChild(svg);
}

async function run() {
  $("status").textContent = "running…";
  $("status").className = "muted";
  const started = performance.now();
  try {
    const sql = $("sql").value;
    const chosen = state.chosen;
    if (chosen && sql !== chosen.sql) choose("");  // edited: plain SQL now, no parameters
    let data;
    if (chosen && sql === chosen.sql) {
      const params = {};
      for (const input of $("params").querySelectorAll("input")) params[input.name] = input.value;
      data = await api(`/v1/analyses/${chosen.name}`, { params, max_rows: 5000 });
    } else {
      data = await api("/v1/query", { sql, max_rows: 5000 });
    }
    renderTable($("result"), data.columns, data.rows);
    renderChart(data.columns, data.rows);
    const ms = Math.round(performance.now() - started);
    $("status").textContent = `${data.rows.length} rows${data.truncated ? " (truncated)" : ""}, ${ms} ms`;
  } catch (error) {
    $("result").replaceChildren();
    $("chart").replaceChildren();
    $("status").textContent = error.message;
    $("status").className = "error";
  }
}

function choose(name) {
  const a = state.analyses.find((x) => x.name === name) || null;
  state.chosen = a;
  $("params").replaceChildren();
  $("about").textContent = a ? a.title : "";
  $("examples").value = a ? a.name : "";
  if (!a) return;
  $("sql").value = a.sql;
  for (const p of a.params) {
    const label = el("label", { title: p.about }, `$${p.name} `);
    label.appendChild(el("input", { name: p.name, value: p.default }));
    $("params").appendChild(label);
  }
}

async function loadAnalyses() {
  if (state.analyses.length) return;  // listed already: a new token lists the same
  try {
    state.analyses = await api("/v1/analyses");
  } catch (error) {
    $("about").textContent = "analyses: " + error.message;
    return;
  }
  if (!state.chosen) $("about").textContent = "";  // an earlier try's error
  for (const a of state.analyses) $("examples").appendChild(el("option", { value: a.name }, `${a.name}: ${a.title}`));
}

async function loadDynamic() {
  const target = $("dynamic");
  try {
    const tables = await api("/v1/dynamic-tables");
    const rows = tables.map((t) => [t.name, t.state, t.freshness, t.lag_s === null ? null : Math.round(t.lag_s),
      t.last_refresh_at, t.refresh_mode]);
    renderTable(target, [{ name: "name" }, { name: "state" }, { name: "freshness" },
      { name: "lag_s", type: "DOUBLE" }, { name: "last refresh" }, { name: "mode" }], rows);
    target.querySelectorAll("tbody tr").forEach((tr, i) => {
      tr.className = tables[i].state === "active" ? "fresh" : "stale";
    });
    target.className = "";
    target.dataset.loaded = String(tables.length);
  } catch (error) {
    target.textContent = error.message;
    target.className = "error";
  }
}

// "2026-11-01T00:28:00+00:00" → "2026-11-01 00:28:00 UTC" (the API's times are UTC).
function when(iso) {
  return iso ? iso.replace("T", " ").replace(/(\+00:00|Z)$/, " UTC") : "";
}

function badge(name, text) {
  return el("span", { class: `state state-${name}` }, text);
}

// What the newest evidence of a finding says, as `wanka health` prints it.
function evidence(e) {
  return (e.code !== null && e.code !== undefined ? `XID ${e.code}: ` : "") + (e.detail || e.kind || "");
}

// One row per finding: each flagged host's own findings (gpu "-") and each flagged GPU's, worst
// host or GPU first (the report's order within a state), its worst finding first.
function healthRows(report) {
  const rank = (r) => STATES.indexOf(r.state);
  const worst = (rules) => STATES[Math.max(...rules.map(rank))];
  const entries = report.nodes.filter((n) => n.rules.length)
    .map((n) => ({ host: n.host, gpu: "-", state: worst(n.rules), rules: n.rules }))
    .concat(report.gpus.map((g) => ({ host: g.host, gpu: String(g.gpu), state: g.state, rules: g.rules })));
  entries.sort((a, b) => rank(b) - rank(a));
  return entries.flatMap((e) => [...e.rules].sort((a, b) => rank(b) - rank(a))
    .map((r) => ({ host: e.host, gpu: e.gpu, ...r })));
}

function renderHealthCounts(report) {
  const counts = report.counts, line = $("health-counts");
  line.replaceChildren(report.as_of ? `as of ${when(report.as_of)}: GPUs ` : "no telemetry yet: GPUs ");
  for (const name of STATES) {
    const n = counts.gpus[name];
    const b = badge(name, `${n.toLocaleString("en-US")} ${name}`);
    if (n === 0) b.classList.add("none");
    line.append(b, " ");
  }
  line.append(el("span", { class: "nodes" },
    `${counts.nodes_flagged.toLocaleString("en-US")} of ${counts.nodes.toLocaleString("en-US")} nodes flagged`));
  line.className = "";
}

async function loadHealth() {
  const section = $("health"), line = $("health-counts"), target = $("health-table");
  delete section.dataset.loaded;
  line.className = "muted";
  try {
    const report = await api("/v1/health");
    const rows = healthRows(report);
    renderHealthCounts(report);
    if (!rows.length) {
      target.replaceChildren(el("p", { class: "muted" }, "no GPU or node flagged"));
    } else {
      renderTable(target, [{ name: "state" }, { name: "host" }, { name: "gpu" }, { name: "rule" },
        { name: "count", type: "INTEGER" }, { name: "newest evidence" }, { name: "last" }],
      rows.map((r) => [r.state, r.host, r.gpu, r.rule, r.count, evidence(r.evidence[0] || {}), when(r.last)]));
      target.querySelectorAll("tbody tr").forEach((tr, i) => {
        tr.className = `state-${rows[i].state}`;
        tr.cells[0].replaceChildren(badge(rows[i].state, rows[i].state));
        tr.cells[5].title = rows[i].evidence.map((e) => `${when(e.ts)}  ${evidence(e)}`).join("\n");
      });
    }
    section.dataset.loaded = String(rows.length);
  } catch (error) {
    target.replaceChildren();
    line.textContent = `health unavailable${error.status ? ` (HTTP ${error.status})` : ""}: ${error.message}`;
    line.className = "error";
  }
}

// The token and the user name are kept in the browser; the password never is.
$("token").value = localStorage.getItem("wanka-token") || "";
$("user").value = localStorage.getItem("wanka-user") || "";
for (const id of ["token", "user", "password"]) {
  $(id).addEventListener("change", () => {
    localStorage.setItem("wanka-token", $("token").value);
    localStorage.setItem("wanka-user", $("user").value);
    loadHealth();
    loadAnalyses();
    loadDynamic();
  });
}
$("examples").addEventListener("change", (e) => choose(e.target.value));
$("run").addEventListener("click", run);
$("reload-dynamic").addEventListener("click", loadDynamic);
$("reload-health").addEventListener("click", loadHealth);
$("sql").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) run();
});
loadHealth();
loadAnalyses();
loadDynamic();

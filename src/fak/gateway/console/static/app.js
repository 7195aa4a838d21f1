// fak console: one ES module, no build step, no dependencies.
// Rule of this file: every string that came from the gateway is put in the page as text
// (textContent / createTextNode), never as markup. Links found in such text are shown as text;
// a web link opens only after a confirmation naming the full address; other schemes never open.

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const store = window.sessionStorage;
const state = {
  page: "holds",
  holds: [],
  skew: 0, // server clock minus ours, seconds
  outcome: new Map(), // hold id -> what the operator did and what came of it
  events: [],
  cursor: 0,
  changesCursor: 0,
  samples: [],
  timers: [],
};

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("data-")) node.setAttribute(key, value);
    else if (key === "title") node.title = value;
    else if (key === "type") node.type = value;
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

function say(text, bad = false) {
  const s = $("status");
  s.textContent = text;
  s.className = bad ? "error" : "";
}

// -- the API, with the operator's keys as headers ------------------------------------------

function headers(json) {
  const h = {};
  const client = store.getItem("fak.client") || "";
  const witness = store.getItem("fak.witness") || "";
  const name = store.getItem("fak.operator") || "";
  if (client) h["Authorization"] = "Bearer " + client;
  if (witness) h["X-Fak-Witness-Key"] = witness;
  if (name) h["X-Fak-Principal"] = name;
  if (json) h["Content-Type"] = "application/json";
  return h;
}

async function api(path, { method = "GET", body, text = false } = {}) {
  const init = { method, headers: headers(body !== undefined), cache: "no-store", credentials: "omit" };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await fetch(path, init);
  if (text && response.ok) return await response.text();
  let data = null;
  try {
    data = await response.json();
  } catch (_) {
    data = null;
  }
  if (!response.ok) {
    const err = (data && data.error) || {};
    const problem = new Error(err.message || "HTTP " + response.status);
    problem.code = err.code || "http_" + response.status;
    problem.status = response.status;
    throw problem;
  }
  return data;
}

// -- text with marked spans and inert links --------------------------------------------------

const LINK = /\b(?:https?:\/\/|javascript:|data:|vbscript:|file:)[^\s"'<>`]+/gi;

function linkNode(url) {
  const web = /^https?:\/\//i.test(url);
  const wrap = el("span", { class: web ? "link" : "link unsafe", title: web ? "a web address from model or tool text" : "not a web link: never opened" }, url);
  if (web) {
    const open = el("button", { type: "button", class: "open-link", text: "open…" });
    open.addEventListener("click", () => {
      const ok = window.confirm("This address was written by a model or a tool, not by fak. Open it in a new tab?\n\n" + url);
      if (ok) window.open(url, "_blank", "noopener,noreferrer");
    });
    wrap.append(open);
  }
  return wrap;
}

function plain(text) {
  const frag = document.createDocumentFragment();
  let at = 0;
  for (const m of text.matchAll(LINK)) {
    if (m.index > at) frag.append(document.createTextNode(text.slice(at, m.index)));
    frag.append(linkNode(m[0]));
    at = m.index + m[0].length;
  }
  if (at < text.length) frag.append(document.createTextNode(text.slice(at)));
  return frag;
}

function marked(text, spans) {
  const box = el("pre", { class: "text" });
  const sorted = [...spans].sort((a, b) => a[0] - b[0]);
  let at = 0;
  for (const [start, end] of sorted) {
    if (start < at) continue;
    box.append(plain(text.slice(at, start)));
    box.append(el("mark", { class: "span", title: "the held value" }, text.slice(start, end)));
    at = end;
  }
  box.append(plain(text.slice(at)));
  return box;
}

// -- held calls ----------------------------------------------------------------------------

function countdown(hold) {
  const left = hold.expires_unix - (Date.now() / 1000 + state.skew);
  if (hold.state !== "pending" && hold.state !== "approved") return hold.state;
  if (left <= 0) return "expired";
  const m = Math.floor(left / 60);
  const s = Math.floor(left % 60);
  return `expires in ${m}:${String(s).padStart(2, "0")}`;
}

function outcomeText(hold) {
  const done = state.outcome.get(hold.id);
  switch (hold.state) {
    case "used":
      return `approved by ${hold.approver}; the next proposal of this call was admitted (once)`;
    case "approved":
      return `approved by ${hold.approver}; waiting for the next proposal of this call`;
    case "revoked":
      return done || "denied (revoked): the same call is refused until the hold's expiry";
    case "expired":
      return "expired without an answer; a new proposal opens a new hold";
    default:
      return done || "";
  }
}

function evidenceNode(hold) {
  const ev = hold.evidence;
  if (!ev && hold.evidence_sent === false) {
    return el("p", { class: "muted" }, "Settled long ago: its evidence is not sent (the journal keeps the record).");
  }
  if (!ev) {
    return el("p", { class: "muted" }, "This hold was opened by another worker: its evidence stays there. Judge from the tool and the digest, or ask for the call again on this worker.");
  }
  const box = el("div", { class: "evidence" });
  const findings = hold.findings || [];
  const bySource = new Map();
  for (const f of findings) {
    for (const src of f.sources) {
      const list = bySource.get(src.result) || [];
      list.push(...src.spans);
      bySource.set(src.result, list);
    }
  }
  const where = el("ul", { class: "findings" });
  for (const f of findings) {
    const sink = hold.sink && (f.arg === hold.sink || f.arg.startsWith(hold.sink + "["));
    const from = f.sources.length
      ? f.sources.map((s) => {
          const r = ev.results[s.result];
          return `${r.tool}${r.call_id ? "#" + r.call_id : ""}`;
        }).join(", ")
      : "no tool result";
    const line = el("li", { class: sink ? "finding sink" : "finding" },
      el("code", { class: "arg" }, f.arg), " = ", el("code", { class: "value" }, f.value),
      el("span", { class: f.in_user ? "origin from-user" : "origin from-tool" },
        f.in_user ? " — the user wrote this value" : ` — NOT in the user's messages; found in: ${from}`));
    where.append(line);
  }
  box.append(el("h4", {}, "Arguments and where their values came from"), where);
  const users = el("ol", { class: "user-msgs" });
  for (const u of ev.user) users.append(el("li", {}, el("pre", { class: "text user-msg" }, plain(u))));
  box.append(el("h4", {}, `What the user asked (${ev.user.length} message${ev.user.length === 1 ? "" : "s"})`),
    ev.user.length ? users : el("p", { class: "muted" }, ev.context ? "no user message in this run" : "the door passed no run context"));
  box.append(el("h4", {}, "Tool results the model was shown"));
  ev.results.forEach((r, i) => {
    const spans = bySource.get(i) || [];
    const card = el("div", { class: spans.length ? "result source" : "result", "data-index": String(i) },
      el("div", { class: "result-head" }, `${r.tool}${r.call_id ? " #" + r.call_id : ""}`,
        spans.length ? el("span", { class: "badge" }, "the held value came from here") : null,
        r.truncated ? el("span", { class: "muted" }, " (cut at 16 KB)") : null),
      marked(r.text, spans));
    box.append(card);
  });
  if (!ev.results.length) box.append(el("p", { class: "muted" }, "no tool result in this run"));
  return box;
}

async function act(hold, approve) {
  const what = approve ? "approve" : "deny";
  try {
    if (approve) {
      const out = await api(`/v1/fak/witness/${encodeURIComponent(hold.id)}`, { method: "POST", body: {} });
      state.outcome.set(hold.id, `approved by ${out.witness.approver}`);
    } else {
      const out = await api("/v1/fak/revoke", { method: "POST", body: { witness: hold.id } });
      state.outcome.set(hold.id, `denied by you: the hold is revoked (trust epoch ${out.trust_epoch}); the same call is refused until the hold's expiry`);
    }
    say(`${what}: done`);
  } catch (e) {
    state.outcome.set(hold.id, `${what} refused: [${e.code}] ${e.message}`);
    say(`${what} refused: [${e.code}] ${e.message}`, true);
  }
  await refreshHolds();
}

function holdNode(hold) {
  const live = hold.state === "pending";
  const args = JSON.stringify(hold.evidence ? hold.evidence.arguments : {}, null, 2);
  const approve = el("button", { type: "button", class: "approve", text: "Approve" });
  const deny = el("button", { type: "button", class: "deny", text: "Deny" });
  approve.disabled = !live;
  deny.disabled = !(live || hold.state === "approved");
  approve.addEventListener("click", () => act(hold, true));
  deny.addEventListener("click", () => act(hold, false));
  return el("article", { class: `hold ${hold.state}`, "data-id": hold.id },
    el("div", { class: "hold-head" },
      el("span", { class: "hold-tool" }, hold.tool),
      el("span", { class: "state" }, hold.state),
      el("span", { class: "countdown", "data-expires": String(hold.expires_unix) }, countdown(hold)),
      el("code", { class: "hold-id" }, hold.id)),
    el("p", { class: "claim" }, el("strong", {}, "Why held: "), hold.claim),
    el("details", { class: "args-box" }, el("summary", {}, "Arguments (redacted as the policy's redact_fields say)"),
      el("pre", { class: "text args" }, plain(args)),
      el("p", { class: "muted" }, "argument digest ", el("code", {}, hold.args_digest))),
    evidenceNode(hold),
    el("div", { class: "actions" }, approve, deny, el("span", { class: "outcome" }, outcomeText(hold))));
}

function renderHolds() {
  const box = $("holds");
  const open = new Set([...box.querySelectorAll("details[open]")].map((d) => d.closest(".hold").dataset.id));
  box.replaceChildren(...state.holds.map(holdNode));
  for (const d of box.querySelectorAll(".hold")) if (open.has(d.dataset.id)) d.querySelector("details").open = true;
  $("holds-empty").hidden = state.holds.length > 0;
  const pending = state.holds.filter((h) => h.state === "pending").length;
  $("hold-count").textContent = pending ? `(${pending})` : "";
}

async function refreshHolds() {
  try {
    const out = await api("/v1/fak/console/holds");
    state.skew = out.now_unix - Date.now() / 1000;
    const before = JSON.stringify(state.holds.map((h) => [h.id, h.state, h.findings]));
    state.holds = out.holds;
    if (before !== JSON.stringify(state.holds.map((h) => [h.id, h.state, h.findings]))) renderHolds();
  } catch (e) {
    say(`held calls: [${e.code}] ${e.message}`, true);
  }
}

function tick() {
  for (const node of document.querySelectorAll(".hold")) {
    const hold = state.holds.find((h) => h.id === node.dataset.id);
    if (hold) node.querySelector(".countdown").textContent = countdown(hold);
  }
}

// -- quarantine ---------------------------------------------------------------------------

function heldNode(h) {
  const use = el("button", { type: "button", class: "use-id", text: "page in…" });
  use.disabled = !h.id;
  use.addEventListener("click", () => {
    $("q-id").value = h.id;
    $("q-witness").focus();
  });
  const spans = h.spans.length
    ? el("ul", { class: "spans" }, ...h.spans.map((s) => el("li", {}, `${s.id}: bytes ${s.start}–${s.end}, ${s.reason}`)))
    : el("p", { class: "muted" }, "the whole result is held");
  const cleared = h.cleared === null ? "unknown" : h.cleared ? "cleared" : "sealed";
  return el("article", { class: "held", "data-id": h.id },
    el("div", { class: "hold-head" },
      el("span", { class: "hold-tool" }, `${h.tool}${h.call_id ? " #" + h.call_id : ""}`),
      el("span", { class: "state" }, `${h.kind} ${h.reason}`),
      el("span", { class: "detector" }, `found by ${h.detector}`),
      el("span", { class: "muted" }, `${h.length} bytes, ${cleared}`),
      el("code", { class: "hold-id" }, h.id || "(no id: the ledger was down)")),
    spans,
    el("h4", {}, "What the model saw instead"),
    el("pre", { class: "text stub" }, plain(h.stub)),
    el("div", { class: "actions" }, use));
}

async function refreshHeld() {
  try {
    const out = await api("/v1/fak/console/quarantine");
    const key = JSON.stringify(out.held.map((h) => [h.id, h.cleared]));
    if (key === state.heldKey) return;
    state.heldKey = key;
    $("held-results").replaceChildren(...out.held.map(heldNode));
    $("held-empty").hidden = out.held.length > 0;
  } catch (e) {
    say(`quarantine: [${e.code}] ${e.message}`, true);
  }
}

// -- the record --------------------------------------------------------------------------

const GROUPS = {
  decisions: ["DECIDE", "DENY", "VDSO_HIT"],
  holds: ["HOLD"],
  approvals: ["WITNESS_APPROVE"],
  revocations: ["WITNESS_REVOKE"],
  quarantines: ["QUARANTINE", "QUARANTINE_SPAN", "RESULT_DENY"],
  results: ["ADMIT", "PAGE_OUT", "PAGE_IN"],
};
const QUARANTINE_KINDS = new Set(GROUPS.quarantines);

function groupOf(kind) {
  for (const [name, kinds] of Object.entries(GROUPS)) if (kinds.includes(kind)) return name;
  return "other";
}

function buildFilters() {
  const box = $("filters");
  for (const name of [...Object.keys(GROUPS), "other"]) {
    const input = el("input", { type: "checkbox" });
    input.checked = true;
    input.dataset.group = name;
    input.addEventListener("change", renderTimeline);
    box.append(el("label", { class: "filter" }, input, " " + name));
  }
  $("filter-tool").addEventListener("input", renderTimeline);
}

function renderTimeline() {
  const on = new Set([...$("filters").querySelectorAll("input")].filter((i) => i.checked).map((i) => i.dataset.group));
  const tool = $("filter-tool").value.toLowerCase();
  const rows = state.events.filter((e) => on.has(groupOf(e.kind)) && (!tool || (e.tool || "").toLowerCase().includes(tool)));
  const body = $("timeline").tBodies[0];
  body.replaceChildren(...rows.slice(-500).reverse().map((e) =>
    el("tr", { class: "row " + groupOf(e.kind), "data-kind": e.kind },
      el("td", {}, String(e.seq)),
      el("td", {}, new Date(Number(e.ts_unix_nano) / 1e6).toISOString().slice(11, 23)),
      el("td", {}, e.kind), el("td", {}, e.tool || ""), el("td", {}, e.verdict || ""),
      el("td", {}, e.reason || ""), el("td", {}, e.by || ""), el("td", {}, e.trace_id || ""))));
  const q = $("quarantine-table").tBodies[0];
  q.replaceChildren(...state.events.filter((e) => QUARANTINE_KINDS.has(e.kind)).slice(-200).reverse().map((e) =>
    el("tr", {}, el("td", {}, String(e.seq)), el("td", {}, e.kind), el("td", {}, e.tool || ""),
      el("td", {}, e.reason || ""), el("td", {}, e.by || ""),
      el("td", {}, el("code", {}, (e.result_digest || "").slice(0, 16))), el("td", {}, e.trace_id || ""))));
}

async function refreshEvents() {
  try {
    let more = true;
    let fresh = 0;
    while (more) {
      const out = await api(`/v1/fak/events?since=${state.cursor}&limit=512`);
      state.events.push(...out.events);
      fresh += out.events.length;
      more = out.events.length === 512;
      state.cursor = out.cursor;
    }
    if (state.events.length > 5000) state.events = state.events.slice(-5000);
    if (fresh) renderTimeline();
  } catch (e) {
    if (e.code === "journal_not_configured") {
      $("chain").textContent = "no journal configured (set FAK_AUDIT_JOURNAL)";
      return;
    }
    say(`journal: [${e.code}] ${e.message}`, true);
  }
}

async function refreshChanges() {
  try {
    const out = await api(`/v1/fak/changes?since=${state.changesCursor}`);
    state.changesCursor = out.cursor;
    const list = $("changes");
    for (const ev of out.events) list.prepend(el("li", {}, el("code", {}, JSON.stringify(ev))));
    while (list.children.length > 200) list.lastChild.remove();
  } catch (_) {
    /* the feed is optional */
  }
}

async function verifyChain() {
  const chain = $("chain");
  try {
    const out = await api("/v1/fak/console/verify");
    if (!out.configured) chain.textContent = "no journal configured";
    else if (out.ok) chain.textContent = `intact: ${out.rows} rows, head ${out.head_hash.slice(0, 16)}`;
    else chain.textContent = `BROKEN at row ${out.bad_row}: ${out.error}`;
    chain.className = out.configured && !out.ok ? "error" : "ok";
  } catch (e) {
    chain.textContent = `cannot check: [${e.code}] ${e.message}`;
    chain.className = "error";
  }
}

// -- health ------------------------------------------------------------------------------

function parseMetrics(text) {
  const series = [];
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = line.match(/^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/);
    if (!m) continue;
    const labels = {};
    for (const part of (m[2] || "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[part[1]] = part[2];
    series.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return series;
}

function sum(series, name, test = () => true) {
  return series.filter((s) => s.name === name && test(s.labels)).reduce((a, s) => a + s.value, 0);
}

function sparkline(values, unit) {
  const w = 240, h = 48;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  svg.setAttribute("preserveAspectRatio", "none");
  svg.setAttribute("class", "spark");
  const max = Math.max(...values, 1e-9);
  const pts = values.map((v, i) => `${(i / Math.max(values.length - 1, 1)) * w},${h - 2 - (v / max) * (h - 4)}`);
  const line = document.createElementNS(SVG, "polyline");
  line.setAttribute("points", pts.join(" "));
  line.setAttribute("vector-effect", "non-scaling-stroke");
  svg.append(line);
  const last = values[values.length - 1];
  const digits = unit === "ms" ? 1 : 3;
  return el("div", { class: "chart" }, svg,
    el("p", { class: "muted scale" }, `now ${last.toFixed(digits)} ${unit} · max ${max.toFixed(digits)} ${unit} · last ${values.length} samples`));
}

function bars(entries) {
  const box = el("div", { class: "bars" });
  const max = Math.max(...entries.map(([, v]) => v), 1);
  for (const [name, value] of entries) {
    const bar = el("span", { class: "bar" });
    bar.style.width = `${Math.round((value / max) * 100)}%`;
    box.append(el("div", { class: "bar-row" }, el("span", { class: "bar-name" }, name), bar, el("span", { class: "bar-value" }, String(value))));
  }
  return box;
}

async function refreshHealth() {
  let series;
  try {
    series = parseMetrics(await api("/metrics", { text: true }));
  } catch (e) {
    say(`metrics: [${e.code}] ${e.message}`, true);
    return;
  }
  const turnRoute = (l) => /^\/v1\/(chat\/completions|messages|responses)$/.test(l.route || "");
  const sample = {
    t: Date.now() / 1000,
    requests: sum(series, "fak_gateway_http_requests_total"),
    latSum: sum(series, "fak_gateway_http_request_duration_seconds_sum", turnRoute),
    latCount: sum(series, "fak_gateway_http_request_duration_seconds_count", turnRoute),
    pollution: sum(series, "fak_gateway_context_pollution_rate"),
  };
  state.samples.push(sample);
  if (state.samples.length > 120) state.samples.shift();
  const rate = [], latency = [], pollution = [];
  for (let i = 1; i < state.samples.length; i++) {
    const a = state.samples[i - 1], b = state.samples[i];
    const dt = Math.max(b.t - a.t, 1e-3);
    rate.push(Math.max(b.requests - a.requests, 0) / dt);
    const n = b.latCount - a.latCount;
    latency.push(n > 0 ? ((b.latSum - a.latSum) / n) * 1000 : 0);
    pollution.push(b.pollution);
  }
  const verdicts = new Map();
  for (const s of series.filter((x) => x.name === "fak_gateway_operations_total")) {
    const key = `${s.labels.verdict}${s.labels.reason ? " " + s.labels.reason : ""}`;
    verdicts.set(key, (verdicts.get(key) || 0) + s.value);
  }
  const stores = series.filter((s) => s.name === "fak_store_up");
  const errors = sum(series, "fak_gateway_upstream_errors_total");
  $("health").replaceChildren(
    el("div", { class: "card" }, el("h3", {}, "Requests per second"), sparkline(rate.length ? rate : [0], "req/s"),
      el("p", {}, `total ${sample.requests}`)),
    el("div", { class: "card" }, el("h3", {}, "Turn latency, upstream included (mean per interval)"), sparkline(latency.length ? latency : [0], "ms")),
    el("div", { class: "card" }, el("h3", {}, "Quarantine rate (held results / results)"), sparkline(pollution.length ? pollution : [0], "")),
    el("div", { class: "card" }, el("h3", {}, "Verdicts by reason"), bars([...verdicts.entries()].sort((a, b) => b[1] - a[1]).slice(0, 12))),
    el("div", { class: "card" }, el("h3", {}, "Stores and upstream"),
      stores.length ? el("ul", {}, ...stores.map((s) => el("li", { class: s.value ? "ok" : "error" }, `${s.labels.store}: ${s.value ? "up" : "DOWN"}`)))
        : el("p", {}, "process-local stores (nothing shared to be down)"),
      el("p", {}, `upstream errors: ${errors}`)));
}

// -- pages, login, the loop -----------------------------------------------------------------

function show(page) {
  state.page = page;
  for (const name of ["holds", "quarantine", "record", "health"]) {
    $("page-" + name).hidden = name !== page;
    $("tab-" + name).classList.toggle("active", name === page);
  }
  if (page === "record") verifyChain();
  if (page === "health") refreshHealth();
  if (page === "quarantine") refreshHeld();
}

async function pageIn() {
  const out = $("q-out");
  out.replaceChildren();
  state.heldKey = "";
  try {
    const res = await api("/v1/fak/console/page-in", { method: "POST", body: { id: $("q-id").value.trim(), witness: $("q-witness").value.trim() } });
    out.append(el("p", { class: res.verdict === "ALLOW" ? "ok" : "error" },
      res.verdict === "ALLOW" ? "cleared; the re-screen passed; the bytes:" : `cleared, but the re-screen still holds it out: ${res.refused}`));
    if (res.content !== undefined) out.append(el("pre", { class: "text" }, plain(res.content)));
  } catch (e) {
    out.append(el("p", { class: "error" }, `[${e.code}] ${e.message}`));
  }
  refreshHeld();
}

function start() {
  $("login").hidden = true;
  $("pages").hidden = false;
  $("who").textContent = `as ${store.getItem("fak.operator") || "http"}`;
  show(state.page);
  refreshHolds();
  refreshEvents();
  refreshChanges();
  state.timers.push(setInterval(refreshHolds, 1000), setInterval(tick, 1000),
    setInterval(refreshEvents, 2000), setInterval(refreshChanges, 3000),
    setInterval(() => { if (state.page === "health") refreshHealth(); }, 3000),
    setInterval(() => { if (state.page === "quarantine") refreshHeld(); }, 2000));
}

async function connect() {
  store.setItem("fak.client", $("client-key").value);
  store.setItem("fak.witness", $("witness-key").value);
  store.setItem("fak.operator", $("operator").value.trim());
  try {
    await api("/v1/fak/console/holds");
    $("login-error").textContent = "";
    start();
  } catch (e) {
    $("login-error").textContent = `[${e.code}] ${e.message}`;
  }
}

function init() {
  for (const tab of document.querySelectorAll(".tab")) tab.addEventListener("click", () => show(tab.dataset.page));
  $("connect").addEventListener("click", connect);
  $("verify").addEventListener("click", verifyChain);
  $("q-go").addEventListener("click", pageIn);
  buildFilters();
  $("operator").value = store.getItem("fak.operator") || "";
  if (store.getItem("fak.operator") !== null) connect_silently();
}

async function connect_silently() {
  try {
    await api("/v1/fak/console/holds");
    start();
  } catch (_) {
    /* show the form */
  }
}

init();

// The Switchyard console: draws from yardd's /api/v1 and redraws when yardd says something changed
// (server-sent events on /api/v1/events/stream), and every 30 s for what time alone changes (idle
// GPU-hours, the capacity history). While the stream is down it polls every 2 s. It acts as the identity
// logged in may (compose, decompose, renew, cancel a queued request): each change carries the session's CSRF
// token; yardd's engine decides what the role and tenant allow. No libraries.
"use strict";

const LIVE_REFRESH_MS = 30000;  // with the stream up: a redraw on each change, else this often
const POLL_MS = 2000;           // with the stream down
const MIN_GAP_MS = 300;         // a burst of events (one compose makes several) is one redraw
const POOL_SWITCHES = 16, POOL_HOSTS = 64, SYSTEMS_SHOWN = 100;  // devices drawn one by one, per refresh
const SHAPE_COLOURS = { 1: "#1565c0", 2: "#2e7d32", 4: "#f9a825", 8: "#6a1b9a", 16: "#c62828" };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "title") node.title = v;
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return node;
}

function card(label, value, extra = "") {
  return el("div", { class: "card " + extra }, el("div", { class: "value" }, value), el("div", { class: "label" }, label));
}

// A table body of these rows (each a list of cells), or one row saying `emptyText` across `cols` columns.
function fillBody(body, rows, cols, emptyText) {
  body.replaceChildren();
  if (rows.length === 0) body.append(el("tr", {}, el("td", { class: "empty", colspan: cols }, emptyText)));
  for (const cells of rows) body.append(el("tr", {}, ...cells.map((c) => el("td", {}, c))));
}

function fillTable(id, rows, emptyText) {
  fillBody(document.querySelector(`#${id} tbody`), rows, document.querySelectorAll(`#${id} thead th`).length, emptyText);
}

// Every request says it is the console's: yardd then answers 401 without a Basic challenge (no password dialog).
const CONSOLE_HEADERS = { "X-Switchyard-Console": "1" };
let csrf = "";  // the session's token, sent with every change

class HttpError extends Error {
  constructor(path, status, message) { super(`${path}: ${status} ${message}`); this.status = status; this.reason = message; }
}

async function errorOf(path, response) {
  let message = response.statusText;
  try { message = (await response.json()).error.message; } catch (e) { /* not JSON */ }
  return new HttpError(path, response.status, message);
}

async function getJson(path) {
  const response = await fetch(path, { credentials: "same-origin", cache: "no-store", headers: CONSOLE_HEADERS });
  if (!response.ok) throw await errorOf(path, response);
  return response.json();
}

// A change: the answer's JSON, or an HttpError with yardd's reason.
async function send(method, path, body) {
  const response = await fetch(path, { method, credentials: "same-origin", cache: "no-store",
                                       headers: { ...CONSOLE_HEADERS, "Content-Type": "application/json", "X-CSRF-Token": csrf },
                                       body: body === undefined ? undefined : JSON.stringify(body) });
  if (!response.ok) throw await errorOf(path, response);
  return response.json();
}

// Runs a change from a button or form and says how it went; what it changed arrives with the event stream.
async function act(what, method, path, body) {
  const result = document.getElementById("action-result");
  result.className = "";
  result.textContent = `${what}…`;
  try {
    const answer = await send(method, path, body);
    result.textContent = answer.kind ? `${what}: ${answer.id} ${answer.state}` : `${what}: done`;
  } catch (e) {
    result.className = "error";
    result.textContent = `${what} refused: ${e.reason || e.message}`;
    if (e.status === 401) showLogin("your session ended: log in again");
  }
  requestRefresh(MIN_GAP_MS);
}

function button(label, testid, onClick) {
  const b = el("button", { type: "button", "data-testid": testid }, label);
  b.addEventListener("click", onClick);
  return b;
}

function gib(n) { return n >= 1024 && n % 1024 === 0 ? `${n / 1024} TiB` : `${n} GiB`; }

function memoryCards(capacity) {
  const pools = capacity.pooled_memory || [];
  if (pools.length === 0) return [];
  const total = pools.reduce((sum, m) => sum + m.total_gib, 0);
  return [card("free pooled memory", `${gib(capacity.free_pooled_memory_gib)} of ${gib(total)}`, capacity.free_pooled_memory_gib === 0 ? "warn" : "")];
}

// Pooled memory per switch: what a --memory request can still take from under each one.
function drawMemory(capacity) {
  const pools = capacity.pooled_memory || [];
  document.getElementById("memory-section").hidden = pools.length === 0;
  fillTable("memory", pools.map((m) => [m.switch, m.domain, gib(m.free_gib), String(m.free_devices), `${gib(m.total_gib)} in ${m.total_devices} LDs`,
                                        `${m.total_gib ? Math.round((100 * (m.total_gib - m.free_gib)) / m.total_gib) : 0}%`]), "no pooled memory");
}

function drawSummary(summary, capacity) {
  const total = summary.gpus.total || 0, inSystems = summary.gpus.allocated || 0, quarantined = summary.gpus.quarantined || 0;
  const used = total ? Math.round((100 * inSystems) / total) : 0;
  document.getElementById("summary").replaceChildren(
    card("GPUs in the pool", total),
    card("in systems", `${inSystems} (${used}%)`),
    card("free", capacity.free_gpus),
    card("stranded (free, yet no host can take them)", capacity.stranded_gpus, capacity.stranded_gpus > 0 ? "warn" : ""),
    card("quarantined", quarantined, quarantined > 0 ? "warn" : ""),
    // Whole machines: the pool's drives and NICs, free of all; pooled memory in GiB (its LDs are sized, not counted).
    ...Object.entries(summary.other_devices || {}).filter(([kind]) => kind !== "cxl-memory").map(([kind, n]) =>
      card(`free ${{ nic: "NICs", nvme: "drives" }[kind] || kind}`, `${n.free || 0} of ${n.total}`, (n.free || 0) === 0 ? "warn" : "")),
    ...memoryCards(capacity));
  drawMemory(capacity);
  document.getElementById("capacity").replaceChildren(
    ...capacity.shapes.map((s) => card(`${s.gpus}-GPU requests`, s.placeable, s.placeable === 0 ? "warn" : "")));
  // Several fabric domains: each one's part (no system spans two, so the rows add up to the cards).
  const domains = capacity.domains || [];
  const table = document.getElementById("domains");
  table.hidden = domains.length < 2;
  table.querySelector("thead").replaceChildren(el("tr", {}, el("th", {}, "Domain"), el("th", {}, "Free"), el("th", {}, "Stranded"),
    ...capacity.shapes.map((s) => el("th", {}, `${s.gpus}-GPU`))));
  fillTable("domains", domains.map((d) => [d.domain, String(d.free_gpus), String(d.stranded_gpus), ...d.shapes.map((s) => String(s.placeable))]),
            "one domain");
}

// Every time on the page is UTC, as yardd and yardctl write it: "2026-11-27 10:15:03Z".
function utc(iso) { return iso ? iso.replace("T", " ").replace(/\.\d+Z$/, "Z") : ""; }
function utcNow() { return utc(new Date().toISOString()); }

function svgEl(tag, attrs, text) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  return node;
}

function drawChart(capacity) {
  const svg = document.getElementById("capacity-chart");
  svg.replaceChildren();
  const history = capacity.history;
  const legend = document.getElementById("capacity-legend");
  legend.replaceChildren();
  if (history.length < 2) {
    svg.append(svgEl("text", { x: 10, y: 100 }, "collecting samples…"));
    return;
  }
  const shapes = capacity.shapes.map((s) => String(s.gpus));
  let top = 1;
  for (const s of history) for (const g of shapes) top = Math.max(top, s.placeable[g] || 0);
  // The plot sits right of the y axis' numbers and above the x axis' times.
  const left = 44, right = 790, upper = 10, lower = 172;
  const x = (i) => left + ((right - left) * i) / (history.length - 1);
  const y = (v) => lower - ((lower - upper) * v) / top;
  for (const v of [0, Math.round(top / 2), top]) {
    svg.append(svgEl("line", { x1: left, x2: right, y1: y(v), y2: y(v), class: "grid" }));
    svg.append(svgEl("text", { x: left - 6, y: y(v) + 4, "text-anchor": "end", class: "axis" }, String(v)));
  }
  svg.append(svgEl("line", { x1: left, x2: left, y1: upper, y2: lower, class: "axis-line" }));
  const middle = Math.floor((history.length - 1) / 2);
  for (const [i, anchor] of [[0, "start"], [middle, "middle"], [history.length - 1, "end"]])
    svg.append(svgEl("text", { x: x(i), y: 192, "text-anchor": anchor, class: "axis" }, utc(history[i].at).slice(11)));
  // Capacity changes at an instant and holds until the next change: each sample's value is drawn as a step
  // (level until the next sample, then straight up or down), never as a slope between samples. Equal lines
  // would hide each other: each is drawn thinner than the one before, so a line that runs on another's values
  // shows as a stripe inside it.
  const steps = (g) => history.flatMap((s, i) => {
    const here = `${x(i)},${y(s.placeable[g] || 0)}`;
    return i === 0 ? [here] : [`${x(i)},${y(history[i - 1].placeable[g] || 0)}`, here];
  }).join(" ");
  shapes.forEach((g, n) => {
    svg.append(svgEl("polyline", { fill: "none", stroke: SHAPE_COLOURS[g] || "#555", "stroke-width": String(2 + 2.5 * (shapes.length - 1 - n)),
                                   "stroke-linejoin": "miter", "data-shape": g, points: steps(g) }));
    legend.append(el("span", {}, el("i", { style: `background:${SHAPE_COLOURS[g] || "#555"}` }), `${g} GPU`));
  });
  legend.append(el("span", {}, `requests of each shape that fit; ${history.length} samples, one every ${capacity.sample_seconds} s, ` +
                              `since ${utc(history[0].at)} (UTC)`));
}

function drawPool(pool) {
  const shown = document.getElementById("pool-shown");
  shown.textContent = pool.switches.length < pool.switch_count || pool.hosts.length < pool.host_count
    ? `showing the first ${pool.switches.length} of ${pool.switch_count} switches and ${pool.hosts.length} of ${pool.host_count} hosts; ` +
      "yardctl devices --switch ID and yardctl hosts list the rest" : "";
  const switches = document.getElementById("switches");
  switches.replaceChildren(...pool.switches.map((sw) => {
    const chips = sw.devices.map((d) => {
      const label = d.system ? `${d.id} · ${d.system}` : d.id;
      const tip = [`${d.id} (${d.model})`, d.state, d.health, d.host && `host ${d.host}`, d.system && `system ${d.system}`,
                   d.uuid && `UUID ${d.uuid}`, d.host_pci_address && `PCI ${d.host_pci_address}`].filter(Boolean).join("\n");
      // A quarantined device goes back to the pool from here once it is safe (freed when the switch shows it
      // unbound; `yardctl devices release DEV --unbind` unbinds it first).
      const release = d.state === "quarantined"
        ? button("release", `release-${d.id}`, () => act(`release ${d.id}`, "POST", `/api/v1/devices/${encodeURIComponent(d.id)}/release`, { unbind: false }))
        : "";
      return el("div", { class: `device ${d.state}${d.health === "ok" ? "" : " unhealthy"}`, title: tip, "data-device": d.id }, link("device", d.id, label), release);
    });
    const what = [sw.model || sw.kind, sw.domain && sw.domain !== "default" && `domain ${sw.domain}`].filter(Boolean).join(" · ");
    return el("div", { class: "switch" }, el("div", { class: "name" }, `${sw.id} `, el("small", {}, what)),
              el("div", { class: "devices" }, ...chips));
  }));
  fillTable("hosts", pool.hosts.map((h) => [h.id, h.system || "—", `${h.attached_devices} / ${h.max_devices}`, `${h.policy}: ${h.host_side}`]),
            "no hosts");
}

function drawSystems(systems) {
  const enc = encodeURIComponent;
  fillTable("systems", systems.map((s) => [
    link("system", s.name), s.host, link("tenant", s.tenant),
    el("span", { class: `state-${s.state}`, title: s.state_reason || "" },
       s.progress ? `${s.state} (${s.progress})` : s.state, s.state_reason ? el("small", {}, ` ${s.state_reason}`) : ""),
    s.devices.length === 0 ? "—" : el("span", {}, ...s.devices.map((d, i) => el("span", { class: "device" }, i ? ", " : "",
      link("device", d.id, d.uuid ? `${d.id} (${d.uuid})` : d.id),
      s.state === "composed" && s.devices.length > 1
        ? button("×", `detach-${d.id}`, () => act(`detach ${d.id} from ${s.name}`, "POST", `/api/v1/systems/${enc(s.name)}/detach`, { devices: [d.id] }))
        : ""))),
    [...(s.mig || []).map((i) => `${i.profile} on ${i.device}`), ...(s.shares || []).map((h) => `${h.percent}% of ${h.device}`)].join(", ") || "—",
    s.priority_class || "—",
    utc(s.lease_expires_at) || "—",
    labelsText(s.labels) || "—",
    s.state === "queued" ? "" : el("span", { class: "actions" },
      button("Decompose", `decompose-${s.name}`, () => act(`decompose ${s.name}`, "DELETE", `/api/v1/systems/${enc(s.name)}`)),
      button("Attach 1", `attach-${s.name}`, () => act(`attach a GPU to ${s.name}`, "POST", `/api/v1/systems/${enc(s.name)}/attach`, { gpus: 1 })),
      button("Renew 4h", `renew-${s.name}`, () => act(`renew ${s.name}`, "POST", `/api/v1/systems/${enc(s.name)}/renew`, { lease: "4h" })))]),
    "no systems yet: compose one above, or yardctl compose NAME --gpus N");
}

function drawOperations(operations, systems) {
  const names = new Map(systems.map((s) => [s.id, s.name]));
  fillTable("operations", operations.map((op) => [
    link("operation", op.id), op.kind,
    names.has(op.system) ? link("system", names.get(op.system)) : op.system_name ? `${op.system_name} (ended)` : op.system,
    el("span", { class: `state-${op.state}` }, op.state, op.error ? el("small", {}, ` ${op.error}`) : ""),
    stepsInline(op), op.requested_by]), "no operations yet");
}

// "2h30m" from seconds, as yardctl writes a duration.
function duration(seconds) {
  const d = Math.floor(seconds / 86400), h = Math.floor((seconds % 86400) / 3600), m = Math.floor((seconds % 3600) / 60), s = seconds % 60;
  return [d && `${d}d`, h && `${h}h`, m && `${m}m`, s && `${s}s`].filter(Boolean).join("") || "0s";
}

function drawQueue(queue) {
  fillTable("queue", queue.entries.map((e) => [String(e.position), link("system", e.name), e.tenant, e.class, e.asks,
    utc(e.enqueued_at), utc(e.deadline) || "—", e.lease_seconds > 0 ? duration(e.lease_seconds) : "none",
    el("span", { title: e.waiting_for || "" }, (e.waiting_for || "").split("\n")[0]),
    button("Cancel", `cancel-${e.name}`, () => act(`cancel ${e.name}`, "POST", `/api/v1/queue/${encodeURIComponent(e.operation)}/cancel`))]),
    "nothing waits: yardctl compose NAME --gpus N --queue waits here when it does not fit");
}

function drawIdle(idle) {
  // A MIG GPU names its idle instances (GPU@start, profile): they go back one by one while a sibling works.
  const device = (g) => {
    const idleInstances = (g.mig_instances || []).filter((i) => i.idle).map((i) => `@${i.start} ${i.profile}`);
    if (idleInstances.length) return `${g.device} (MIG idle: ${idleInstances.join(", ")})`;
    return g.share ? `${g.device} (share ${g.share})` : g.device;
  };
  // Grouped by system: its name once, on the first of its GPUs; "Reclaim" detaches that GPU now (the system keeps
  // the rest; a system's last GPU is given back by decomposing it).
  const bySystem = [...idle.gpus].sort((a, b) => a.name.localeCompare(b.name) || a.device.localeCompare(b.device));
  fillTable("idle", bySystem.map((g, i) => [i > 0 && bySystem[i - 1].name === g.name ? "" : el("strong", {}, link("system", g.name)),
    link("device", g.device, device(g)), g.tenant,
    utc(g.idle_since), g.idle_gpu_hours.toFixed(2), g.reclaim_blocked ? `${g.reclaim} (not taken: ${g.reclaim_blocked})` : g.reclaim,
    button("Reclaim", `reclaim-${g.device}`, () => act(`reclaim ${g.device} from ${g.name}`, "POST",
                                                      `/api/v1/systems/${encodeURIComponent(g.name)}/detach`, { devices: [g.device] }))]),
    "no attached GPU is idle (yardctl idle --all shows what each is doing)");
}

function drawEvents(events) {
  fillTable("events", events.map((e) => [utc(e.at), e.type, e.subject, e.message]), "no events");
}

// The templates table, and the compose form's choice of them (kept as chosen across redraws).
function drawTemplates(answer) {
  const list = answer.templates;
  fillTable("templates", list.map((t) => [t.name, t.asks, t.fits === null ? "?" : String(t.fits), t.description]),
    "no templates: yardd --templates FILE offers some");
  const select = document.getElementById("compose-template");
  const chosen = select.value;
  select.replaceChildren(el("option", { value: "" }, "none"), ...list.map((t) => el("option", { value: t.name }, t.name)));
  select.value = list.some((t) => t.name === chosen) ? chosen : "";
}

let live = false;  // the event stream is open

async function refresh() {
  const status = document.getElementById("status");
  try {
    // Aggregates and the first pages only: a refresh weighs the same at 100,000 GPUs as at 16.
    const [summary, pool, capacity, systems, operations, events, queue, idle, templates] = await Promise.all([
      getJson("/api/v1/summary"), getJson(`/api/v1/pool?switches=${POOL_SWITCHES}&hosts=${POOL_HOSTS}`), getJson("/api/v1/capacity"),
      getJson(`/api/v1/systems?limit=${SYSTEMS_SHOWN}`), getJson("/api/v1/operations?limit=15"), getJson("/api/v1/events?limit=25"),
      getJson(`/api/v1/queue?limit=${SYSTEMS_SHOWN}`), getJson(`/api/v1/idle?limit=${SYSTEMS_SHOWN}`), getJson("/api/v1/templates")]);
    drawSummary(summary, capacity);
    drawChart(capacity);
    drawPool(pool);
    drawSystems(systems);
    drawOperations(operations, systems);
    drawQueue(queue);
    drawIdle(idle);
    drawTemplates(templates);
    drawEvents(events);
    await drawPage();
    status.textContent = `${live ? "live" : "polling every 2 s (no live updates)"} · updated ${utcNow()}`;
    status.className = "";
    document.getElementById("console").classList.remove("stale");
    document.body.dataset.loaded = "true";
  } catch (e) {
    if (e.status === 401) return showLogin("your session ended: log in again");
    // Everything shown is as it was at the last update: said on every table and tile, not only here.
    status.textContent = `stale: cannot reach yardd (${e.message}); showing what it said at its last answer`;
    status.className = "error";
    document.getElementById("console").classList.add("stale");
  }
}

// One refresh at a time; what is asked for meanwhile runs once, right after.
let timer = null, running = false, pending = false;
function requestRefresh(delay = 0) {
  if (running) { pending = true; return; }
  if (timer !== null) return;
  timer = setTimeout(async () => {
    timer = null;
    running = true;
    try { await refresh(); } finally { running = false; }
    if (pending) { pending = false; requestRefresh(MIN_GAP_MS); }
  }, delay);
}

let tickTimer = null;
function tick() {
  requestRefresh();
  tickTimer = setTimeout(tick, live ? LIVE_REFRESH_MS : POLL_MS);
}

function setLive(value) {
  if (live === value) return;
  live = value;
  clearTimeout(tickTimer);
  tick();  // redraw now: changes may have happened while the stream was down
}

let stream = null;
function startConsole() {
  document.getElementById("login").hidden = true;
  document.getElementById("console").hidden = false;
  if (stream === null && typeof EventSource === "function") {
    stream = new EventSource("/api/v1/events/stream");
    // The browser reconnects by itself; meanwhile the page polls.
    stream.onopen = () => setLive(true);
    stream.onmessage = () => requestRefresh(MIN_GAP_MS);
    stream.onerror = () => setLive(false);
  }
  if (tickTimer === null) tick();
}

function stopConsole() {
  if (stream !== null) { stream.close(); stream = null; }
  clearTimeout(tickTimer);
  tickTimer = null;
  live = false;
}

function showWho(session) {
  csrf = session.csrf || "";
  document.getElementById("who").textContent = session.login
    ? `${session.identity} (${session.role}${session.tenant ? `, tenant ${session.tenant}` : ""})` : "no identities: everyone is admin";
  document.getElementById("logout").hidden = !session.login;
}

function showLogin(message = "") {
  stopConsole();
  csrf = "";
  document.getElementById("console").hidden = true;
  document.getElementById("logout").hidden = true;
  document.getElementById("who").textContent = "";
  document.getElementById("login").hidden = false;
  document.getElementById("login-error").textContent = message;
  document.getElementById("status").textContent = "not logged in";
}

document.getElementById("login").addEventListener("submit", async (event) => {
  event.preventDefault();
  const name = document.getElementById("login-name").value, password = document.getElementById("login-password").value;
  try {
    const response = await fetch("/api/v1/login", { method: "POST", credentials: "same-origin", headers: { ...CONSOLE_HEADERS, "Content-Type": "application/json" },
                                                    body: JSON.stringify({ name, password }) });
    if (!response.ok) throw await errorOf("/api/v1/login", response);
    document.getElementById("login-password").value = "";
    showWho(await response.json());
    startConsole();
  } catch (e) {
    document.getElementById("login-error").textContent = e.reason || e.message;
  }
});

document.getElementById("logout").addEventListener("click", async () => {
  try { await send("POST", "/api/v1/logout"); } catch (e) { /* logged out either way */ }
  showLogin("logged out");
});

// A page per object is an address (#/system/NAME, ...): following a link, Back and Forward redraw.
window.addEventListener("hashchange", () => { window.scrollTo(0, 0); requestRefresh(); });

// Choosing a template empties the GPU count, so the template's holds unless one is typed.
document.getElementById("compose-template").addEventListener("change", (event) => {
  const gpus = document.getElementById("compose-gpus");
  gpus.value = event.target.value ? "" : "1";
  gpus.placeholder = event.target.value ? "template's" : "";
});

document.getElementById("compose").addEventListener("submit", (event) => {
  event.preventDefault();
  const name = document.getElementById("compose-name").value;
  const body = { name, queue: document.getElementById("compose-queue").checked };
  const template = document.getElementById("compose-template").value;
  if (template) body.template = template;
  // A count left empty is left unsaid: a template's own part holds (GPUs default to 1 without one).
  for (const [field, id] of [["gpus", "compose-gpus"], ["nics", "compose-nics"], ["nic_speed_gbps", "compose-nic-speed"], ["nvme", "compose-nvme"],
                             ["memory_gib", "compose-memory"]]) {
    const value = document.getElementById(id).value;
    if (value !== "") body[field] = Number(value);
  }
  // "fpga=1, dpu=2" -> {fpga: 1, dpu: 2}; a part without a count is sent as 0, which yardd refuses naming it.
  const others = document.getElementById("compose-endpoints").value.split(",").map((part) => part.trim()).filter((part) => part);
  if (others.length) {
    body.endpoints = {};
    for (const part of others) {
      const [cls, count] = part.split("=").map((s) => s.trim());
      body.endpoints[cls] = /^[0-9]+$/.test(count ?? "") ? Number(count) : 0;
    }
  }
  if (!template && body.gpus === undefined && !body.nics && !body.nvme && !body.memory_gib && !body.endpoints) body.gpus = 1;
  const tenant = document.getElementById("compose-tenant").value, lease = document.getElementById("compose-lease").value;
  if (tenant) body.tenant = tenant;
  if (lease) body.lease = lease;
  act(`compose ${name}`, "POST", "/api/v1/systems", body);
});

(async () => {
  try {
    showWho(await getJson("/api/v1/session"));
    startConsole();
  } catch (e) {
    if (e.status === 401) return showLogin();
    document.getElementById("status").textContent = `cannot reach yardd: ${e.message}`;
    document.getElementById("status").className = "error";
  }
})();

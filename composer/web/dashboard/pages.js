// The console's pages per object (issue 63, item 1): a system, a device, an operation with its steps, a tenant's
// usage. Each is a hash route (#/system/NAME, #/device/ID, #/operation/ID, #/tenant/NAME), so a page can be
// bookmarked, shared and reloaded; it is drawn from /api/v1/systems/NAME, /devices/ID, /operations/ID and /usage, and
// redrawn with the rest of the console when yardd says something changed. Uses app.js's helpers (el, button, act,
// getJson, utc, fillBody); app.js draws its tables' labels and steps with labelsText and stepsInline from here.
"use strict";

const PAGE_KINDS = ["system", "device", "operation", "tenant"];

// The page the address names, or null for the pool.
function currentPage() {
  const m = /^#\/([a-z]+)\/(.+)$/.exec(location.hash);
  if (!m || !PAGE_KINDS.includes(m[1])) return null;
  return { kind: m[1], name: decodeURIComponent(m[2]) };
}

// A link to an object's page.
function link(kind, name, text = name) {
  return el("a", { href: `#/${kind}/${encodeURIComponent(name)}`, "data-testid": `link-${kind}-${name}` }, text);
}

function table(headers, rows, emptyText, testid) {
  const body = el("tbody");
  fillBody(body, rows, headers.length, emptyText);
  return el("table", testid ? { "data-testid": testid } : {}, el("thead", {}, el("tr", {}, ...headers.map((h) => el("th", {}, h)))), body);
}

// Facts as a definition list; empty values are left out.
function facts(pairs) {
  const list = el("dl");
  for (const [term, value] of pairs) {
    if (value === undefined || value === null || value === "") continue;
    list.append(el("dt", {}, term), el("dd", {}, value));
  }
  return list;
}

function stateText(state, reason) {
  return el("span", { class: `state-${state}` }, state, reason ? el("small", {}, ` ${reason}`) : "");
}

function labelsText(labels) {
  return Object.entries(labels || {}).map(([k, v]) => v === "" ? k : `${k}=${v}`).join(", ");
}

function stepsInline(op) {
  return el("span", {}, ...op.steps.map((s) => el("span", { class: `step ${s.state}`, title: s.message || s.devices.join(", ") },
                                                  (s.compensation ? "↶ " : "") + s.kind)));
}

function operationsTable(operations) {
  return table(["Operation", "Kind", "State", "Steps", "By", "Updated"], operations.map((op) => [
    link("operation", op.id), op.kind, stateText(op.state, op.error), stepsInline(op), op.requested_by, utc(op.updated_at)]),
    "no operations in the recent history", "page-operations");
}

function eventsTable(events) {
  return table(["Time", "Event", "Subject", "Message"], events.map((e) => [utc(e.at), e.type, e.subject, e.message]),
               "no recent events", "page-events");
}

function drawSystemPage(s) {
  const enc = encodeURIComponent;
  const actions = s.state === "queued"
    ? el("p", { class: "actions" }, button("Cancel", `page-cancel-${s.name}`, () => act(`cancel ${s.name}`, "POST", `/api/v1/queue/${enc(s.name)}/cancel`)))
    : el("p", { class: "actions" },
         button("Decompose", `page-decompose-${s.name}`, () => act(`decompose ${s.name}`, "DELETE", `/api/v1/systems/${enc(s.name)}`)),
         button("Attach 1", `page-attach-${s.name}`, () => act(`attach a GPU to ${s.name}`, "POST", `/api/v1/systems/${enc(s.name)}/attach`, { gpus: 1 })),
         button("Renew 4h", `page-renew-${s.name}`, () => act(`renew ${s.name}`, "POST", `/api/v1/systems/${enc(s.name)}/renew`, { lease: "4h" })));
  const queue = s.queue
    ? [["Queue", `${s.queue.position} of ${s.queue.length}, asks ${s.queue.asks}${s.queue.deadline ? `, times out ${utc(s.queue.deadline)}` : ""}`],
       ["Waiting for", el("pre", {}, s.queue.waiting_for)]]
    : [];
  const parts = [...(s.mig || []).map((i) => `${i.profile} on ${i.device}`), ...(s.shares || []).map((h) => `${h.percent}% of ${h.device}`)];
  return [
    el("h2", {}, `System ${s.name} `, el("small", {}, s.id)),
    facts([["State", stateText(s.progress ? `${s.state} (${s.progress})` : s.state, s.state_reason)], ["Host", s.host],
           ["Tenant", link("tenant", s.tenant)], ["Priority class", s.priority_class], ["Lease ends", utc(s.lease_expires_at) || "no lease"],
           ["Labels", labelsText(s.labels) || "none"], ["Created", utc(s.created_at)],
           ["Running", s.active_operation ? link("operation", s.active_operation) : ""], ["MIG / shares", parts.join(", ")],
           ["Pooled memory", s.pooled_memory_gib ? `${s.pooled_memory_gib} GiB` : "none"], ...queue]),
    actions,
    el("h3", {}, "Devices"),
    table(["Device", "Kind", "Model", "Switch", "Health", "On the host", ""], s.devices.map((d) => [
      link("device", d.id), d.kind, d.memory_gib ? `${d.model} (${d.memory_gib} GiB)` : d.speed_gbps ? `${d.model} (${d.speed_gbps} Gb/s)` : d.model, d.switch, d.health, [d.uuid, d.host_pci_address].filter(Boolean).join(" at ") || "—",
      s.state === "composed" && s.devices.length > 1
        ? button("Detach", `page-detach-${d.id}`, () => act(`detach ${d.id} from ${s.name}`, "POST", `/api/v1/systems/${enc(s.name)}/detach`, { devices: [d.id] }))
        : ""]), "no devices bound", "page-devices"),
    el("h3", {}, "Operations"), operationsTable(s.operations),
    el("h3", {}, "Events"), eventsTable(s.events)];
}

function drawDevicePage(d) {
  const release = d.state === "quarantined"
    ? el("p", { class: "actions" }, button("Release", `page-release-${d.id}`,
                                           () => act(`release ${d.id}`, "POST", `/api/v1/devices/${encodeURIComponent(d.id)}/release`, { unbind: false })))
    : "";
  const system = !d.system ? "none (free)" : d.system === "(another tenant)" ? d.system : link("system", d.system);
  return [
    el("h2", {}, `Device ${d.id}`),
    facts([["Kind", d.kind], ["Model", d.model], ["State", d.state], ["Health", d.health], ["Switch", d.switch], ["Host", d.host],
           ["System", system], ["Tenant", d.system_tenant ? link("tenant", d.system_tenant) : ""], ["UUID", d.uuid], ["PCI address on the host", d.host_pci_address],
           ["Memory", d.memory_gib ? `${d.memory_gib} GiB` : ""], ["Port speed", d.speed_gbps ? `${d.speed_gbps} Gb/s` : ""]]),
    release,
    el("h3", {}, "Operations that acted on it"), operationsTable(d.operations),
    el("h3", {}, "Events"), eventsTable(d.events)];
}

function drawOperationPage(op) {
  const system = op.system_ended ? `${op.system_name || op.system} (ended)` : link("system", op.system_name || op.system);
  return [
    el("h2", {}, `Operation ${op.id} `, el("small", {}, op.kind)),
    facts([["State", stateText(op.state, "")], ["Why it failed", op.error], ["System", system], ["Host", op.host], ["Tenant", link("tenant", op.tenant)],
           ["Requested by", op.requested_by], ["Created", utc(op.created_at)], ["Updated", utc(op.updated_at)],
           ["Placement", op.explanation ? el("pre", {}, op.explanation) : ""]]),
    el("h3", {}, "Steps"),
    table(["#", "Step", "State", "Attempts", "Devices", "Message", "Finished"], op.steps.map((s, i) => [
      String(i + 1), (s.compensation ? "↶ undo: " : "") + s.kind, el("span", { class: `step ${s.state}` }, s.state), String(s.attempts),
      el("span", {}, ...s.devices.map((id, n) => el("span", {}, n ? ", " : "", link("device", id)))), s.message || "", utc(s.finished_at)]),
      "no steps", "page-steps"),
    el("h3", {}, "Events"), eventsTable(op.events)];
}

let usageGrouping = "system,model";  // the tenant page's grouping, kept across redraws

function drawTenantPage(tenant, usage, systems) {
  const by = el("input", { id: "usage-by", "data-testid": "usage-by", value: usageGrouping, title: "tenant, system, model, label:KEY; comma-separated" });
  const form = el("form", { class: "inline" }, el("label", {}, "Group by ", by), el("button", { type: "submit" }, "Apply"));
  form.addEventListener("submit", (event) => { event.preventDefault(); usageGrouping = by.value.trim() || "system,model"; requestRefresh(); });
  const labelKeys = usageGrouping.split(",").map((s) => s.trim()).filter((s) => s.startsWith("label:")).map((s) => s.slice(6));
  const hours = (v) => v > 0 ? v.toFixed(2) : "—";
  const live = new Set(systems.map((s) => s.name));
  const systemCell = (r) => !r.system_name ? (r.system_id || "—") : live.has(r.system_name) ? link("system", r.system_name) : `${r.system_name} (ended)`;
  return [
    el("h2", {}, `Tenant ${tenant}`),
    el("h3", {}, "Systems now"),
    table(["System", "State", "Devices", "Lease ends", "Labels"], systems.map((s) => [
      link("system", s.name), stateText(s.state, ""), String(s.devices.length), utc(s.lease_expires_at) || "—", labelsText(s.labels) || "—"]),
      "no systems now", "page-tenant-systems"),
    el("h3", {}, `Usage from ${utc(usage.since)} to ${utc(usage.until)} `, el("small", {}, "as yardctl usage --by adds it up")),
    form,
    table(["System", "Model", ...labelKeys, "GPU-hours", "idle", "GiB-hours", "device-hours"], [
      ...usage.rows.map((r) => [systemCell(r), r.model || "—",
                                ...labelKeys.map((k) => (k in r.labels ? r.labels[k] || '""' : "—")),
                                r.gpu_hours.toFixed(2), hours(r.idle_gpu_hours), hours(r.memory_gib_hours), hours(r.device_hours)]),
      ...(usage.rows.length ? [[el("strong", {}, "total"), "", ...labelKeys.map(() => ""), usage.total_gpu_hours.toFixed(2), hours(usage.total_idle_gpu_hours),
                               hours(usage.total_memory_gib_hours), hours(usage.total_device_hours)]] : [])],
      "nothing held in that time", "page-usage")];
}

// Draws the page the address names (nothing when it names the pool); an object that is gone says so.
async function drawPage() {
  const page = currentPage();
  const main = document.getElementById("console");
  const section = document.getElementById("page");
  main.classList.toggle("paged", page !== null);
  section.hidden = page === null;
  if (page === null) return;
  // Not while the grouping is being typed: a redraw would take the field from under the cursor.
  if (document.activeElement && document.activeElement.id === "usage-by") return;
  const body = document.getElementById("page-body");
  const enc = encodeURIComponent(page.name);
  try {
    let parts;
    if (page.kind === "system") parts = drawSystemPage(await getJson(`/api/v1/systems/${enc}`));
    else if (page.kind === "device") parts = drawDevicePage(await getJson(`/api/v1/devices/${enc}`));
    else if (page.kind === "operation") parts = drawOperationPage(await getJson(`/api/v1/operations/${enc}`));
    else {
      const [usage, systems] = await Promise.all([getJson(`/api/v1/usage?tenant=${enc}&by=${encodeURIComponent(usageGrouping)}`), getJson("/api/v1/systems")]);
      parts = drawTenantPage(page.name, usage, systems.filter((s) => s.tenant === page.name));
    }
    body.replaceChildren(...parts);
  } catch (e) {
    if (e.status !== 404 && e.status !== 400) throw e;  // the console's own handling: stale, or log in again
    body.replaceChildren(el("h2", {}, `${page.kind} ${page.name}`), el("p", { class: "error", "data-testid": "page-error" }, e.reason || e.message));
  }
}

// The hourglass console: reads /api/ and draws it. Every value from the server is user input
// (job ids, routing keys, reasons): it is only ever set as textContent, never as HTML.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const REFRESH_MS = 5000;
let cancelEnabled = false;

function $(id) { return document.getElementById(id); }

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (className) node.className = className;
  return node;
}

function svgElement(tag, attributes) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}

function number(value) { return value === null || value === undefined ? "–" : value.toLocaleString("en"); }
function ms(value) { return value === null || value === undefined ? "–" : value.toFixed(1) + " ms"; }
function time(text) { return text ? new Date(text).toISOString().replace("T", " ").replace(".000Z", "Z") : "–"; }
function clock(text, withDate) {
  const d = new Date(text);
  const hhmm = d.toISOString().slice(11, 16);
  return withDate ? d.toISOString().slice(5, 10) + " " + hhmm : hhmm;
}

// Reads carry the token when one is typed: a console started with --console-read-token
// answers reads only with it (or the operator token).
async function getJson(path) {
  const headers = { "Accept": "application/json" };
  const token = $("token-input").value;
  if (token) headers["X-Hourglass-Token"] = token;
  const response = await fetch(path, { headers });
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function fillRows(tbody, rows, cells) {
  tbody.replaceChildren();
  for (const row of rows) {
    const tr = document.createElement("tr");
    for (const cell of cells(row)) tr.appendChild(element("td", cell));
    tbody.appendChild(tr);
  }
  if (rows.length === 0) {
    const tr = document.createElement("tr");
    const td = element("td", "none", "muted");
    td.colSpan = tbody.parentElement.tHead.rows[0].cells.length;
    tr.appendChild(td);
    tbody.appendChild(tr);
  }
}

// A bar chart: one bar per value, labels under some of them, a title per bar (hover).
function barChart(container, values, labels, titles, note, classOf) {
  const width = 600, height = 140, bottom = 18, top = 14;
  const max = Math.max(1, ...values);
  const step = width / values.length;
  const svg = svgElement("svg", { viewBox: `0 0 ${width} ${height}`, preserveAspectRatio: "none", role: "img" });
  values.forEach((value, i) => {
    const barHeight = (height - bottom - top) * value / max;
    const bar = svgElement("rect", {
      x: i * step + 1, y: height - bottom - barHeight, width: Math.max(1, step - 2), height: barHeight,
      class: "bar" + (classOf ? " " + classOf(i) : ""), "data-jobs": value,
    });
    const title = svgElement("title", {});
    title.textContent = titles[i];
    bar.appendChild(title);
    svg.appendChild(bar);
    if (labels[i]) {
      const label = svgElement("text", { x: i * step + 1, y: height - 4, class: "axis" });
      label.textContent = labels[i];
      svg.appendChild(label);
    }
  });
  const scale = svgElement("text", { x: 2, y: 10, class: "axis" });
  scale.textContent = "max " + max.toLocaleString("en");
  svg.appendChild(scale);
  if (note) {
    const text = svgElement("text", { x: width / 3, y: 10, class: "note" });
    text.textContent = note;
    svg.appendChild(text);
  }
  container.replaceChildren(svg);
}

function drawUpcoming(container, view, labelEvery, withDate) {
  const values = view.slots.map(slot => slot.jobs);
  const labels = view.slots.map((slot, i) => i % labelEvery === 0 ? clock(slot.start, withDate) : "");
  const titles = view.slots.map(slot => clock(slot.start, true) + ": " + slot.jobs.toLocaleString("en") + " jobs");
  const note = view.capped ? "more than " + view.slots.reduce((a, s) => a + s.jobs, 0).toLocaleString("en") +
    " jobs: counts exact until " + clock(view.exact_until, true) : "";
  barChart(container, values, labels, titles, note);
}

function drawLateness(view) {
  $("lateness-figures").textContent = view.releases === 0 ? "no release observed yet" :
    `latest ${view.releases.toLocaleString("en")} releases: p50 ${ms(view.p50_ms)}, p99 ${ms(view.p99_ms)}, max ${ms(view.max_ms)}`;
  const labels = view.buckets.map(b => b.le_ms === null ? "more" : "≤" + b.le_ms);
  const titles = view.buckets.map((b, i) => labels[i] + " ms: " + b.releases + " releases");
  barChart($("lateness-chart"), view.buckets.map(b => b.releases), labels, titles, "",
           i => (view.buckets[i].le_ms === null || view.buckets[i].le_ms > 100) ? "late" : "");
}

function drawSummary(summary) {
  const stats = summary.stats;
  $("status").textContent = "updated " + time(summary.now);
  $("instances").textContent = summary.instances.length;
  $("instances").title = summary.instances.map(i => i.id + " (beat " + i.heartbeat_age_ms + " ms ago)").join("\n");
  cancelEnabled = summary.cancel_enabled;
  $("cancel-controls").hidden = !cancelEnabled;
  if (!stats) {
    $("stats-read-at").textContent = "the stats view has not been read yet";
    return;
  }
  $("count-pending").textContent = number(stats.pending);
  $("count-enqueued").textContent = number(stats.enqueued);
  $("count-done").textContent = number(stats.done);
  $("count-cancelled").textContent = number(stats.cancelled);
  $("count-paused").textContent = number(stats.paused);
  $("count-sql").textContent = stats.sql_commands_waiting > 100000 ? "> 100,000" : number(stats.sql_commands_waiting);
  $("oldest-lag").textContent = stats.oldest_pending_lag_ms.toLocaleString("en") + " ms";
  $("next-due").textContent = time(stats.next_due_at);
  $("lateness-hour").textContent = `p50 ${ms(stats.lateness_p50_ms)} · p99 ${ms(stats.lateness_p99_ms)}`;
  // The percentiles are read at a slower pace than the counts at a busy hour.
  $("lateness-hour").title = stats.lateness_read_at ? "as of " + time(stats.lateness_read_at) : "";
  $("stats-read-at").textContent = "counts as of " + time(stats.read_at);
}

async function refresh() {
  try {
    const [summary, upcoming, lateness, rejections, cron] = await Promise.all([
      getJson("/api/summary"), getJson("/api/upcoming"), getJson("/api/lateness"),
      getJson("/api/rejections"), getJson("/api/cron")]);
    drawSummary(summary);
    drawUpcoming($("upcoming-minutes"), upcoming.minutes, 10, false);
    drawUpcoming($("upcoming-hours"), upcoming.hours, 4, true);
    drawLateness(lateness);
    fillRows($("rejections").tBodies[0], rejections,
             r => [time(r.rejected_at), r.id, r.routing_key, r.reason]);
    fillRows($("cron").tBodies[0], cron,
             c => [c.id, c.routing_key, c.cron, c.cron_tz, c.runs,
                   c.paused ? "paused" : c.next_runs.map(t => time(t)).join(", "), ""]);
    if (cancelEnabled) {
      [...$("cron").tBodies[0].rows].forEach((tr, i) => {
        if (!cron[i]) return;
        const action = cron[i].paused ? "resume" : "pause";
        const button = element("button", cron[i].paused ? "Resume" : "Pause");
        button.className = "cron-" + action;
        button.addEventListener("click", () => control(action, cron[i].id, $("cron-result")));
        tr.cells[tr.cells.length - 1].appendChild(button);
      });
    }
    $("status").classList.remove("error");
  } catch (error) {
    $("status").textContent = "cannot read /api/: " + error.message;
    $("status").classList.add("error");
  }
}

function showJob(job) {
  const container = $("job");
  container.replaceChildren();
  if (!job) return;
  const list = document.createElement("dl");
  list.id = "job-row";
  const add = (name, value, id) => {
    list.appendChild(element("dt", name));
    const dd = element("dd", value === null || value === undefined ? "–" : value);
    if (id) dd.id = id;
    list.appendChild(dd);
  };
  add("id", job.id, "job-id");
  add("state", job.state, "job-state");
  add("routing key", job.routing_key);
  add("exchange", job.exchange || "(output exchange)");
  add("owner", job.owner || "(none)");
  add("due", time(job.due_at));
  if (job.cron) add("cron", job.cron + " (" + job.cron_tz + ")");
  add("runs", job.runs);
  add("accepted", time(job.accepted_at));
  add("released", job.released_at ? time(job.released_at) + ", " + ms(job.lateness_ms) + " late" : null);
  add("properties", JSON.stringify(job.properties));
  list.appendChild(element("dt", "body"));
  const body = document.createElement("dd");
  if (job.body.text !== null) {
    body.appendChild(element("pre", job.body.text + (job.body.truncated ? "\n… (" + job.body.bytes + " bytes in all)" : "")));
  } else {
    body.textContent = job.body.bytes + " bytes (not UTF-8 text)";
  }
  list.appendChild(body);
  container.appendChild(list);
  const result = element("p", "", "muted");
  result.id = "cancel-result";
  const addButton = (label, id, action) => {
    const button = element("button", label);
    button.id = id;
    button.addEventListener("click", () => control(action, job.id, result));
    container.appendChild(button);
  };
  if (cancelEnabled && (job.state === "pending" || job.state === "paused")) {
    addButton("Cancel this job", "cancel-button", "cancel");
    if (job.cron) {
      if (job.state === "paused") addButton("Resume", "resume-button", "resume");
      else addButton("Pause", "pause-button", "pause");
    }
  }
  container.appendChild(result);
}

// POSTs a change (cancel, pause, resume, cancel-prefix) with the token; shows the outcome.
async function post(path, result) {
  const response = await fetch(path, {
    method: "POST", headers: { "X-Hourglass-Token": $("token-input").value },
  });
  const body = await response.json();
  result.textContent = response.ok
      ? body.status + (body.count !== undefined ? ": " + number(body.count) + " jobs" : "") +
        (body.error ? " (" + body.error + ")" : "")
      : "refused: " + body.error;
  result.className = response.ok ? "" : "error";
  return response.ok;
}

async function control(action, id, result) {
  if (await post("/api/" + action + "?id=" + encodeURIComponent(id), result)) {
    await search($("search-input").value);
    await refresh();
  }
}

// Cancel by prefix: count first, then a confirmation that names the count.
async function cancelPrefix(prefix) {
  const result = $("prefix-result");
  try {
    const counted = await getJson("/api/cancel-prefix?prefix=" + encodeURIComponent(prefix));
    const many = number(counted.count) + (counted.more ? " or more" : "");
    if (!window.confirm("Cancel " + many + " pending jobs whose routing key starts with \"" + prefix + "\"?")) {
      result.textContent = "not cancelled";
      return;
    }
    await post("/api/cancel-prefix?prefix=" + encodeURIComponent(prefix), result);
    await search(prefix);
  } catch (error) {
    result.textContent = error.message;
    result.className = "error";
  }
}

async function search(text) {
  $("search-message").textContent = "";
  try {
    const found = await getJson("/api/search?q=" + encodeURIComponent(text));
    showJob(found.job);
    const results = found.by_routing_key_prefix;
    $("search-results").hidden = results.length === 0;
    fillRows($("search-results").tBodies[0], results, j => [j.id, j.routing_key, j.state, time(j.due_at)]);
    [...$("search-results").tBodies[0].rows].forEach((tr, i) => {
      tr.addEventListener("click", () => showJob(results[i]));
    });
    if (!found.job && results.length === 0) $("search-message").textContent = "no job with this id or routing-key prefix";
    else if (!found.job) $("search-message").textContent = results.length + " jobs by routing-key prefix (click one)";
    $("prefix-controls").hidden = !cancelEnabled || results.length === 0;
    $("prefix-button").dataset.prefix = text;
  } catch (error) {
    $("search-message").textContent = error.message;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  $("prefix-button").addEventListener("click", () => cancelPrefix($("prefix-button").dataset.prefix));
  $("search-form").addEventListener("submit", event => {
    event.preventDefault();
    search($("search-input").value);
  });
  refresh();
  setInterval(refresh, REFRESH_MS);
});

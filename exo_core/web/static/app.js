// Exo web page: a client of exod's protocol, served by exod itself (no build step).
// Auth: a pairing code buys an HttpOnly SameSite=Strict cookie; every POST carries X-Exo-CSRF.
// Events: one EventSource per open session; resumes from the last seq, shows each event once.
"use strict";

const $ = (id) => document.getElementById(id);
const S = {
  csrf: null, clientId: null, session: null, lastSeq: 0, es: null, backoff: 250, timer: null,
  turns: new Map(), tools: new Map(), cards: new Map(), running: new Set(),
  usage: { input: 0, output: 0, cost: 0, model: "" }, sessions: [], log: [],
};
window.exo = S; // for tests and the curious: S.log is every event seq shown, in order

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined && text !== null) node.textContent = String(text);
  return node;
}

async function http(method, path, body) {
  const headers = { "Content-Type": "application/json" };
  if (S.csrf) headers["X-Exo-CSRF"] = S.csrf;
  const resp = await fetch(path, { method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body) });
  let data = null;
  try { data = await resp.json(); } catch (e) { data = null; }
  if (!resp.ok || !data || data.ok === false) {
    const err = new Error((data && data.error && data.error.message) || `HTTP ${resp.status}`);
    err.status = resp.status; err.code = data && data.error && data.error.code;
    throw err;
  }
  return data;
}

let commandIds = 0;
async function command(type, body) {
  const data = await http("POST", "/command", { id: `w${++commandIds}`, type, body: body || {} });
  return data.result || {};
}

// -- pairing and start-up ---------------------------------------------------

async function boot() {
  try {
    const info = await http("GET", "/web/session");
    S.csrf = info.csrf;
    await start();
  } catch (err) {
    if (err.status === 401) showPair(); else setConn(`cannot reach exod: ${err.message}`, "down");
  }
}

function showPair() {
  $("app").hidden = true; $("pair").hidden = false; $("pair-code").focus();
}

$("pair-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  $("pair-error").textContent = "";
  try {
    const data = await http("POST", "/pair", { code: $("pair-code").value, want: "cookie" });
    S.csrf = data.csrf;
    $("pair").hidden = true;
    await start();
  } catch (err) { $("pair-error").textContent = err.message; }
});

$("logout").addEventListener("click", async () => {
  await http("POST", "/web/logout", {});
  if (S.es) S.es.close();
  location.reload();
});

async function hello() {
  const caps = { can_draw: true, screen_pixels: [window.innerWidth, window.innerHeight] };
  const res = await command("hello", { protocol: 1, client: "exo-web", capabilities: caps });
  S.clientId = res.client_id;
  return res;
}

async function start() {
  $("app").hidden = false;
  await hello();
  await loadSessions();
  const wanted = location.hash.slice(1);
  const pick = S.sessions.find((s) => s.id === wanted) || S.sessions[0];
  if (pick) openSession(pick.id); else await newSession();
}

async function loadSessions() {
  const res = await command("session.list", { limit: 50 });
  S.sessions = res.sessions || [];
  const list = $("session-list");
  list.replaceChildren();
  for (const s of S.sessions) {
    const li = el("li", s.id === S.session ? "current" : "", s.title || s.id);
    li.title = s.id; li.dataset.id = s.id;
    li.addEventListener("click", () => openSession(s.id));
    list.append(li);
  }
}

async function newSession() {
  const res = await command("session.create", { title: `web ${new Date().toISOString().slice(0, 16)}` });
  await loadSessions();
  openSession(res.session.id);
}
$("new-session").addEventListener("click", () => newSession().catch(showError));

// -- the event stream -------------------------------------------------------

function openSession(id) {
  if (S.es) S.es.close();
  clearTimeout(S.timer);
  Object.assign(S, { session: id, lastSeq: 0, log: [], turns: new Map(), tools: new Map(), cards: new Map() });
  S.running.clear();
  S.usage = { input: 0, output: 0, cost: 0, model: "" };
  location.hash = id;
  $("transcript").replaceChildren();
  for (const li of $("session-list").children) li.className = li.dataset.id === id ? "current" : "";
  openStream();
  status();
}

function openStream() {
  const q = new URLSearchParams({ session: S.session, since: String(S.lastSeq), client: S.clientId || "" });
  const es = new EventSource(`/events?${q}`);
  S.es = es;
  es.onopen = () => { S.backoff = 250; setConn("live", "live"); };
  es.onmessage = (msg) => {
    let event;
    try { event = JSON.parse(msg.data); } catch (e) { return; }
    if (event.seq <= S.lastSeq) return; // never show an event twice
    S.lastSeq = event.seq;
    S.log.push(event.seq);
    handle(event);
  };
  es.onerror = () => {
    // Reconnect ourselves, from the last seq shown: a restarted exod resumes where we left off.
    es.close();
    if (S.es !== es) return;
    setConn("reconnecting…", "down");
    S.timer = setTimeout(async () => {
      try { await hello(); } catch (e) { /* still down: the stream attempt below fails and retries */ }
      if (S.es === es) openStream();
    }, S.backoff);
    S.backoff = Math.min(S.backoff * 2, 4000);
  };
}

function setConn(text, cls) {
  const c = $("conn"); c.textContent = text; c.className = `conn ${cls || ""}`;
  S.conn = cls;
  if (cls === "live") flushOutbox();
}
function showError(err) { note(null, `error: ${err.message}`, "notice"); }

function turnBox(turnId) {
  let box = S.turns.get(turnId);
  if (!box) {
    box = el("div", "turn");
    box.dataset.turn = turnId || "";
    $("transcript").append(box);
    S.turns.set(turnId, box);
  }
  return box;
}

function scroll() { const t = $("transcript"); t.scrollTop = t.scrollHeight; }

function note(turnId, text, cls) {
  const box = turnId ? turnBox(turnId) : $("transcript");
  box.append(el("div", cls || "note", text));
  scroll();
}

function handle(event) {
  const b = event.body || {};
  const t = b.turn_id;
  switch (event.type) {
    case "message.completed": return onMessage(b);
    case "turn.started": S.running.add(t); turnBox(t); break;
    case "message.delta": {
      const box = turnBox(t);
      let live = box.querySelector(".msg.streaming");
      if (!live) { live = el("div", "msg assistant streaming"); box.append(live); }
      live.textContent += b.text;
      break;
    }
    case "tool.started": {
      const d = el("details", "tool running");
      const args = Object.entries(b.arguments || {}).filter(([k]) => k !== "content")
        .map(([k, v]) => `${k}=${JSON.stringify(v)}`).join(" ");
      d.append(el("summary", "", `${b.name} ${args}`.slice(0, 200)), el("pre", "out"));
      S.tools.set(b.call_id, d);
      turnBox(t).append(d);
      break;
    }
    case "tool.output": { const d = S.tools.get(b.call_id); if (d) d.querySelector("pre").textContent += b.text; break; }
    case "tool.completed": {
      const d = S.tools.get(b.call_id);
      if (!d) break;
      d.className = `tool ${b.ok ? "ok" : "failed"}`;
      d.querySelector("summary").textContent += `  (${b.duration_ms} ms)`;
      const pre = d.querySelector("pre");
      if (!pre.textContent) pre.textContent = String(b.result || "").slice(0, 20000);
      break;
    }
    case "approval.requested": return approvalCard(b, event);
    case "approval.resolved": return resolveCard(b.request_id, `${b.decision}${b.reason ? ": " + b.reason : ""}`);
    case "question.asked": return questionCard(b, event);
    case "question.answered": return resolveCard(b.question_id, b.declined ? "declined" : `answered ${b.option || b.text || ""}`);
    case "question.closed": return resolveCard(b.question_id, `that question has closed: ${b.reason || "expired"}`);
    case "usage.updated":
      S.usage.input = b.input_tokens; S.usage.output += b.output_tokens;
      S.usage.cost = b.session_cost || S.usage.cost + (b.cost || 0); S.usage.model = b.model || S.usage.model;
      break;
    case "turn.completed":
      S.running.delete(t);
      if (b.stop_reason !== "end") note(t, `turn ${b.stop_reason}${b.error ? ": " + b.error : ""}`);
      if (b.hint) note(t, b.hint, "turn-hint");
      break;
    case "ui.panel": turnBox(t || lastTurn()).append(drawPanel(b)); break;
    case "notice": note(null, b.text, "notice"); break;
    case "context.compacted": note(null, `context compacted: ${b.tokens_before} → ${b.tokens_after} tokens`); break;
    case "session.updated": if (b.reason === "created" || b.title) loadSessions().catch(() => {}); break;
    default: break;
  }
  status();
  scroll();
}

function lastTurn() { let last = null; for (const k of S.turns.keys()) last = k; return last; }

function onMessage(b) {
  const box = turnBox(b.turn_id);
  if (b.role === "user") {
    box.append(el("div", "msg user", b.content));
  } else if (b.role === "assistant") {
    const live = box.querySelector(".msg.streaming");
    const done = live || el("div", "msg assistant");
    done.className = "msg assistant";
    done.textContent = b.content;
    if (b.status && b.status !== "complete") done.append(el("span", "note", `  [${b.status}]`));
    if (!live && b.content) box.append(done);
  }
  status();
  scroll();
}

function approvalCard(b) {
  const card = el("div", "card approval");
  card.dataset.request = b.request_id;
  card.append(el("div", "", "Approve? "), el("strong", `risk-${b.risk}`, `[${b.risk}] `), el("span", "", b.summary));
  if (b.reason) card.append(el("div", "note reason", b.reason));
  if (b.diff) card.append(el("pre", "diff", b.diff));
  else if (b.arguments && Object.keys(b.arguments).length) card.append(el("pre", "", JSON.stringify(b.arguments, null, 1)));
  const actions = el("div", "actions");
  for (const [label, decision] of [["Allow", "allow"], ["Deny", "deny"], ["Always allow", "allow_always"]]) {
    const btn = el("button", decision === "allow" ? "primary" : "", label);
    btn.dataset.decision = decision;
    btn.addEventListener("click", async () => {
      for (const x of actions.querySelectorAll("button")) x.disabled = true;
      try { await command("approval.respond", { request_id: b.request_id, decision }); }
      catch (err) { card.append(el("div", "note", err.code === "conflict" ? "already answered elsewhere" : err.message)); }
    });
    actions.append(btn);
  }
  card.append(actions);
  S.cards.set(b.request_id, card);
  turnBox(b.turn_id || lastTurn()).append(card);
  scroll();
}

function questionCard(b) {
  const card = el("div", "card question");
  card.append(el("div", "", b.text));
  if (b.expires_at) {
    const until = new Date(b.expires_at);
    card.append(el("div", "note deadline", `waits until ${until.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })}`));
  }
  const actions = el("div", "actions");
  const answer = async (body) => {
    try { await command("question.answer", { question_id: b.question_id, ...body }); }
    catch (err) { card.append(el("div", "note", err.code === "conflict" || err.code === "not_found" ? "that question has closed" : err.message)); }
  };
  (b.options || []).forEach((opt, i) => {
    const btn = el("button", "", `${i + 1}. ${opt}`);
    btn.addEventListener("click", () => answer({ option: i + 1 }));
    actions.append(btn);
  });
  if (b.allow_text) {
    const input = el("input");
    const go = el("button", "", "Answer");
    go.addEventListener("click", () => answer({ text: input.value }));
    actions.append(input, go);
  }
  card.append(actions);
  S.cards.set(b.question_id, card);
  turnBox(lastTurn()).append(card);
}

function resolveCard(id, text) {
  const card = S.cards.get(id);
  if (!card) return;
  card.classList.add("resolved");
  for (const x of card.querySelectorAll("button, input")) x.disabled = true;
  card.append(el("div", "note resolution", text));
}

// -- panels (ui.panel), drawn in full here ------------------------------------

function drawPanel(b) {
  const d = b.data || {};
  const box = el("div", `panel panel-${b.kind}`);
  box.append(el("h3", "", `${b.kind.replace("_", " ")}${b.title ? ": " + b.title : ""}`));
  if (b.kind === "diff") {
    if (d.path) box.append(el("div", "note", d.path));
    const pre = el("pre", "diff");
    for (const line of String(d.diff || "").split("\n")) {
      const cls = line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "";
      pre.append(el("div", cls, line || " "));
    }
    box.append(pre);
  } else if (b.kind === "file_preview") {
    box.append(el("div", "note", d.path || ""));
    const pre = el("pre");
    const first = Number(d.start || 1);
    String(d.text || d.content || "").split("\n").forEach((line, i) => {
      const row = el("div");
      row.append(el("span", "lineno", String(first + i).padStart(4) + "  "), document.createTextNode(line));
      pre.append(row);
    });
    box.append(pre);
  } else if (b.kind === "taste" && Array.isArray(d.rows)) {
    box.append(table(["rule", "weight"], d.rows.map((r) => [r.text || r.title || r.id, r.weight ?? ""])));
  } else if (b.kind === "session_tree") {
    box.append(tree(d.sessions || d.nodes || []));
  } else if (b.kind === "table" && Array.isArray(d.rows)) {
    const cols = d.columns || Object.keys(d.rows[0] || {});
    box.append(table(cols, d.rows.map((r) => Array.isArray(r) ? r : cols.map((c) => r[c]))));
  } else if (typeof d.text === "string" || typeof d.summary === "string") {
    box.append(el("pre", "", d.text || d.summary));
  } else {
    box.append(el("pre", "", JSON.stringify(d, null, 1)));
  }
  return box;
}

function table(cols, rows) {
  const t = el("table");
  const head = el("tr");
  for (const c of cols) head.append(el("th", "", c));
  t.append(head);
  for (const r of rows) {
    const tr = el("tr");
    for (const v of r) tr.append(el("td", "", typeof v === "object" ? JSON.stringify(v) : v));
    t.append(tr);
  }
  return t;
}

function tree(items) {
  const byParent = new Map();
  for (const it of items) {
    const p = it.parent_id || "";
    if (!byParent.has(p)) byParent.set(p, []);
    byParent.get(p).push(it);
  }
  const ids = new Set(items.map((i) => i.id));
  const build = (parent) => {
    const ul = el("ul");
    for (const it of byParent.get(parent) || []) {
      const li = el("li", "", it.title || it.id);
      if (byParent.has(it.id)) li.append(build(it.id));
      ul.append(li);
    }
    return ul;
  };
  const root = el("div");
  for (const [p] of byParent) if (!p || !ids.has(p)) root.append(build(p));
  return root;
}

// -- sending ----------------------------------------------------------------

// Messages typed while exod is away wait here, each with a visible mark, and go once, in order, when
// the stream is live again (docs/web.md "offline"). A reply that never came (the core died mid-send)
// counts as not sent; more than OUTBOX_LIMIT waiting are refused visibly.
const OUTBOX_LIMIT = 20;
S.outbox = [];

function keep(text, mode) {
  if (S.outbox.length >= OUTBOX_LIMIT) { note(null, `not sent (${OUTBOX_LIMIT} messages already wait): ${text}`, "notice"); return; }
  const mark = el("div", "note pending", `⏳ will send when connected: ${text}`);
  $("transcript").append(mark);
  S.outbox.push({ text, mode, mark });
  scroll();
}

function unreachable(err) { return !err.status || err.status >= 502; }

async function flushOutbox() {
  if (S.flushing) return;
  S.flushing = true;
  try {
    while (S.outbox.length && S.conn === "live") {
      const item = S.outbox[0];
      try { await command("turn.send", { session: S.session, text: item.text, mode: item.mode }); }
      catch (err) {
        if (unreachable(err)) return;
        S.outbox.shift();
        item.mark.textContent = `not sent (${err.code || err.status}): ${item.text}`;
        continue;
      }
      S.outbox.shift();
      item.mark.textContent = `sent: ${item.text}`;
      item.mark.className = "note";
    }
  } finally { S.flushing = false; }
}

async function send() {
  const text = $("prompt").value;
  if (!text.trim() || !S.session) return;
  let mode = $("mode").value;
  if (mode === "auto") mode = S.running.size ? "queue" : "send";
  $("prompt").value = "";
  if (S.conn !== "live" || S.outbox.length) { keep(text, mode); return; }
  try { await command("turn.send", { session: S.session, text, mode }); }
  catch (err) {
    if (unreachable(err)) keep(text, mode);
    else { $("prompt").value = text; showError(err); }
  }
}
$("prompt-form").addEventListener("submit", (ev) => { ev.preventDefault(); send(); });
$("prompt").addEventListener("keydown", (ev) => {
  if (ev.key === "Enter" && !ev.shiftKey) { ev.preventDefault(); send(); }
});
$("interrupt").addEventListener("click", () => command("turn.interrupt", { session: S.session }).catch(showError));

function status() {
  const u = S.usage;
  $("interrupt").hidden = S.running.size === 0;
  $("status").textContent = [`session ${S.session || "-"}`, `model ${u.model || "-"}`,
    S.running.size ? "mode busy" : "mode idle", `context ${u.input} tok`, `out ${u.output} tok`,
    `cost $${Number(u.cost || 0).toFixed(4)}`, `seq ${S.lastSeq}`].join(" · ");
}

// -- views: taste rows and the store browser ---------------------------------

for (const tab of document.querySelectorAll(".tab")) {
  tab.addEventListener("click", () => showView(tab.dataset.view));
}

function showView(name) {
  for (const tab of document.querySelectorAll(".tab")) tab.classList.toggle("active", tab.dataset.view === name);
  for (const v of ["chat", "taste", "store"]) $(`view-${v}`).hidden = v !== name;
  if (name === "taste") loadTaste().catch((err) => { $("taste-msg").textContent = err.message; });
  if (name === "store") loadStore().catch((err) => { $("store-pack").textContent = err.message; });
}

async function loadTaste() {
  const res = await command("taste.list", {});
  const body = $("taste-rows");
  body.replaceChildren();
  if (!res.rows.length) $("taste-msg").textContent = "No taste learned yet.";
  for (const row of res.rows) {
    const tr = el("tr");
    tr.dataset.id = row.id;
    const input = el("input", "taste-text");
    input.value = row.text;
    const textCell = el("td");
    textCell.append(input, el("div", "note", `${row.title} · ${row.path}`));
    const weight = el("td");
    const box = el("span", "wbox");
    box.append(el("span", `weight w${Math.round(row.weight * 10) * 10}`));
    weight.append(box, document.createTextNode(`${row.weight.toFixed(2)} (${row.confidence})`));
    const ev = el("td", "evidence");
    for (const e of row.evidence) {
      const link = el("div", /^[a-z0-9-]+\//.test(e) ? "nodelink" : "", e);
      if (link.className) link.addEventListener("click", () => { showView("store"); showNode(e); });
      ev.append(link);
    }
    const actions = el("td");
    const save = el("button", "primary save", "Save");
    save.addEventListener("click", () => editTaste({ id: row.id, text: input.value }));
    const del = el("button", "delete", "Delete");
    del.addEventListener("click", () => {
      if (del.dataset.armed) editTaste({ id: row.id, delete: true });
      else { del.dataset.armed = "1"; del.textContent = "Confirm delete"; }
    });
    actions.append(save, del);
    tr.append(textCell, weight, ev, actions);
    body.append(tr);
  }
}

async function editTaste(body) {
  try {
    const res = await command("taste.edit", body);
    $("taste-msg").textContent = `${res.change} ${res.row.id}`;
    await loadTaste();
  } catch (err) { $("taste-msg").textContent = err.message; }
}

async function loadStore() {
  const res = await http("GET", "/web/store");
  $("store-pack").textContent = res.pack;
  const box = $("store-nodes");
  box.replaceChildren();
  let domain = null;
  for (const n of res.nodes) {
    if (n.domain !== domain) { domain = n.domain; box.append(el("h4", "", domain)); }
    const row = el("div", "nodelink", `${n.title}${n.valid_until ? " (until " + n.valid_until + ")" : ""}`);
    row.title = n.id;
    row.addEventListener("click", () => showNode(n.id));
    box.append(row);
  }
}

async function showNode(id) {
  const res = await http("GET", `/web/store/node?id=${encodeURIComponent(id)}`);
  const n = res.node;
  const d = el("div", "detail");
  d.append(el("h3", "", n.title), el("div", "note", `${n.id} · ${n.type} · ${n.confidence} · from ${n.valid_from}` +
    (n.valid_until ? ` until ${n.valid_until}` : "")), el("p", "", n.summary));
  const links = el("div");
  for (const l of n.links) {
    const a = el("div", "nodelink", `${l.type} → ${l.target}`);
    a.addEventListener("click", () => showNode(l.target).catch(showError));
    links.append(a);
  }
  for (const src of res.linked_from) {
    const a = el("div", "nodelink", `← linked from ${src}`);
    a.addEventListener("click", () => showNode(src).catch(showError));
    links.append(a);
  }
  d.append(links);
  if (n.sources.length) d.append(el("div", "evidence", `evidence: ${n.sources.join(", ")}`));
  d.append(el("pre", "", n.body));
  $("store-detail").replaceChildren(d);
}

boot();

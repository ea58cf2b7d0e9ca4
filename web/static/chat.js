// The chat panel of every reader page. It speaks the Client API directly:
// POST /v1/chat/responses (stream: true) for each turn, GET
// /v1/chat/responses/{thread_id} with Last-Event-ID to resume a stream
// whose connection dropped, /v1/chat/sessions/{thread_id}/messages to show
// the thread again on the next page, GET /v1/chat/sessions for the
// visitor's own conversations ("Your conversations": the sessions of this
// member id, newest first, each reopening its thread), and
// /v1/chat/feedback for the thumbs. The visitor is known by the strong
// member id below (and the owner-secret cookie the first answer set, which
// the browser sends back by itself on this origin).
// Stop aborts the request; the server cancels the run when its reader goes.
//
// Nothing from the server is put in the page as HTML: answers are built
// from text nodes (paragraphs, lists, bold, code and [n] citations only).

import { readEvents } from "./sse.js";

const body = document.body;
const siteId = body.dataset.siteId ? Number(body.dataset.siteId) : null;
const siteSlug = body.dataset.siteSlug || "";
const scope = siteId ? "site-" + siteId : "all";
const tokenMeta = document.querySelector('meta[name="lore-site-token"]');
const siteToken = tokenMeta ? tokenMeta.content : "";

const store = {
  get(kind, key) {
    try { return window[kind].getItem(key); } catch { return null; }
  },
  set(kind, key, value) {
    try {
      if (value == null) window[kind].removeItem(key);
      else window[kind].setItem(key, value);
    } catch { /* storage off: the chat still works within the page */ }
  },
};

// memberId is this browser's visitor id ("v_" and 16 random hex digits, a
// strong member id: it owns the sessions it opens).
function memberId() {
  let id = store.get("localStorage", "lore.member");
  if (!/^v_[0-9a-f]{16}$/.test(id || "")) {
    const b = crypto.getRandomValues(new Uint8Array(8));
    id = "v_" + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    store.set("localStorage", "lore.member", id);
  }
  return id;
}

const threadKey = "lore.thread." + scope;
const openKey = "lore.chat.open";
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let els = {};
let member = "";
let threadId = null;
let turns = [];
let busy = false;
let controller = null;
let historyGen = 0; // bumped whenever the log is replaced: a late history load is dropped
let listGen = 0;

function headers(extra) {
  const h = Object.assign({}, extra);
  if (siteToken) h["X-Site-Access-Token"] = siteToken;
  return h;
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text != null) e.textContent = text;
  return e;
}

// ---- panel ------------------------------------------------------------------

export function initChat() {
  const chat = document.getElementById("chat");
  if (!chat) return;
  els = {
    chat,
    log: document.getElementById("chat-log"),
    form: document.getElementById("chat-form"),
    input: document.getElementById("chat-input"),
    send: document.getElementById("chat-send"),
    stop: document.getElementById("chat-stop"),
    toggle: document.getElementById("chat-toggle"),
    history: document.getElementById("chat-history"),
    sessions: document.getElementById("chat-sessions"),
    sessionsEmpty: document.getElementById("chat-sessions-empty"),
    sessionsError: document.getElementById("chat-sessions-error"),
  };
  member = memberId();
  threadId = store.get("sessionStorage", threadKey);

  els.toggle.addEventListener("click", () => setOpen(chat.hidden));
  document.getElementById("chat-close").addEventListener("click", () => setOpen(false));
  document.getElementById("chat-new").addEventListener("click", newChat);
  els.stop.addEventListener("click", () => controller && controller.abort());
  if (els.history) {
    els.history.addEventListener("toggle", () => {
      if (els.history.open) loadSessions();
    });
  }
  els.form.addEventListener("submit", (e) => {
    e.preventDefault();
    const text = els.input.value.trim();
    if (!text || busy) return;
    els.input.value = "";
    ask(text);
  });
  els.input.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      els.form.requestSubmit();
    }
  });
  for (const b of document.querySelectorAll(".suggest")) {
    b.addEventListener("click", () => {
      setOpen(true);
      if (!busy) ask(b.textContent.trim());
    });
  }
  if (store.get("sessionStorage", openKey) === "1") setOpen(true);
  if (threadId) loadHistory();
}

function setOpen(open) {
  els.chat.hidden = !open;
  body.classList.toggle("chat-open", open);
  els.toggle.setAttribute("aria-expanded", String(open));
  store.set("sessionStorage", openKey, open ? "1" : null);
  if (open) els.input.focus();
}

function setBusy(b) {
  busy = b;
  els.send.disabled = b;
  els.stop.hidden = !b;
}

function setThread(id) {
  threadId = id;
  store.set("sessionStorage", threadKey, id);
}

function clearLog() {
  if (controller) controller.abort();
  historyGen++;
  turns = [];
  els.log.replaceChildren();
}

function newChat() {
  clearLog();
  setThread(null);
  markCurrent();
  els.input.focus();
}

function scroll() {
  els.log.scrollTop = els.log.scrollHeight;
}

// ---- rendering --------------------------------------------------------------

function addUser(text) {
  els.log.append(el("div", "msg user", text));
  scroll();
}

// newTurn adds an answer bubble: its search steps, the text, the sources
// and the feedback buttons.
function newTurn() {
  const t = {
    root: el("div", "msg assistant"),
    steps: el("ul", "steps"),
    answer: el("div", "answer"),
    notice: el("div", "notice"),
    sources: el("div", "sources"),
    feedback: el("div", "feedback"),
    text: "",
    srcs: [],
    seq: null,
    calls: new Map(), // tool call index -> {li, args}
    running: null,
  };
  t.sources.hidden = true;
  t.feedback.hidden = true;
  t.notice.hidden = true;
  t.root.append(t.steps, t.answer, t.notice, t.sources, t.feedback);
  els.log.append(t.root);
  turns.push(t);
  scroll();
  return t;
}

function sourceHref(s) {
  // The cited section travels as a query: the page scrolls to the heading.
  const section = s.section ? "?section=" + encodeURIComponent(s.section) : "";
  if (siteId && s.siteId === siteId && siteSlug) {
    return "/s/" + encodeURIComponent(siteSlug) + "/d/" + encodeURIComponent(s.documentId) + section;
  }
  return "/go/" + encodeURIComponent(s.siteId) + "/" + encodeURIComponent(s.documentId) + section;
}

function citation(t, n) {
  const s = t.srcs.find((x) => x.sourceIndex === n && !x.related) || t.srcs.find((x) => x.sourceIndex === n);
  if (!s) return el("span", "cite", "[" + n + "]");
  const a = el("a", "cite", "[" + n + "]");
  a.href = sourceHref(s);
  a.title = s.title;
  a.dataset.documentId = String(s.documentId);
  return a;
}

// inline appends text with **bold**, `code` and [n] / [n, m] citations.
function inline(t, parent, text) {
  const re = /\*\*([^*\n]+)\*\*|`([^`\n]+)`|\[(\d{1,3}(?:\s*,\s*\d{1,3})*)\]/g;
  let last = 0;
  let m;
  while ((m = re.exec(text))) {
    if (m.index > last) parent.append(text.slice(last, m.index));
    if (m[1] != null) parent.append(el("strong", null, m[1]));
    else if (m[2] != null) parent.append(el("code", null, m[2]));
    else m[3].split(",").forEach((n) => parent.append(citation(t, Number(n.trim()))));
    last = re.lastIndex;
  }
  if (last < text.length) parent.append(text.slice(last));
}

function renderAnswer(t) {
  const out = [];
  for (const block of t.text.split(/\n{2,}/)) {
    const lines = block.split("\n").filter((l) => l.trim() !== "");
    if (!lines.length) continue;
    const bullets = lines.every((l) => /^\s*[-*•]\s+/.test(l));
    const numbered = !bullets && lines.every((l) => /^\s*\d+[.)]\s+/.test(l));
    if (bullets || numbered) {
      const list = el(numbered ? "ol" : "ul");
      for (const l of lines) {
        const li = el("li");
        inline(t, li, l.replace(/^\s*([-*•]|\d+[.)])\s+/, ""));
        list.append(li);
      }
      out.push(list);
      continue;
    }
    const p = el("p");
    lines.forEach((l, i) => {
      if (i) p.append(el("br"));
      inline(t, p, l.replace(/^#{1,6}\s+/, ""));
    });
    out.push(p);
  }
  t.answer.replaceChildren(...out);
}

let pending = new Set();
function scheduleRender(t) {
  if (pending.has(t)) return;
  pending.add(t);
  requestAnimationFrame(() => {
    pending.delete(t);
    renderAnswer(t);
    scroll();
  });
}

function renderSources(t) {
  const cited = t.srcs.filter((s) => !s.related).sort((a, b) => (a.sourceIndex ?? 1e9) - (b.sourceIndex ?? 1e9));
  const related = t.srcs.filter((s) => s.related);
  const parts = [];
  const list = (title, items, numbered) => {
    const box = el("div");
    box.append(el("h3", null, title));
    const ol = el("ol");
    for (const s of items) {
      const li = el("li");
      if (numbered && s.sourceIndex != null) li.append(el("span", "num", "[" + s.sourceIndex + "]"));
      const a = el("a", null, s.title || "Document " + s.documentId);
      a.href = sourceHref(s);
      li.append(a);
      ol.append(li);
    }
    box.append(ol);
    return box;
  };
  if (cited.length) parts.push(list("Sources", cited, true));
  if (related.length) parts.push(list("Related", related, false));
  t.sources.replaceChildren(...parts);
  t.sources.hidden = !parts.length;
}

function notice(t, text, isErr) {
  t.notice.textContent = text;
  t.notice.className = isErr ? "notice err" : "notice";
  t.notice.hidden = !text;
  scroll();
}

// ---- search steps -------------------------------------------------------------

function queryOf(args) {
  try {
    const v = JSON.parse(args);
    return typeof v.query === "string" ? v.query : "";
  } catch {
    return "";
  }
}

function stepFor(t, index) {
  let c = index != null ? t.calls.get(index) : null;
  if (!c && t.running) c = t.running;
  if (!c) {
    c = { li: el("li", "running", "Searching the knowledge base…"), args: "", done: false };
    t.steps.append(c.li);
    t.running = c;
  }
  if (index != null) t.calls.set(index, c);
  return c;
}

function stepLabel(c) {
  const q = queryOf(c.args);
  if (!c.done) return q ? "Searching for “" + q + "”…" : "Searching the knowledge base…";
  const found = c.count == null ? "" : " — " + c.count + " passage" + (c.count === 1 ? "" : "s");
  return (q ? "Searched for “" + q + "”" : "Searched the knowledge base") + found;
}

// ---- streaming ----------------------------------------------------------------

function handle(t, ev, st) {
  switch (ev.type) {
    case "response.created":
      if (ev.response && ev.response.id) setThread(ev.response.id);
      break;
    case "response.tool_call.started": {
      const c = stepFor(t, null);
      c.li.textContent = stepLabel(c);
      break;
    }
    case "response.tool_call.delta": {
      const tc = ev.tool_call || {};
      const c = stepFor(t, tc.index);
      if (tc.function && tc.function.arguments) c.args += tc.function.arguments;
      c.li.textContent = stepLabel(c);
      break;
    }
    case "response.tool_call.completed": {
      const c = stepFor(t, null);
      c.done = true;
      c.count = ev.chunk_count;
      c.li.className = "";
      c.li.textContent = stepLabel(c);
      t.running = null;
      t.calls.clear();
      break;
    }
    case "response.output_text.delta":
      t.text += ev.delta || "";
      scheduleRender(t);
      break;
    case "response.knowledge_sources":
      t.srcs = Array.isArray(ev.sources) ? ev.sources : [];
      renderSources(t);
      scheduleRender(t);
      break;
    case "response.completed":
      st.completed = true;
      break;
    case "response.error":
      st.failed = true;
      notice(t, ev.error || "The assistant could not answer.", true);
      break;
  }
}

class HTTPError extends Error {}

// consume reads one response's events into the turn; it returns when the
// body ends (st.done tells whether [DONE] came) and throws on an HTTP error
// or an abort. A dropped connection just returns.
async function consume(t, res, st) {
  if (!res.ok) {
    let msg = "";
    try { msg = (await res.json()).msg || ""; } catch { /* not JSON */ }
    throw new HTTPError(msg || "HTTP " + res.status);
  }
  try {
    for await (const ev of readEvents(res.body)) {
      if (ev.id != null && ev.id !== "") {
        const n = Number(ev.id);
        if (n <= st.lastId) continue; // already shown (a resumed stream)
        st.lastId = n;
      }
      if (ev.data === "[DONE]") {
        st.done = true;
        return;
      }
      let msg;
      try { msg = JSON.parse(ev.data); } catch { continue; }
      handle(t, msg, st);
    }
  } catch (e) {
    if (e.name === "AbortError") throw e;
    // The connection dropped: the caller resumes from st.lastId.
  }
}

// findThread recovers the thread of a first question whose stream dropped
// before response.created named it: this visitor's session of this site
// titled with the question and opened since it was sent (by the server's
// clock, from the list's Date header, which counts whole seconds).
async function findThread(sent, signal) {
  const title = Array.from(sent.text).slice(0, 50).join(""); // the session title: 50 characters
  const q = new URLSearchParams({ member_id: member, keyword: title, page: "1", size: "10" });
  if (siteId) q.set("site_id", String(siteId));
  const res = await fetch("/v1/chat/sessions?" + q, { headers: headers({ Accept: "application/json" }), signal });
  if (!res.ok) return;
  const data = (await res.json()).data || {};
  const list = Array.isArray(data.list) ? data.list : Array.isArray(data.items) ? data.items : [];
  const since = (Date.parse(res.headers.get("Date")) || Date.now()) - (Date.now() - sent.at) - 2000;
  const s = list.find((x) => x && x.thread_id && x.title === title && Date.parse(x.created_at) >= since);
  if (s) setThread(s.thread_id);
}

function attach(st) {
  const url = "/v1/chat/responses/" + encodeURIComponent(threadId) + "?member_id=" + encodeURIComponent(member);
  const h = { Accept: "text/event-stream" };
  if (st.lastId > 0) h["Last-Event-ID"] = String(st.lastId);
  return fetch(url, { headers: headers(h), signal: controller.signal });
}

// run streams a turn: start() opens the first request; while the stream
// ends without [DONE], it re-attaches from the last event id it saw. A
// first question dropped before its thread was named (sent.first) finds its
// thread first.
async function run(t, start, sent) {
  setBusy(true);
  const ctl = new AbortController();
  controller = ctl;
  const st = { lastId: 0, done: false, completed: false, failed: false };
  t.answer.classList.add("typing");
  try {
    let res = null;
    try {
      res = await start(st);
    } catch (e) {
      if (e.name === "AbortError") throw e; // else no answer came: a drop
    }
    if (res) await consume(t, res, st);
    for (let tries = 1; !st.done && tries <= 5; tries++) {
      notice(t, "Connection lost, reconnecting…");
      await sleep(400 * 2 ** (tries - 1));
      try {
        if (!threadId && sent && sent.first) await findThread(sent, ctl.signal);
        if (threadId) await consume(t, await attach(st), st);
      } catch (e) {
        if (e.name === "AbortError" || e instanceof HTTPError) throw e;
      }
      if (st.done) notice(t, "");
    }
    if (!st.done) notice(t, "The connection was lost. Ask again to continue.", true);
  } catch (e) {
    if (e.name === "AbortError") notice(t, "Stopped.");
    else notice(t, e.message || "The assistant could not answer.", true);
  } finally {
    t.answer.classList.remove("typing");
    renderAnswer(t);
    if (st.completed && t.text && !st.failed) showFeedback(t);
    if (controller === ctl) { // not already replaced by a newer run
      controller = null;
      setBusy(false);
    }
    scroll();
    if (els.history && els.history.open) loadSessions();
  }
}

function ask(text) {
  addUser(text);
  const t = newTurn();
  const payload = { input: text, stream: true, user: member };
  if (siteId) payload.filter = { site_id: siteId };
  if (threadId) payload.previous_response_id = threadId;
  const sent = { text, at: Date.now(), first: !threadId };
  return run(t, () =>
    fetch("/v1/chat/responses", {
      method: "POST",
      headers: headers({ "Content-Type": "application/json", Accept: "text/event-stream" }),
      body: JSON.stringify(payload),
      signal: controller.signal,
    }),
    sent,
  );
}

// ---- history ------------------------------------------------------------------

async function loadHistory() {
  const gen = ++historyGen;
  const id = threadId;
  let data;
  try {
    const res = await fetch(
      "/v1/chat/sessions/" + encodeURIComponent(id) + "/messages?member_id=" + encodeURIComponent(member),
      { headers: headers({ Accept: "application/json" }) },
    );
    if (gen !== historyGen) return;
    if (res.status === 404 || res.status === 403) {
      setThread(null);
      return;
    }
    if (!res.ok) return;
    data = (await res.json()).data;
  } catch {
    return;
  }
  if (gen !== historyGen || id !== threadId) return; // another thread was opened meanwhile
  // A stored search step reads as the live one did: its query, and the
  // passages its tool row holds (the stream's chunk_count).
  let steps = [];
  let lastUser = false;
  for (const m of data.messages || []) {
    if (m.role === "user") {
      addUser(m.content || "");
      lastUser = true;
      steps = [];
    } else if (m.role === "tool") {
      const c = steps.find((x) => x.id === m.tool_call_id);
      if (c) {
        try {
          const v = JSON.parse(m.content || "");
          if (Array.isArray(v)) c.count = v.length;
        } catch { /* not a search result */ }
      }
    } else if (m.role === "assistant" && !m.content) {
      for (const c of m.tool_calls || []) steps.push({ id: c.id, args: (c.function && c.function.arguments) || "", done: true });
    } else if (m.role === "assistant") {
      const t = newTurn();
      for (const c of steps) t.steps.append(el("li", "", stepLabel(c)));
      steps = [];
      t.text = m.content;
      t.srcs = Array.isArray(m.sources) ? m.sources : [];
      t.seq = m.message_seq;
      renderAnswer(t);
      renderSources(t);
      if (t.seq != null) showFeedback(t);
      lastUser = false;
    }
  }
  scroll();
  // The last question has no stored answer yet: its run may still be going
  // (the page changed mid-answer). Follow it from its first event.
  if (lastUser && !busy) run(newTurn(), (st) => attach(st));
}

// ---- the visitor's conversations ----------------------------------------------

function when(iso) {
  const d = new Date(iso);
  if (isNaN(d)) return "";
  return d.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

function markCurrent() {
  if (!els.sessions) return;
  for (const b of els.sessions.querySelectorAll("button.session")) {
    if (b.dataset.threadId === threadId) b.setAttribute("aria-current", "true");
    else b.removeAttribute("aria-current");
  }
}

// loadSessions lists this visitor's sessions (of this site on a site's
// pages), most recently updated first.
async function loadSessions() {
  const gen = ++listGen;
  const q = new URLSearchParams({ member_id: member, page: "1", size: "50" });
  if (siteId) q.set("site_id", String(siteId));
  let list = null;
  try {
    const res = await fetch("/v1/chat/sessions?" + q, { headers: headers({ Accept: "application/json" }) });
    if (res.ok) {
      const data = (await res.json()).data || {};
      list = Array.isArray(data.list) ? data.list : Array.isArray(data.items) ? data.items : [];
    }
  } catch { /* shown as an error below */ }
  if (gen !== listGen) return;
  els.sessionsError.hidden = list !== null;
  list = (list || []).filter((s) => s && s.thread_id);
  list.sort((a, b) => (Date.parse(b.updated_at) || 0) - (Date.parse(a.updated_at) || 0));
  const items = list.map((s) => {
    const li = el("li");
    const b = el("button", "session");
    b.type = "button";
    b.dataset.threadId = s.thread_id;
    b.append(el("span", "title", s.title || "New conversation"));
    const n = s.message_count || 0;
    const meta = [when(s.updated_at), n ? n + " message" + (n === 1 ? "" : "s") : ""].filter(Boolean).join(" · ");
    if (meta) b.append(el("span", "meta", meta));
    if (s.last_message) b.title = s.last_message;
    b.addEventListener("click", () => openSession(s.thread_id));
    li.append(b);
    return li;
  });
  els.sessions.replaceChildren(...items);
  els.sessionsEmpty.hidden = items.length > 0 || !els.sessionsError.hidden;
  markCurrent();
}

// openSession shows a stored thread in the log; the next question continues it.
function openSession(id) {
  clearLog();
  setThread(id);
  markCurrent();
  els.history.open = false;
  loadHistory();
}

// ---- feedback -----------------------------------------------------------------

async function messageSeq(t) {
  if (t.seq != null) return t.seq;
  const res = await fetch(
    "/v1/chat/sessions/" + encodeURIComponent(threadId) + "/messages?member_id=" + encodeURIComponent(member),
    { headers: headers({ Accept: "application/json" }) },
  );
  if (!res.ok) throw new Error("HTTP " + res.status);
  const rows = ((await res.json()).data.messages || []).filter((m) => m.role === "assistant" && m.message_seq != null);
  if (!rows.length) throw new Error("the answer is not stored yet");
  const answered = turns.filter((x) => x.feedback && !x.feedback.hidden);
  const i = answered.indexOf(t);
  t.seq = (i >= 0 && i < rows.length ? rows[i] : rows[rows.length - 1]).message_seq;
  return t.seq;
}

function showFeedback(t) {
  const up = el("button", null, "Helpful");
  const down = el("button", null, "Not helpful");
  up.type = down.type = "button";
  up.title = "This answer helped";
  down.title = "This answer did not help";
  up.dataset.rating = "up";
  down.dataset.rating = "down";
  const status = el("span");
  const thread = threadId;
  let rating = null;
  for (const b of [up, down]) {
    b.setAttribute("aria-pressed", "false");
    b.addEventListener("click", async () => {
      const next = rating === b.dataset.rating ? null : b.dataset.rating;
      up.disabled = down.disabled = true;
      try {
        const seq = await messageSeq(t);
        const res = await fetch("/v1/chat/feedback", {
          method: "POST",
          headers: headers({ "Content-Type": "application/json" }),
          body: JSON.stringify({ thread_id: thread, message_seq: seq, member_id: member, rating: next }),
        });
        if (!res.ok) throw new Error("HTTP " + res.status);
        rating = next;
        up.setAttribute("aria-pressed", String(rating === "up"));
        down.setAttribute("aria-pressed", String(rating === "down"));
        status.textContent = rating ? "Thanks for your feedback." : "";
      } catch (e) {
        status.textContent = "Feedback could not be sent.";
      } finally {
        up.disabled = down.disabled = false;
      }
    });
  }
  t.feedback.replaceChildren(up, down, status);
  t.feedback.hidden = false;
}

// The admin console (/admin): a client of the Admin API (/admin/api/v1)
// with the JWT of users:login kept in this browser. Views are picked by
// the hash (#/sites, #/docs?site=1, …) and built from DOM nodes with text
// content only: nothing the API returns is put in the page as HTML, except
// the Markdown preview, which the server renders and sanitizes as the
// reader does. What the user's role may not do is not offered; the API
// refuses it anyway.

import { readEvents } from "./sse.js";
import { t, pick, setLang, translate, current } from "./admin-i18n.js";

const API = "/admin/api/v1";
const LEVEL = { editor: 1, site_admin: 2, admin: 3, tenant_admin: 3 };
const $ = (sel, root = document) => root.querySelector(sel);
const view = $("#view");

// ---- session --------------------------------------------------------------

let session = null; // {token, user}
function loadSession() {
  try { session = JSON.parse(localStorage.getItem("lore.admin") || "null"); } catch { session = null; }
  if (!session || !session.token || !session.user) session = null;
}
function saveSession() {
  try {
    if (session) localStorage.setItem("lore.admin", JSON.stringify(session));
    else localStorage.removeItem("lore.admin");
  } catch { /* storage off: the session lasts the page */ }
}
const role = () => (session ? session.user.role : "");
const roleLabel = (r) => t({ admin: "Admin", tenant_admin: "Admin", site_admin: "Site admin", editor: "Editor" }[r] || r);
const can = (min) => (LEVEL[role()] || 0) >= (LEVEL[min] || 0);

// ---- DOM helpers ----------------------------------------------------------

// h builds an element: attrs sets properties (class, text, on…, dataset)
// or attributes; children are nodes or strings (text).
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "value") el.value = v;
    else if (k === "checked") el.checked = !!v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of kids.flat()) if (c != null && c !== false) el.append(c.nodeType ? c : String(c));
  return el;
}
const field = (label, input, hint) => h("label", { class: "field" }, h("span", { text: label }), input, hint ? h("small", { class: "meta", text: hint }) : null);
const button = (text, onclick, attrs = {}) => h("button", { type: "button", onclick, ...attrs }, text);
const link = (text, href, attrs = {}) => h("a", { href, ...attrs }, text);
function select(name, options, value, attrs = {}) {
  const s = h("select", { name, ...attrs });
  for (const [v, label] of options) s.append(h("option", { value: v }, label));
  s.value = value == null ? "" : String(value);
  return s;
}
const fmtDate = (s) => (s ? new Date(s).toLocaleString(current() === "zh" ? "zh-CN" : "en-GB", { dateStyle: "medium", timeStyle: "short" }) : "");

let toastTimer = 0;
function toast(msg, err) {
  const el = $("#toast");
  el.textContent = msg;
  el.className = "toast" + (err ? " err" : "");
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => { el.hidden = true; }, err ? 8000 : 4000);
}
const fail = (e) => toast(t("Something went wrong: {why}", { why: e.message || e }), true);

// busyDo runs fn with the button disabled, reporting a failure.
async function busyDo(btn, fn) {
  if (btn) btn.disabled = true;
  try { return await fn(); } catch (e) { if (!(e instanceof Redirected)) fail(e); } finally { if (btn) btn.disabled = false; }
}

// ---- API ------------------------------------------------------------------

class APIError extends Error {
  constructor(status, msg) { super(msg); this.status = status; }
}
class Redirected extends Error {}

async function api(method, path, body) {
  const headers = { Accept: "application/json" };
  if (session) headers.Authorization = "Bearer " + session.token;
  let payload = body;
  if (body != null && !(body instanceof FormData)) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const res = await fetch(API + path, { method, headers, body: payload });
  let env = null;
  try { env = await res.json(); } catch { /* not JSON */ }
  const msg = (env && env.msg) || "HTTP " + res.status;
  if (res.status === 401 && session && !path.startsWith("/users:login")) {
    logout(t("Your session has ended. Please sign in again."));
    throw new Redirected();
  }
  if (res.status === 403 && /temporary password/i.test(msg)) {
    showPasswordChange(true);
    throw new Redirected();
  }
  if (!res.ok) throw new APIError(res.status, res.status === 403 ? t("Your role may not do this.") + " (" + msg + ")" : msg);
  return env ? env.data : null;
}
const q = (params) => {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v != null && v !== "") u.set(k, v);
  const s = u.toString();
  return s ? "?" + s : "";
};

// watch follows GET /jobs/{id}:watch, calling onView with each job view,
// until the job ends or signal aborts; it reconnects when the stream drops.
async function watch(id, onView, signal) {
  let last = null;
  for (let tries = 0; tries < 20 && !signal.aborted; tries++) {
    let res;
    try {
      res = await fetch(API + "/jobs/" + encodeURIComponent(id) + ":watch",
        { headers: { Authorization: "Bearer " + session.token, Accept: "text/event-stream" }, signal });
    } catch (e) {
      if (signal.aborted) return;
      await new Promise((r) => setTimeout(r, 500));
      continue;
    }
    if (!res.ok) {
      let msg = "HTTP " + res.status;
      try { msg = (await res.json()).msg || msg; } catch { /* not JSON */ }
      throw new APIError(res.status, msg);
    }
    try {
      for await (const ev of readEvents(res.body)) {
        if (ev.data === "[DONE]") return last;
        let v;
        try { v = JSON.parse(ev.data); } catch { continue; }
        if (typeof v === "string") throw new APIError(500, v); // an "error" event
        if (v && v.id) onView((last = v));
      }
    } catch (e) {
      if (signal.aborted) return last;
      if (e instanceof APIError) throw e;
    }
    if (last && last.status && last.status !== "running") return last;
    await new Promise((r) => setTimeout(r, 300));
  }
}

// Streams and timers of the current view stop when the view changes.
let live = new AbortController();
function every(ms, fn) {
  const id = setInterval(() => { if (!document.hidden) fn(); }, ms);
  live.signal.addEventListener("abort", () => clearInterval(id));
}

// ---- shared lookups -------------------------------------------------------

let sitesCache = null;
async function sites(force) {
  if (!sitesCache || force) sitesCache = (await api("GET", "/sites" + q({ page: 1, size: 200 }))).list || [];
  return sitesCache;
}
const siteName = (id) => ((sitesCache || []).find((s) => s.id === id) || {}).name || "#" + id;

// currentSite answers the site of the view: ?site=, else the last one used,
// else the first.
async function currentSite(params) {
  const list = await sites();
  let id = Number(params.get("site")) || Number(localStorage.getItem("lore.admin.site")) || 0;
  if (!list.some((s) => s.id === id)) id = list.length ? list[0].id : 0;
  if (id) localStorage.setItem("lore.admin.site", String(id));
  return list.find((s) => s.id === id) || null;
}

function sitePicker(route, site, params) {
  const s = select("site", (sitesCache || []).map((x) => [x.id, x.name]), site ? site.id : "", { id: "site-picker" });
  s.addEventListener("change", () => {
    const p = new URLSearchParams(params);
    p.set("site", s.value);
    p.delete("page");
    go(route, p);
  });
  return field(t("Site"), s);
}

// flatTree lists a collection tree's collections depth first, with depth.
function flatTree(nodes, depth = 0, out = []) {
  for (const n of nodes || []) {
    if (n.type !== "collection") continue;
    out.push({ id: n.id, title: n.title, depth });
    flatTree(n.children, depth + 1, out);
  }
  return out;
}
async function collectionOptions(siteId) {
  const tree = await api("GET", "/collections:tree" + q({ site_id: siteId, type: "collection" }));
  return [["", t("(top level)")], ...flatTree(tree).map((c) => [c.id, "\u00a0\u00a0".repeat(c.depth) + c.title])];
}

function statusLabel(s) {
  return h("span", { class: "pill s-" + s, text: t(s) });
}

// bar is a progress bar with its figure: value in 0..100, or null while
// unknown (indeterminate).
function bar(value, label, cls) {
  const p = h("progress", { max: "100", class: cls || "", "aria-label": label || t("Progress") });
  if (value != null) p.value = value;
  return p;
}
function setBar(p, value) {
  if (value == null) p.removeAttribute("value");
  else p.value = value;
}
function jobPercent(j) {
  const p = j.progress;
  if (j.status === "completed") return 100;
  if (!p || !p.total) return j.status === "running" ? null : 0;
  return Math.min(100, Math.round((100 * (p.completed + p.failed)) / p.total));
}

function pager(pg, onPage) {
  if (!pg || !pg.total) return null;
  const pages = Math.max(1, Math.ceil(pg.total / pg.size));
  return h("nav", { class: "pager", "aria-label": "pages" },
    button(t("Previous"), () => onPage(pg.page - 1), { disabled: pg.page <= 1 }),
    h("span", { class: "meta", text: t("Page {page} of {pages} · {total} in all", { page: pg.page, pages, total: pg.total }) }),
    button(t("Next"), () => onPage(pg.page + 1), { disabled: pg.page >= pages }));
}

function table(headers, rows, attrs = {}) {
  return h("div", { class: "table-wrap" }, h("table", attrs,
    h("thead", {}, h("tr", {}, headers.map((x) => h("th", { scope: "col", text: x })))),
    h("tbody", {}, rows)));
}

// ---- router ---------------------------------------------------------------

const routes = {};
function go(name, params) {
  const s = params ? new URLSearchParams(params).toString() : "";
  location.hash = "#/" + name + (s ? "?" + s : "");
}
async function render() {
  live.abort();
  live = new AbortController();
  if (!session) return showLogin();
  const [path, qs] = location.hash.replace(/^#\/?/, "").split("?");
  const name = routes[path] ? path : "sites";
  const params = new URLSearchParams(qs || "");
  for (const a of document.querySelectorAll("#nav a")) {
    if (a.dataset.nav === name) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  $("#nav").classList.remove("open");
  $("#menu-toggle").setAttribute("aria-expanded", "false");
  view.replaceChildren(h("p", { class: "meta", text: t("Loading…") }));
  const signal = live.signal;
  try {
    const nodes = await routes[name](params, signal);
    if (!signal.aborted) view.replaceChildren(...[nodes].flat().filter(Boolean));
  } catch (e) {
    if (e instanceof Redirected || signal.aborted) return;
    view.replaceChildren(h("p", { class: "notice err", role: "alert", text: t("Something went wrong: {why}", { why: e.message }) }));
  }
}

// ---- login and password ---------------------------------------------------

function chrome(on) {
  $("#nav").hidden = !on;
  $("#menu-toggle").hidden = !on;
  $("#whoami").hidden = !on;
  if (!on) return;
  for (const a of document.querySelectorAll("#nav a[data-min]")) a.hidden = !can(a.dataset.min);
  $("#who-name").textContent = session.user.name || session.user.email;
  $("#who-role").textContent = roleLabel(session.user.role);
}

let loginNode = null;
function showLogin(msg) {
  chrome(false);
  if (!loginNode) loginNode = $("#login");
  loginNode.hidden = false;
  view.replaceChildren(loginNode);
  const err = $("#login-error");
  err.hidden = !msg;
  err.textContent = msg || "";
  $("#login-email").focus();
}

async function login(email, password) {
  session = null;
  const r = await api("POST", "/users:login", { email, password });
  session = { token: r.token, user: r.user, email };
  saveSession();
  sitesCache = null;
}

function logout(msg) {
  session = null;
  saveSession();
  sitesCache = null;
  if (location.hash && location.hash !== "#/") history.replaceState(null, "", location.pathname + location.hash);
  showLogin(msg);
}

function passwordForm(forced) {
  const old = h("input", { type: "password", id: "pw-old", autocomplete: "current-password", required: true, maxlength: "100" });
  const pw1 = h("input", { type: "password", id: "pw-new", autocomplete: "new-password", required: true, minlength: "8", maxlength: "100" });
  const pw2 = h("input", { type: "password", id: "pw-new2", autocomplete: "new-password", required: true, minlength: "8", maxlength: "100" });
  const err = h("p", { class: "notice err", role: "alert", hidden: true });
  const form = h("form", { id: "pw-form", class: "card-form" },
    h("h1", { text: t("Change your password") }),
    forced ? h("p", { class: "notice warn", id: "pw-forced", text: t("You are using a temporary password. Choose your own password to continue.") }) : null,
    field(t("Current password"), old), field(t("New password"), pw1), field(t("Repeat the new password"), pw2), err,
    h("button", { type: "submit", id: "pw-submit" }, t("Change password")));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    err.hidden = true;
    if (pw1.value !== pw2.value) {
      err.textContent = t("The two new passwords differ.");
      err.hidden = false;
      return;
    }
    try {
      await api("PUT", "/users/" + session.user.id + "/password", { old_password: old.value, new_password: pw1.value });
      // A changed password revokes the old tokens: sign in again with it.
      await login(session.user.email, pw1.value);
      toast(t("Password changed."));
      chrome(true);
      if (forced) go("sites");
      else render();
    } catch (e2) {
      if (e2 instanceof Redirected) return;
      err.textContent = e2.message;
      err.hidden = false;
    }
  });
  return form;
}

function showPasswordChange(forced) {
  live.abort();
  chrome(false);
  $("#whoami").hidden = false;
  view.replaceChildren(passwordForm(forced));
  $("#pw-old").focus();
}

routes.account = async () => [
  h("h1", { text: t("Account") }),
  h("p", { text: t("Signed in as {email} ({role}).", { email: session.user.email, role: roleLabel(session.user.role) }) }),
  passwordForm(false),
];

// ---- sites ----------------------------------------------------------------

routes.sites = async () => {
  const list = await sites(true);
  const rows = list.map((s) => h("tr", { dataset: { siteId: s.id } },
    h("td", {}, can("site_admin") ? link(s.name, "#/site?id=" + s.id) : s.name),
    h("td", { text: s.slug }),
    h("td", {}, statusLabel(s.status)),
    h("td", { text: s.requires_password ? t("Password") : s.is_public ? t("yes") : t("no") }),
    h("td", { text: String(s.article_count) }),
    h("td", { class: "actions" },
      link(t("Documents"), "#/docs?site=" + s.id),
      link(t("Collections"), "#/tree?site=" + s.id),
      link(t("Import"), "#/import?site=" + s.id),
      can("site_admin") ? link(t("Settings"), "#/site?id=" + s.id, { class: "site-settings" }) : null,
      link(t("Reader"), "/s/" + encodeURIComponent(s.slug), { target: "_blank", rel: "noopener" }))));
  return [
    h("div", { class: "head" }, h("h1", { text: t("Sites") }),
      can("admin") ? link(t("New site"), "#/site?new=1", { class: "button", id: "new-site" }) : null),
    list.length ? table([t("Name"), t("Slug"), t("Status"), t("Public"), t("Documents count"), t("Actions")], rows, { id: "sites-table" })
      : h("p", { class: "empty", text: can("admin") ? t("Nothing here yet.") : t("Create a site first.") }),
  ];
};

routes.site = async (params) => {
  const isNew = params.get("new") === "1";
  if (isNew && !can("admin")) throw new Error(t("Your role may not do this."));
  const s = isNew ? { name: "", slug: "", description: "", theme_color: "blue", status: "active", quick_questions: [] }
    : await api("GET", "/sites/" + Number(params.get("id")));
  const inp = {
    name: h("input", { name: "name", id: "site-name", required: true, maxlength: "100", value: s.name }),
    slug: h("input", { name: "slug", id: "site-slug", maxlength: "200", value: s.slug, pattern: "[a-z0-9][a-z0-9\\-]*" }),
    description: h("textarea", { name: "description", id: "site-description", rows: "3", maxlength: "10000", value: s.description || "" }),
    theme: h("input", { name: "theme_color", id: "site-theme", maxlength: "50", value: s.theme_color || "" }),
    status: select("status", [["active", t("active")], ["inactive", t("inactive")]], s.status === "inactive" ? "inactive" : "active"),
    quick: h("textarea", { name: "quick_questions", id: "site-quick", rows: "3", value: (s.quick_questions || []).map((x) => x.text).join("\n") }),
  };
  const form = h("form", { id: "site-form", class: "card-form wide" },
    field(t("Name"), inp.name), field(t("Slug"), inp.slug), field(t("Description"), inp.description),
    field(t("Theme colour"), inp.theme, "blue, green, #0d9488…"), field(t("Status"), inp.status),
    field(t("Quick questions (one per line)"), inp.quick),
    h("button", { type: "submit", id: "site-save" }, isNew ? t("Create") : t("Save")));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    busyDo(form.querySelector("button[type=submit]"), async () => {
      const body = { name: inp.name.value.trim(), description: inp.description.value, theme_color: inp.theme.value.trim(), status: inp.status.value,
        quick_questions: inp.quick.value.split("\n").map((x) => x.trim()).filter(Boolean).map((text) => ({ text })) };
      if (inp.slug.value.trim()) body.slug = inp.slug.value.trim();
      if (isNew) {
        const made = await api("POST", "/sites", body);
        sitesCache = null;
        localStorage.setItem("lore.admin.site", String(made.id));
        toast(t("Site created."));
        go("site", { id: made.id, created: 1 });
      } else {
        await api("PUT", "/sites/" + s.id, body);
        sitesCache = null;
        toast(t("Saved."));
      }
    });
  });
  const out = [h("h1", { text: isNew ? t("New site") : t("Site settings") + " · " + s.name })];
  if (params.get("created")) {
    out.push(h("p", { class: "notice ok", id: "site-next" }, t("Site created.") + " " + t("Next steps:") + " ",
      link(t("import documents"), "#/import?site=" + s.id, { id: "next-import" }), " · ",
      link(t("write a document"), "#/doc?site=" + s.id)));
  }
  out.push(form);
  if (!isNew) out.push(...(await siteAccess(s)));
  return out;
};

async function siteAccess(s) {
  const pw = h("input", { type: "password", id: "site-password", minlength: "4", maxlength: "64", autocomplete: "new-password" });
  const state = h("p", { id: "site-password-state", text: s.has_password ? t("This site has a password: readers must enter it.") : t("This site has no password.") });
  const access = h("section", { class: "card-form wide" }, h("h2", { text: t("Access password") }), state,
    field(t("Password"), pw),
    h("div", { class: "row" },
      button(t("Set password"), (e) => busyDo(e.target, async () => {
        await api("PUT", "/sites/" + s.id + "/password", { password: pw.value });
        pw.value = "";
        toast(t("Saved."));
        render();
      }), { id: "site-password-set" }),
      s.has_password ? button(t("Remove password"), (e) => busyDo(e.target, async () => {
        await api("DELETE", "/sites/" + s.id + "/password");
        toast(t("Saved."));
        render();
      }), { class: "secondary", id: "site-password-remove" }) : null));
  const ee = await api("GET", "/sites/" + s.id + "/ee-config");
  const ci = h("input", { type: "checkbox", id: "chat-caller", checked: ee.chat.caller_instructions });
  const budget = h("input", { type: "number", id: "chat-budget", min: "0", value: ee.chat.daily_token_budget == null ? "" : ee.chat.daily_token_budget });
  const chat = h("section", { class: "card-form wide" }, h("h2", { text: t("Chat settings") }),
    h("label", { class: "check" }, ci, t("Let callers' instructions reach the model")),
    field(t("Daily token budget (empty: server default, 0: none)"), budget),
    h("p", { class: "meta", text: t("In force: {budget} · used today: {used}", {
      budget: ee.chat.effective_daily_token_budget ? ee.chat.effective_daily_token_budget : t("unlimited"), used: ee.chat.tokens_used_today }) }),
    button(t("Save"), (e) => busyDo(e.target, async () => {
      await api("PATCH", "/sites/" + s.id + "/ee-config", { chat: { caller_instructions: ci.checked,
        daily_token_budget: budget.value === "" ? -1 : Number(budget.value) } });
      toast(t("Saved."));
    }), { id: "chat-save" }));
  const out = [access, chat];
  if (can("admin")) {
    out.push(h("section", { class: "card-form wide danger" }, h("h2", { text: t("Delete site") }),
      button(t("Delete site"), (e) => {
        if (!confirm(t("Delete the site {name} and everything in it?", { name: s.name }))) return;
        busyDo(e.target, async () => {
          await api("DELETE", "/sites/" + s.id);
          sitesCache = null;
          toast(t("Site deletion started."));
          go("sites");
        });
      }, { class: "danger", id: "site-delete" })));
  }
  return out;
}

// ---- collections ----------------------------------------------------------

routes.tree = async (params) => {
  const site = await currentSite(params);
  if (!site) return [h("h1", { text: t("Collections") }), h("p", { class: "empty", text: t("Create a site first.") })];
  const tree = await api("GET", "/collections:tree" + q({ site_id: site.id, type: "collection" }));
  const flat = flatTree(tree);
  const parentOpts = [["", t("(top level)")], ...flat.map((c) => [c.id, "\u00a0\u00a0".repeat(c.depth) + c.title])];
  const title = h("input", { id: "col-title", required: true, maxlength: "200" });
  const parent = select("parent", parentOpts, "", { id: "col-parent" });
  const form = h("form", { class: "row inline-form", id: "col-form" }, field(t("Title"), title), field(t("Parent"), parent),
    h("button", { type: "submit", id: "col-create" }, t("Create")));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    busyDo(form.querySelector("button"), async () => {
      await api("POST", "/collections", { title: title.value.trim(), site_id: site.id, parent_id: parent.value ? Number(parent.value) : null });
      toast(t("Saved."));
      render();
    });
  });
  const move = (id, parentId, order) => api("POST", "/collections/" + id + ":move", { new_parent_id: parentId, new_order: order });
  const nodeList = (nodes, parentId) => {
    const cols = (nodes || []).filter((n) => n.type === "collection");
    if (!cols.length) return null;
    return h("ul", { class: "ctree" }, cols.map((n, i) => {
      const name = h("input", { value: n.title, maxlength: "200", "aria-label": t("Title"), class: "col-name" });
      const dest = select("dest", parentOpts.filter(([v]) => String(v) !== String(n.id)), parentId || "", { "aria-label": t("Move to") });
      return h("li", { dataset: { colId: n.id } },
        h("div", { class: "col-row" }, name,
          button(t("Rename"), (e) => busyDo(e.target, async () => {
            await api("PUT", "/collections/" + n.id, { title: name.value.trim() });
            toast(t("Saved."));
            render();
          }), { class: "secondary col-rename" }),
          button("↑", (e) => busyDo(e.target, async () => { await move(n.id, parentId, i - 1); render(); }),
            { class: "secondary col-up", title: t("Move up"), "aria-label": t("Move up"), disabled: i === 0 }),
          button("↓", (e) => busyDo(e.target, async () => { await move(n.id, parentId, i + 1); render(); }),
            { class: "secondary col-down", title: t("Move down"), "aria-label": t("Move down"), disabled: i === cols.length - 1 }),
          dest,
          button(t("Move"), (e) => busyDo(e.target, async () => { await move(n.id, dest.value ? Number(dest.value) : null); render(); }),
            { class: "secondary col-move" }),
          can("site_admin") ? button(t("Delete"), (e) => {
            if (!confirm(t("Delete the collection {name}?", { name: n.title }))) return;
            busyDo(e.target, async () => { await api("DELETE", "/collections/" + n.id); render(); });
          }, { class: "danger col-delete" }) : null),
        nodeList(n.children, n.id));
    }));
  };
  return [
    h("div", { class: "head" }, h("h1", { text: t("Collections") })),
    h("div", { class: "toolbar" }, sitePicker("tree", site, params)),
    h("h2", { text: t("New collection") }), form,
    nodeList(tree, null) || h("p", { class: "empty", text: t("No collections yet.") }),
  ];
};

// ---- documents ------------------------------------------------------------

routes.docs = async (params, signal) => {
  const site = await currentSite(params);
  if (!site) return [h("h1", { text: t("Documents") }), h("p", { class: "empty", text: t("Create a site first.") })];
  const page = Number(params.get("page")) || 1;
  const f = { status: params.get("status") || "", vector_status: params.get("vector_status") || "", keyword: params.get("keyword") || "",
    collection_id: params.get("collection") || "" };
  const cols = await collectionOptions(site.id);
  const filters = h("form", { class: "toolbar", id: "doc-filters" },
    sitePicker("docs", site, params),
    field(t("Keyword"), h("input", { type: "search", name: "keyword", value: f.keyword, maxlength: "200" })),
    field(t("Status"), select("status", [["", t("any")], ["draft", t("draft")], ["published", t("published")]], f.status)),
    field(t("Vector"), select("vector_status", [["", t("any")], ...["none", "pending", "processing", "completed", "failed", "outdated"].map((s) => [s, t(s)])], f.vector_status)),
    field(t("Collection"), select("collection", [["", t("any")], ...cols.slice(1)], f.collection_id)),
    h("button", { type: "submit" }, t("Filter")));
  filters.addEventListener("submit", (e) => {
    e.preventDefault();
    const p = new URLSearchParams(new FormData(filters));
    for (const [k, v] of [...p]) if (!v) p.delete(k);
    go("docs", p);
  });
  const tbody = h("tbody");
  const pagerSlot = h("div");
  const load = async () => {
    const r = await api("GET", "/documents" + q({ site_id: site.id, page, size: 20, order_by: "updated_at", ...f }));
    if (signal.aborted) return false;
    tbody.replaceChildren(...r.list.map((d) => docRow(d, site)));
    if (!r.list.length) tbody.append(h("tr", {}, h("td", { colspan: "5", class: "empty", text: t("No documents match.") })));
    pagerSlot.replaceChildren(pager(r.pagination, (n) => { const p = new URLSearchParams(params); p.set("page", n); go("docs", p); }) || "");
    return r.list.some((d) => d.vector_status === "pending" || d.vector_status === "processing");
  };
  // While documents are being vectorized, and for a while after an action
  // (a publish starts its vectorization a moment later), the list follows.
  let busy = await load();
  let recent = params.get("recent") ? Date.now() + 10000 : 0;
  every(1000, async () => { if (busy || Date.now() < recent) busy = await load().catch(() => false); });
  document.addEventListener("lore:docs-changed", async () => {
    recent = Date.now() + 10000;
    busy = await load().catch(() => false);
  }, { signal });
  return [
    h("div", { class: "head" }, h("h1", { text: t("Documents") }),
      link(t("New document"), "#/doc?site=" + site.id, { class: "button", id: "new-doc" }),
      link(t("Import"), "#/import?site=" + site.id, { class: "button secondary" })),
    filters,
    h("div", { class: "table-wrap" }, h("table", { id: "docs-table" },
      h("thead", {}, h("tr", {}, [t("Title"), t("Status"), t("Vector"), t("Updated"), t("Actions")].map((x) => h("th", { scope: "col", text: x })))),
      tbody)),
    pagerSlot,
  ];
};

function docRow(d, site) {
  const changed = () => document.dispatchEvent(new Event("lore:docs-changed"));
  const act = (label, cls, fn) => button(label, (e) => busyDo(e.target, async () => { await fn(); changed(); }), { class: "secondary " + cls });
  const published = d.status === "published";
  const vec = h("td", { class: "vec" }, statusLabel(d.vector_status));
  if (d.vector_error) vec.append(h("small", { class: "meta err", text: " " + d.vector_error }));
  return h("tr", { dataset: { docId: d.id, status: d.status, vector: d.vector_status } },
    h("td", {}, link(d.title, "#/doc?id=" + d.id, { class: "doc-title" }), d.collection ? h("small", { class: "meta", text: " · " + d.collection.title }) : null),
    h("td", {}, statusLabel(d.status)),
    vec,
    h("td", { class: "meta", text: fmtDate(d.updated_at) }),
    h("td", { class: "actions" },
      act(published ? t("Unpublish") : t("Publish"), published ? "doc-unpublish" : "doc-publish",
        () => api("PUT", "/documents/" + d.id, { status: published ? "draft" : "published" })),
      can("site_admin") ? act(t("Vectorize"), "doc-vectorize", () => api("POST", "/documents/" + d.id + ":vectorize")) : null,
      can("site_admin") && d.vector_status !== "none" ? act(t("Remove vector"), "doc-unvector", () => api("POST", "/documents/" + d.id + ":removeVector")) : null,
      published ? link(t("View"), "/s/" + encodeURIComponent(site.slug) + "/d/" + d.id, { target: "_blank", rel: "noopener" }) : null,
      can("site_admin") ? button(t("Delete"), (e) => {
        if (!confirm(t("Delete the document {name}?", { name: d.title }))) return;
        busyDo(e.target, async () => { await api("DELETE", "/documents/" + d.id); changed(); });
      }, { class: "danger doc-delete" }) : null));
}

routes.doc = async (params) => {
  const id = Number(params.get("id")) || 0;
  const d = id ? await api("GET", "/documents/" + id)
    : { title: "", content: "", site_id: (await currentSite(params) || {}).id, status: "draft", author: session.user.name || "", tags: [], summary: "" };
  if (!d.site_id) return [h("p", { class: "empty", text: t("Create a site first.") })];
  const cols = await collectionOptions(d.site_id);
  const inp = {
    title: h("input", { id: "doc-title", required: true, maxlength: "200", value: d.title }),
    col: select("collection_id", cols, d.collection_id || "", { id: "doc-collection" }),
    author: h("input", { id: "doc-author", maxlength: "100", value: d.author || "" }),
    tags: h("input", { id: "doc-tags", value: (d.tags || []).join(", ") }),
    summary: h("textarea", { id: "doc-summary", rows: "2", maxlength: "5000", value: d.summary || "" }),
    status: select("status", [["draft", t("draft")], ["published", t("published")]], d.status, { id: "doc-status" }),
    content: h("textarea", { id: "doc-content", rows: "18", class: "mono", value: d.content || "" }),
  };
  const preview = h("div", { class: "doc preview", id: "doc-preview", hidden: true });
  const tabWrite = button(t("Write"), () => showTab(false), { class: "tab", "aria-pressed": "true", id: "tab-write" });
  const tabPreview = button(t("Preview"), () => showTab(true), { class: "tab", "aria-pressed": "false", id: "tab-preview" });
  async function showTab(pv) {
    tabWrite.setAttribute("aria-pressed", String(!pv));
    tabPreview.setAttribute("aria-pressed", String(pv));
    inp.content.hidden = pv;
    preview.hidden = !pv;
    if (!pv) return;
    preview.replaceChildren(h("p", { class: "meta", text: t("Loading…") }));
    const res = await fetch("/admin/preview", { method: "POST", headers: { "Content-Type": "application/json", Authorization: "Bearer " + session.token },
      body: JSON.stringify({ content: inp.content.value, title: inp.title.value }) });
    const env = await res.json().catch(() => null);
    if (!res.ok || !env) { preview.replaceChildren(h("p", { class: "notice err", text: (env && env.msg) || "HTTP " + res.status })); return; }
    // Rendered and sanitized by the server with the reader's policy.
    const tpl = document.createElement("template");
    tpl.innerHTML = env.data.html;
    preview.replaceChildren(tpl.content);
  }
  const form = h("form", { id: "doc-form", class: "card-form wide" },
    field(t("Title"), inp.title),
    h("div", { class: "row" }, field(t("Collection"), inp.col), field(t("Status"), inp.status), field(t("Author"), inp.author)),
    field(t("Tags (comma separated)"), inp.tags), field(t("Summary"), inp.summary),
    h("div", { class: "tabs", role: "group", "aria-label": t("Content (Markdown)") }, h("span", { class: "label", text: t("Content (Markdown)") }), tabWrite, tabPreview),
    inp.content, preview,
    h("div", { class: "row" }, h("button", { type: "submit", id: "doc-save" }, t("Save")),
      id && d.status === "published" && d.site_slug ? link(t("View"), "/s/" + encodeURIComponent(d.site_slug) + "/d/" + id, { target: "_blank", rel: "noopener" }) : null));
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    busyDo(form.querySelector("button[type=submit]"), async () => {
      const body = { title: inp.title.value.trim(), content: inp.content.value, author: inp.author.value, summary: inp.summary.value,
        status: inp.status.value, collection_id: inp.col.value ? Number(inp.col.value) : null,
        tags: inp.tags.value.split(",").map((x) => x.trim()).filter(Boolean) };
      if (id) await api("PUT", "/documents/" + id, body);
      else {
        const made = await api("POST", "/documents", { ...body, site_id: d.site_id });
        toast(t("Document saved."));
        go("doc", { id: made.id });
        return;
      }
      toast(t("Document saved."));
    });
  });
  return [h("h1", { text: id ? t("Edit document") : t("New document") }),
    h("p", {}, link("← " + t("Documents"), "#/docs?site=" + d.site_id)), form];
};

// ---- import ---------------------------------------------------------------

// unzip expands a zip in the browser (stored and deflated entries, through
// DecompressionStream): the API imports files, not archives.
async function unzip(file) {
  const buf = new Uint8Array(await file.arrayBuffer());
  const dv = new DataView(buf.buffer);
  let eocd = -1;
  for (let i = buf.length - 22; i >= Math.max(0, buf.length - 22 - 65535); i--) {
    if (dv.getUint32(i, true) === 0x06054b50) { eocd = i; break; }
  }
  if (eocd < 0) throw new Error("not a zip");
  const count = dv.getUint16(eocd + 10, true);
  let p = dv.getUint32(eocd + 16, true);
  const out = [];
  const dec = new TextDecoder();
  for (let n = 0; n < count; n++) {
    if (dv.getUint32(p, true) !== 0x02014b50) throw new Error("damaged directory");
    const method = dv.getUint16(p + 10, true);
    const csize = dv.getUint32(p + 20, true);
    const nlen = dv.getUint16(p + 28, true), xlen = dv.getUint16(p + 30, true), clen = dv.getUint16(p + 32, true);
    const local = dv.getUint32(p + 42, true);
    const name = dec.decode(buf.subarray(p + 46, p + 46 + nlen));
    p += 46 + nlen + xlen + clen;
    if (name.endsWith("/") || /(^|\/)(__MACOSX|\.)/.test(name)) continue;
    const start = local + 30 + dv.getUint16(local + 26, true) + dv.getUint16(local + 28, true);
    const data = buf.subarray(start, start + csize);
    let blob;
    if (method === 0) blob = new Blob([data]);
    else if (method === 8) blob = await new Response(new Blob([data]).stream().pipeThrough(new DecompressionStream("deflate-raw"))).blob();
    else throw new Error("compression method " + method);
    out.push(new File([blob], name.split("/").pop()));
  }
  return out;
}

routes.import = async (params, signal) => {
  const site = await currentSite(params);
  if (!site) return [h("h1", { text: t("Import documents") }), h("p", { class: "empty", text: t("Create a site first.") })];
  const cols = await collectionOptions(site.id);
  let files = [];
  const input = h("input", { type: "file", multiple: true, id: "import-files", class: "sr", tabindex: "-1" });
  const list = h("ul", { class: "filelist", id: "import-list" });
  const count = h("p", { class: "meta", id: "import-count" });
  const addFiles = async (fl) => {
    for (const f of fl) {
      if (/\.zip$/i.test(f.name)) {
        try { files.push(...(await unzip(f))); } catch (e) { toast(t("The zip {name} could not be read: {why}", { name: f.name, why: e.message }), true); }
      } else files.push(f);
    }
    list.replaceChildren(...files.map((f) => h("li", { text: f.name + " (" + Math.max(1, Math.round(f.size / 1024)) + " KB)" })));
    count.textContent = files.length ? t("{n} files chosen", { n: files.length }) : "";
    start.disabled = !files.length;
  };
  input.addEventListener("change", () => { addFiles(input.files); input.value = ""; });
  const drop = h("div", { class: "drop", id: "import-drop", tabindex: "0", role: "button", "aria-controls": "import-files" },
    h("strong", { text: t("Drop files or a zip here, or press Enter to choose them") }),
    h("small", { class: "meta", text: t("Markdown, text, HTML, DOCX, PPTX, XLSX, CSV, PDF; a zip is unpacked in the browser.") }));
  drop.addEventListener("click", () => input.click());
  drop.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); input.click(); } });
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => { e.preventDefault(); drop.classList.remove("over"); addFiles(e.dataTransfer.files); });
  const col = select("collection_id", cols, "", { id: "import-collection" });
  const publish = h("input", { type: "checkbox", id: "import-publish" });
  const progress = h("section", { id: "import-progress", class: "import-progress", "aria-live": "polite" });
  const start = button(t("Start import"), (e) => busyDo(e.target, async () => {
    const fd = new FormData();
    fd.append("site_id", String(site.id));
    if (col.value) fd.append("collection_id", col.value);
    fd.append("publish", publish.checked ? "true" : "false");
    for (const f of files) fd.append("files", f, f.name);
    const task = await api("POST", "/documents:import", fd);
    files = [];
    addFiles([]);
    followImport(task.job_id || task.id, progress, signal, site);
  }), { id: "import-start", disabled: true });
  const clear = button(t("Clear"), () => { files = []; addFiles([]); }, { class: "secondary" });
  const out = [h("h1", { text: t("Import documents") }),
    h("div", { class: "toolbar" }, sitePicker("import", site, params), field(t("Collection"), col)),
    drop, input, count, list,
    h("label", { class: "check" }, publish, t("Publish the imported documents")),
    h("div", { class: "row" }, start, clear), progress];
  if (params.get("job")) followImport(params.get("job"), progress, signal, site);
  return out;
};

function itemPercent(it, jobDone) {
  switch (it.status) {
    case "completed": return jobDone || it.vector_status ? 100 : 75;
    case "failed": return 100;
    case "running": return 40;
    default: return 0;
  }
}

// followImport shows an import's progress; after a retry, oldRun is the run
// retried, whose views (the watch may still serve its end) are skipped.
function followImport(jobId, box, signal, site, oldRun) {
  history.replaceState(null, "", "#/import?site=" + site.id + "&job=" + encodeURIComponent(jobId));
  const jobBar = bar(null, t("Import job"), "job-bar");
  const jobText = h("span", { class: "meta", id: "import-job-text" });
  const items = h("ul", { class: "items", id: "import-items" });
  const actions = h("div", { class: "row", id: "import-actions" });
  box.replaceChildren(h("h2", { text: t("Import job") }), h("div", { class: "barline" }, jobBar, jobText), items, actions);
  box.dataset.job = jobId;
  box.dataset.follows = String(Number(box.dataset.follows || 0) + 1); // how many runs it followed (a retry is one more)
  let run = "";
  const show = (j) => {
    if (oldRun && j.run_id === oldRun) return;
    run = j.run_id;
    const pct = jobPercent(j);
    setBar(jobBar, pct);
    jobBar.dataset.value = pct == null ? "" : String(pct);
    const p = j.progress || {};
    jobText.textContent = t(j.status) + (p.total ? " · " + (p.completed + p.failed) + "/" + p.total : "") + (pct != null ? " · " + pct + "%" : "");
    box.dataset.status = j.status;
    const done = j.status !== "running";
    items.replaceChildren(...(p.items || []).map((it) => {
      const v = itemPercent(it, done);
      const b = bar(v, it.name, "item-bar" + (it.status === "failed" ? " failed" : ""));
      b.dataset.value = String(v);
      return h("li", { dataset: { status: it.status, documentId: it.document_id || "" } },
        h("span", { class: "name", text: it.name }), b,
        h("span", { class: "meta", text: t(it.status) + (it.vector_status ? " · " + t("Vector") + " " + t(it.vector_status) : "") + (it.reason ? " · " + it.reason : "") }),
        it.document_id ? link(t("Edit"), "#/doc?id=" + it.document_id) : null);
    }));
    actions.replaceChildren();
    if (!done) return;
    if (p.failed > 0 && can("site_admin")) {
      actions.append(button(t("Retry failed files"), (e) => busyDo(e.target, async () => {
        await api("POST", "/jobs/" + encodeURIComponent(jobId) + ":retry");
        followImport(jobId, box, signal, site, run);
      }), { id: "import-retry" }));
    }
    const drafts = (p.items || []).filter((it) => it.status === "completed" && it.document_id);
    if (drafts.length) {
      actions.append(button(t("Publish the imported documents now"), (e) => busyDo(e.target, async () => {
        for (const it of drafts) await api("PUT", "/documents/" + it.document_id, { status: "published" });
        toast(t("{n} documents published.", { n: drafts.length }));
        go("docs", { site: site.id, recent: 1 });
      }), { id: "import-publish-now", class: "secondary" }));
      actions.append(link(t("Documents"), "#/docs?site=" + site.id, { class: "button secondary" }));
    }
  };
  // Follow until the run ends (after a retry the watch may first end on
  // the retried run: then the new one is followed).
  (async () => {
    for (let i = 0; i < 100 && !signal.aborted; i++) {
      try {
        await watch(jobId, show, signal);
      } catch (e) {
        if (!signal.aborted) box.append(h("p", { class: "notice err", text: t("The progress could not be followed: {why}", { why: e.message }) }));
        return;
      }
      if (signal.aborted) return;
      let j;
      try { j = await api("GET", "/jobs/" + encodeURIComponent(jobId)); } catch { return; }
      show(j); // the final view, with the result the stream may have ended before
      if (j.status !== "running" && !(oldRun && j.run_id === oldRun)) return;
      await new Promise((r) => setTimeout(r, 300));
    }
  })();
}

// ---- jobs -----------------------------------------------------------------

const KINDS = ["vectorize_document", "batch_vectorize", "remove_vectors", "delete_site", "reindex", "import"];
const JOB_STATUSES = ["running", "completed", "failed", "canceled", "terminated", "timed_out"];

routes.jobs = async (params, signal) => {
  const page = Number(params.get("page")) || 1;
  const f = { kind: params.get("kind") || "", status: params.get("status") || "" };
  const filters = h("form", { class: "toolbar", id: "job-filters" },
    field(t("Kind"), select("kind", [["", t("any")], ...KINDS.map((k) => [k, t(k)])], f.kind, { id: "job-kind" })),
    field(t("Status"), select("status", [["", t("any")], ...JOB_STATUSES.map((s) => [s, t(s)])], f.status, { id: "job-status" })),
    h("button", { type: "submit" }, t("Filter")));
  filters.addEventListener("submit", (e) => {
    e.preventDefault();
    const p = new URLSearchParams(new FormData(filters));
    for (const [k, v] of [...p]) if (!v) p.delete(k);
    go("jobs", p);
  });
  await sites().catch(() => []);
  const tbody = h("tbody");
  const pagerSlot = h("div");
  const watching = new Map(); // job id → true while its stream runs
  const update = (j) => {
    const row = tbody.querySelector(`tr[data-job-id="${CSS.escape(j.id)}"]`);
    if (row) row.replaceWith(jobRow(j, load));
  };
  const follow = (j) => {
    if (j.status !== "running" || watching.has(j.id) || watching.size >= 4) return; // browsers hold ~6 connections per host
    watching.set(j.id, true);
    watch(j.id, update, signal).then((last) => { if (last) update(last); }).catch(() => {}).finally(() => {
      watching.delete(j.id);
      if (!signal.aborted) load();
    });
  };
  async function load() {
    const r = await api("GET", "/jobs" + q({ page, size: 20, ...f }));
    if (signal.aborted) return;
    tbody.replaceChildren(...r.list.map((j) => jobRow(j, load)));
    if (!r.list.length) tbody.append(h("tr", {}, h("td", { colspan: "6", class: "empty", text: t("No jobs match.") })));
    pagerSlot.replaceChildren(pager(r.pagination, (n) => { const p = new URLSearchParams(params); p.set("page", n); go("jobs", p); }) || "");
    for (const j of r.list) follow(j);
  }
  await load();
  every(5000, () => load().catch(() => {}));
  return [h("div", { class: "head" }, h("h1", { text: t("Jobs") }), button(t("Refresh"), (e) => busyDo(e.target, load), { class: "secondary" })),
    filters,
    h("div", { class: "table-wrap" }, h("table", { id: "jobs-table" },
      h("thead", {}, h("tr", {}, [t("Title"), t("Kind"), t("Status"), t("Progress"), t("Started"), t("Actions")].map((x) => h("th", { scope: "col", text: x })))),
      tbody)),
    pagerSlot];
};

// retryable says whether :retry takes the job: a closed job that did not
// complete (a re-index is started again instead), or an import that
// completed with failed files.
function retryable(j) {
  if (j.kind === "reindex") return false;
  if (["failed", "canceled", "terminated", "timed_out"].includes(j.status)) return true;
  return j.kind === "import" && j.status === "completed" && !!(j.progress && j.progress.failed);
}

function jobRow(j, reload) {
  const pct = jobPercent(j);
  const p = j.progress || {};
  const b = bar(pct, j.title || j.id, "job-bar" + (j.status === "failed" ? " failed" : ""));
  b.dataset.value = pct == null ? "" : String(pct);
  const ui = j.temporal && j.temporal.ui;
  return h("tr", { dataset: { jobId: j.id, status: j.status } },
    h("td", {}, h("span", { text: j.title || j.id }), h("br"), h("small", { class: "meta", text: j.id + (j.requested_by ? " · " + j.requested_by : "") })),
    h("td", { text: t(j.kind) }),
    h("td", {}, statusLabel(j.status), j.error ? h("small", { class: "meta err", text: " " + j.error }) : null),
    h("td", { class: "progress-cell" }, b, h("small", { class: "meta", text: (p.total ? (p.completed + p.failed) + "/" + p.total : "") + (pct != null ? " " + pct + "%" : "") + (p.step ? " · " + p.step : "") })),
    h("td", { class: "meta", text: fmtDate(j.started_at) }),
    h("td", { class: "actions" },
      j.status === "running" ? button(t("Cancel"), (e) => {
        if (!confirm(t("Cancel the job {name}?", { name: j.title || j.id }))) return;
        busyDo(e.target, async () => { await api("POST", "/jobs/" + encodeURIComponent(j.id) + ":cancel"); toast(t("Done.")); reload(); });
      }, { class: "danger job-cancel" }) : null,
      retryable(j) ? button(t("Retry"), (e) => busyDo(e.target, async () => {
        await api("POST", "/jobs/" + encodeURIComponent(j.id) + ":retry");
        toast(t("Done."));
        reload();
      }), { class: "secondary job-retry" }) : null,
      ui ? link(t("Temporal"), ui, { target: "_blank", rel: "noopener", class: "job-temporal", title: t("Workflow") }) : null));
}

// ---- AI configuration -----------------------------------------------------

routes.ai = async () => {
  const cfg = await api("GET", "/system-configs/ai-config");
  const sections = [["chat", t("Chat model")], ["embedding", t("Embedding model")], ["rerank", t("Rerank model")]];
  const inputs = {};
  const boxes = sections.map(([key, label]) => {
    const c = cfg.configs[key] || {};
    const i = inputs[key] = {
      provider: h("input", { id: `ai-${key}-provider`, value: c.provider || "", maxlength: "50" }),
      model: h("input", { id: `ai-${key}-model`, value: c.model || "", maxlength: "200" }),
      base_url: h("input", { id: `ai-${key}-base`, value: c.base_url || "", maxlength: "1000", type: "url" }),
      api_key: h("input", { id: `ai-${key}-key`, type: "password", placeholder: c.api_key || "", autocomplete: "off", maxlength: "2000" }),
      dimension: key === "embedding" ? h("input", { id: "ai-embedding-dim", type: "number", min: "0", value: c.dimension == null ? "" : c.dimension }) : null,
      orig: c,
    };
    const fallback = cfg.meta && cfg.meta.fallback && cfg.meta.fallback[key];
    return h("fieldset", { class: "card-form" }, h("legend", { text: label }),
      fallback ? h("p", { class: "meta", text: t("Using the server default (not stored for this tenant).") }) : null,
      field(t("Provider"), i.provider), field(t("Model"), i.model), field(t("Base URL"), i.base_url),
      field(t("API key (empty: keep the stored one)"), i.api_key), i.dimension ? field(t("Dimension"), i.dimension) : null);
  });
  const mode = select("vectorize_mode", [["automatic", t("automatic")], ["manual", t("manual")]], cfg.vectorize_mode, { id: "ai-mode" });
  // changed answers the sections the form changed, as the PUT takes them.
  const changed = () => {
    const out = {};
    for (const [key] of sections) {
      const i = inputs[key];
      const o = i.orig;
      const dim = i.dimension ? (i.dimension.value === "" ? null : Number(i.dimension.value)) : o.dimension;
      if (i.provider.value === (o.provider || "") && i.model.value === (o.model || "") && i.base_url.value === (o.base_url || "") && !i.api_key.value && dim === (o.dimension ?? null)) continue;
      const s = { provider: i.provider.value.trim(), model: i.model.value.trim(), base_url: i.base_url.value.trim() };
      if (i.api_key.value) s.api_key = i.api_key.value;
      if (i.dimension && dim != null) s.dimension = dim;
      out[key] = s;
    }
    return out;
  };
  const results = h("div", { id: "ai-test-results", "aria-live": "polite" });
  const form = h("form", { id: "ai-form" }, h("div", { class: "grid3" }, boxes), field(t("Vectorize mode"), mode),
    h("div", { class: "row" }, h("button", { type: "submit", id: "ai-save" }, t("Save")),
      button(t("Test connection"), (e) => busyDo(e.target, async () => {
        results.replaceChildren(h("p", { class: "meta", text: t("Testing…") }));
        const r = await api("POST", "/system-configs/ai-config/test-connection", changed());
        results.replaceChildren(h("p", { class: "notice " + (r.ok ? "ok" : "err"), text: r.ok ? t("Every model answered.") : t("A model did not answer.") }),
          table([t("Model"), t("Provider"), t("Status"), ""], r.results.map((x) => h("tr", { dataset: { model: x.model_type, ok: String(x.ok) } },
            h("td", { text: t(x.model_type) + " · " + x.model }), h("td", { text: x.provider }),
            h("td", { text: x.ok ? "✓ " + x.latency_ms + " ms" : "✗" }), h("td", { text: x.ok ? x.details : x.error || "" })))));
      }), { class: "secondary", id: "ai-test" })), results);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    busyDo(form.querySelector("button[type=submit]"), async () => {
      const body = changed();
      if (mode.value !== cfg.vectorize_mode) body.vectorize_mode = mode.value;
      await api("PUT", "/system-configs/ai-config", body);
      toast(t("Saved."));
      render();
    });
  });
  return [h("h1", { text: t("AI configuration") }), form];
};

// ---- users ----------------------------------------------------------------

routes.users = async () => {
  const [r] = await Promise.all([api("GET", "/users" + q({ page: 1, size: 100 })), sites()]);
  const roles = ["admin", "site_admin", "editor"].map((r) => [r, roleLabel(r)]);
  const secret = h("p", { class: "notice ok", id: "user-secret", hidden: true, role: "status" });
  // The page may have been drawn again since (after an invite): the secret
  // goes to the one on the page.
  const reveal = (email, password) => {
    const el = document.getElementById("user-secret") || secret;
    el.textContent = t("Temporary password for {email}: {password} (shown once)", { email, password });
    el.hidden = false;
  };
  const siteChecks = (chosen, prefix) => h("div", { class: "checks" }, (sitesCache || []).map((s) =>
    h("label", { class: "check" }, h("input", { type: "checkbox", value: s.id, name: prefix + "-site", checked: chosen.includes(s.id) }), s.name)));
  const email = h("input", { type: "email", id: "invite-email", required: true, maxlength: "254" });
  const name = h("input", { id: "invite-name", maxlength: "100" });
  const role = select("role", roles, "editor", { id: "invite-role" });
  const checks = siteChecks([], "invite");
  const invite = h("form", { id: "invite-form", class: "card-form wide" }, h("h2", { text: t("Invite a user") }),
    h("div", { class: "row" }, field(t("Email"), email), field(t("Name"), name), field(t("Role"), role)),
    h("fieldset", {}, h("legend", { text: t("Assigned sites") }), checks),
    h("button", { type: "submit", id: "invite-submit" }, t("Invite")));
  invite.addEventListener("submit", (e) => {
    e.preventDefault();
    busyDo(invite.querySelector("button[type=submit]"), async () => {
      const ids = [...checks.querySelectorAll("input:checked")].map((x) => Number(x.value));
      const made = await api("POST", "/users:invite", { email: email.value.trim(), name: name.value.trim(), role: role.value, managed_site_ids: ids });
      await render();
      reveal(made.user.email, made.password);
    });
  });
  const rows = r.list.map((u) => {
    const rs = select("role", roles, u.role === "tenant_admin" ? "admin" : u.role, { "aria-label": t("Role"), class: "user-role" });
    const me = u.id === session.user.id;
    rs.disabled = me;
    const sitesBox = siteChecks(u.managed_site_ids || [], "u" + u.id);
    const details = h("details", {}, h("summary", { text: (u.managed_site_ids || []).map(siteName).join(", ") || t("none") }), sitesBox);
    return h("tr", { dataset: { userId: u.id } },
      h("td", {}, u.name, h("br"), h("small", { class: "meta", text: u.email })),
      h("td", {}, rs), h("td", {}, details),
      h("td", {}, statusLabel(u.status)), h("td", { class: "meta", text: fmtDate(u.last_login_at) }),
      h("td", { class: "actions" },
        button(t("Save"), (e) => busyDo(e.target, async () => {
          const body = { managed_site_ids: [...sitesBox.querySelectorAll("input:checked")].map((x) => Number(x.value)) };
          if (!me) body.role = rs.value;
          await api("PUT", "/users/" + u.id, body);
          toast(t("Saved."));
          render();
        }), { class: "secondary user-save" }),
        me ? null : button(t("Reset password"), (e) => busyDo(e.target, async () => {
          const x = await api("POST", "/users/" + u.id + ":resetPassword");
          reveal(u.email, x.password);
        }), { class: "secondary user-reset" }),
        me ? null : button(t("Delete"), (e) => {
          if (!confirm(t("Delete the user {name}?", { name: u.email }))) return;
          busyDo(e.target, async () => { await api("DELETE", "/users/" + u.id); render(); });
        }, { class: "danger user-delete" })));
  });
  return [h("h1", { text: t("Users") }), secret,
    table([t("Name"), t("Role"), t("Assigned sites"), t("Status"), t("Last login"), t("Actions")], rows, { id: "users-table" }), invite];
};

// ---- analytics ------------------------------------------------------------

routes.analytics = async (params) => {
  const site = await currentSite(params);
  if (!site) return [h("h1", { text: t("Analytics") }), h("p", { class: "empty", text: t("Create a site first.") })];
  const days = Number(params.get("days")) || 7;
  const [a, down] = await Promise.all([api("GET", "/sites/" + site.id + "/analytics" + q({ days })),
    api("GET", "/feedback/list" + q({ site_id: site.id, rating: "down", page: 1, size: 10 }))]);
  const daySel = select("days", [[7, "7"], [30, "30"], [90, "90"]], days, { id: "days" });
  daySel.addEventListener("change", () => go("analytics", { site: site.id, days: daySel.value }));
  const max = Math.max(1, ...a.question_trends.map((d) => d.questions));
  const stat = (label, value, id) => h("div", { class: "stat", id }, h("span", { class: "meta", text: label }), h("strong", { text: String(value) }));
  const qtable = (list, id) => list.length ? table([t("Question"), t("Times"), t("Unanswered"), t("Last asked")], list.map((x) =>
    h("tr", {}, h("td", { text: x.question }), h("td", { text: String(x.count) }), h("td", { text: String(x.unanswered) }), h("td", { class: "meta", text: fmtDate(x.last_asked) }))), { id })
    : h("p", { class: "empty", text: t("Nothing here yet.") });
  return [
    h("h1", { text: t("Analytics") }),
    h("div", { class: "toolbar" }, sitePicker("analytics", site, params), field(t("Days"), daySel)),
    h("div", { class: "stats" }, stat(t("Questions"), a.total_questions, "stat-questions"), stat(t("Unanswered"), a.unanswered_count, "stat-unanswered"),
      stat(t("Answer rate"), Math.round(a.answer_rate) + "%", "stat-rate"),
      stat(t("Feedback"), t("{up} up · {down} down", { up: a.feedback.up, down: a.feedback.down }), "stat-feedback")),
    h("h2", { text: t("Questions per day") }),
    table([t("Date"), t("Questions"), t("Unanswered"), ""], a.question_trends.map((d) => h("tr", {},
      h("td", { text: d.date }), h("td", { text: String(d.questions) }), h("td", { text: String(d.unanswered) }),
      h("td", { class: "bar-cell" }, h("meter", { min: "0", max: String(max), value: String(d.questions), "aria-label": d.date })))), { id: "questions-per-day" }),
    h("h2", { text: t("Unanswered questions") }), qtable(a.unanswered_questions, "unanswered"),
    h("h2", { text: t("Top questions") }), qtable(a.top_questions, "top-questions"),
    h("h2", { text: t("Recent thumbs down") }),
    down.list.length ? table([t("Answer"), t("Reason"), t("Date")], down.list.map((x) => h("tr", {},
      h("td", { text: (x.message_content || "").slice(0, 300) }), h("td", { text: x.reason || "" }), h("td", { class: "meta", text: fmtDate(x.created_at) }))), { id: "feedback-down" })
      : h("p", { class: "empty", text: t("Nothing here yet.") }),
  ];
};

// ---- start ----------------------------------------------------------------

function start() {
  loginNode = $("#login");
  pick();
  const langSel = $("#lang");
  langSel.value = current();
  translate();
  langSel.addEventListener("change", () => {
    setLang(langSel.value);
    translate();
    if (session) { chrome(true); render(); }
  });
  $("#menu-toggle").addEventListener("click", () => {
    const open = $("#nav").classList.toggle("open");
    $("#menu-toggle").setAttribute("aria-expanded", String(open));
  });
  $("#logout").addEventListener("click", () => logout());
  $("#login-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    const btn = $("#login-submit");
    btn.disabled = true;
    try {
      await login($("#login-email").value.trim(), $("#login-password").value);
      $("#login-password").value = "";
      chrome(true);
      await render();
    } catch (err) {
      if (!(err instanceof Redirected)) showLogin(err.message);
    } finally {
      btn.disabled = false;
    }
  });
  window.addEventListener("hashchange", () => { if (session) render(); });
  loadSession();
  if (session) chrome(true);
  render();
}
start();

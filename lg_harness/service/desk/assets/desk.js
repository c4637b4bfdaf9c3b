// The desk's scripts: the live transcript and the buttons. Everything a customer wrote is set with
// textContent, never innerHTML, so it stays text.
"use strict";

const csrf = () => (document.querySelector('meta[name="csrf"]') || {}).content || "";

function notice(text, ok) {
  const box = document.getElementById("notice");
  if (!box) return;
  box.textContent = text;
  box.className = ok ? "ok" : "";
  box.hidden = false;
}

async function call(url, body) {
  const response = await fetch(url, {
    method: "POST", credentials: "same-origin",
    headers: {"Content-Type": "application/json", "X-CSRF-Token": csrf()},
    body: JSON.stringify(body || {}),
  });
  const data = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(problem(data, response.status));
  return data;
}

// Every error of the service has one shape: {"code", "message", "hint"} (lg_harness/service/http_errors.py).
function problem(data, status) {
  if (!data || !data.message) return `HTTP ${status}`;
  return data.hint ? `${data.message} (${data.hint})` : data.message;
}

const path = (thread) => encodeURIComponent(thread);

const ACTIONS = {
  take: (b) => call(`/handoffs/${path(b.dataset.thread)}/take`).then(() => "taken: the thread is yours"),
  release: (b) => call(`/handoffs/${path(b.dataset.thread)}/release`).then(() => "released: the bot has the thread again"),
  fork: (b) => call(`/threads/${path(b.dataset.thread)}/fork`, {checkpoint_id: b.dataset.checkpoint})
    .then((r) => `forked: the thread continues from ${r.forked_from}`),
};

// A page that follows its thread live (the thread page) learns of a take or a release from the thread's
// status events; other pages (the queue) and a fork, which rewrites the thread's branch, reload.
const FOLLOWED = new Set(["take", "release"]);

document.addEventListener("click", (event) => {
  const button = event.target.closest("button[data-action]");
  if (!button) return;
  button.disabled = true;
  const live = document.getElementById("transcript") && FOLLOWED.has(button.dataset.action);
  ACTIONS[button.dataset.action](button)
    .then((text) => {
      notice(text, true);
      if (live) button.disabled = false; else setTimeout(() => location.reload(), 600);
    })
    .catch((err) => { notice(err.message, false); button.disabled = false; });
});

document.addEventListener("submit", (event) => {
  const form = event.target.closest("form.answer");
  if (!form) return;
  event.preventDefault();
  const text = form.elements.text.value.trim();
  if (!text) { notice("write your answer first", false); return; }
  const button = form.querySelector("button");
  button.disabled = true;
  call(`/handoffs/${path(form.dataset.thread)}/reply`, {text})
    .then(() => { form.elements.text.value = ""; notice("answer sent", true); })
    .catch((err) => notice(err.message, false))
    .finally(() => { button.disabled = false; });
});

// Who wrote a row, as lg_harness/service/desk/pages.py shows it (memory.transcript.author_label).
function authorLabel(row) {
  if (row.author === "human") return row.author_name ? `${row.author_name} (human)` : "human";
  return row.author || row.role;
}

function messageItem(row) {
  const item = document.createElement("li");
  item.className = `msg ${row.role} by-${row.author || "unknown"} fresh`;
  item.dataset.seq = row.seq;
  const role = document.createElement("span");
  role.className = "role";
  role.textContent = `${authorLabel(row)} · turn ${row.turn}`;
  const text = document.createElement("div");
  text.className = "text";
  text.textContent = row.content;
  item.append(role, text);
  return item;
}

function badge(status, takenBy) {
  const span = document.createElement("span");
  span.className = `badge ${status || "bot"}`;
  span.dataset.handoffBadge = "";
  span.textContent = status ? status + (takenBy ? ` · ${takenBy}` : "") : "bot";
  return span;
}

function follow(list) {
  const live = document.getElementById("live");
  const url = `/threads/${path(list.dataset.thread)}/live?after=${list.dataset.after || 0}`;
  const source = new EventSource(url);
  source.onopen = () => live && live.classList.add("on");
  source.onerror = () => live && live.classList.remove("on");
  source.addEventListener("message", (event) => {
    const row = JSON.parse(event.data);
    if (list.querySelector(`[data-seq="${row.seq}"]`)) return;
    list.append(messageItem(row));
  });
  source.addEventListener("status", (event) => {
    const s = JSON.parse(event.data);
    const set = (id, value) => { const el = document.getElementById(id); if (el) el.textContent = value; };
    set("phase", s.phase || "-");
    set("turn", String(s.turn));
    document.querySelectorAll("[data-handoff-badge]").forEach((el) => el.replaceWith(badge(s.handoff, s.taken_by)));
    const box = document.getElementById("handoff-box");
    if (box) box.hidden = !s.handoff;  // released: the bot has the thread, nothing to take or answer
  });
}

document.addEventListener("DOMContentLoaded", () => {
  const list = document.getElementById("transcript");
  if (list && window.EventSource) follow(list);
});

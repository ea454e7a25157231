(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("page-data").textContent);
  var body = document.querySelector("#rows tbody");
  var more = document.getElementById("more");
  var total = document.getElementById("total");
  var state = document.getElementById("live-state");
  var form = document.getElementById("filters");
  var versions = {};
  var source = null;
  var next = null;

  function text(tag, content, cls) {
    var el = document.createElement(tag);
    if (content !== undefined && content !== null) { el.textContent = String(content); }
    if (cls) { el.className = cls; }
    return el;
  }
  function ago(iso) {
    var s = Math.max(0, (Date.now() - Date.parse(iso)) / 1000);
    if (s < 60) { return Math.round(s) + " s ago"; }
    if (s < 3600) { return Math.round(s / 60) + " min ago"; }
    if (s < 172800) { return Math.round(s / 3600) + " h ago"; }
    return Math.round(s / 86400) + " d ago";
  }
  function budget(used, of) {
    var span = text("span", used + " of " + (of === null ? "-" : of));
    if (of !== null && used >= of) { span.className = "over"; }
    return span;
  }
  function cell(row, label, content) {
    var td = document.createElement("td");
    td.setAttribute("data-label", label);
    if (typeof content === "string") { td.textContent = content; } else { content.forEach(function (c) { td.appendChild(c); }); }
    row.appendChild(td);
    return td;
  }
  function rowOf(w) {
    var tr = document.createElement("tr");
    tr.setAttribute("data-id", w.workspace_id);
    tr.setAttribute("data-version", String(w.workspace_version));
    tr.setAttribute("data-status", w.status);
    tr.setAttribute("data-needs", w.needs_person.join(" "));
    var link = text("a", w.workspace_id);
    link.href = "/ui/workspaces/" + encodeURIComponent(w.workspace_id);
    var goal = text("small", w.goal);
    cell(tr, "workspace", [link, document.createElement("br"), goal]);
    var status = [text("span", w.status, "status status-" + w.status)];
    w.needs_person.forEach(function (why) { status.push(document.createTextNode(" ")); status.push(text("span", why === w.status ? "needs a person" : why.replace(/_/g, " "), "needs")); });
    if (w.status_reason) { status.push(document.createElement("br")); status.push(text("small", w.status_reason)); }
    if (w.handoff) { status.push(document.createElement("br")); status.push(text("small", "handoff: " + w.handoff, "handoff")); }
    cell(tr, "status", status);
    cell(tr, "version", String(w.workspace_version)).className = "version";
    cell(tr, "service", (w.service || "-") + (w.environment ? " (" + w.environment + ")" : ""));
    var opened = text("span", ago(w.opened_at)); opened.setAttribute("data-at", w.opened_at); opened.title = w.opened_at;
    cell(tr, "opened", [opened]);
    var last = text("span", ago(w.last_commit_at)); last.setAttribute("data-at", w.last_commit_at); last.title = w.last_commit_at;
    cell(tr, "last commit", [last]);
    cell(tr, "model calls", [budget(w.model_calls.used, w.model_calls.budget)]);
    cell(tr, "cycles", [budget(w.cycles.used, w.cycles.budget)]);
    if (versions[w.workspace_id] !== undefined && versions[w.workspace_id] !== w.workspace_version) { tr.className = "fresh"; }
    versions[w.workspace_id] = w.workspace_version;
    return tr;
  }
  function show(page, append) {
    if (!append) { body.textContent = ""; }
    page.workspaces.forEach(function (w) { body.appendChild(rowOf(w)); });
    if (!page.workspaces.length && !append) {
      var tr = document.createElement("tr"); var td = text("td", "No investigation matches."); td.colSpan = 8; tr.appendChild(td); body.appendChild(tr);
    }
    total.textContent = "(" + page.total + ")";
    if (!append) { next = page.next_before; }
    more.hidden = next === null;
    body.setAttribute("data-total", String(page.total));
  }
  function query(extra) {
    var params = new URLSearchParams();
    var q = document.getElementById("q").value.trim();
    var status = document.getElementById("status").value;
    if (q) { params.set("q", q); }
    if (status) { params.set("status", status); }
    if (document.getElementById("needs-person").checked) { params.set("needs_person", "true"); }
    Object.keys(extra || {}).forEach(function (k) { params.set(k, extra[k]); });
    return params.toString();
  }
  function follow() {
    if (source) { source.close(); }
    var q = query();
    source = new EventSource(data.events + (q ? "?" + q : ""));
    source.addEventListener("open", function () { state.textContent = "live"; state.setAttribute("data-live", "1"); });
    source.addEventListener("list", function (event) { show(JSON.parse(event.data), false); body.setAttribute("data-updated", String(Date.now())); });
    source.addEventListener("end", function () { state.textContent = "reconnecting"; });
    source.addEventListener("error", function () { state.textContent = "reconnecting"; state.removeAttribute("data-live"); });
  }
  var timer = null;
  function changed() {
    clearTimeout(timer);
    timer = setTimeout(function () {
      var q = query();
      history.replaceState(null, "", "/ui/" + (q ? "?" + q : ""));
      follow();
    }, 150);
  }
  form.addEventListener("input", changed);
  form.addEventListener("change", changed);
  form.addEventListener("submit", function (event) { event.preventDefault(); });  // Enter filters as typing does
  more.addEventListener("click", function () {
    fetch(data.api + "?" + query({ before: String(next) }), { credentials: "same-origin" })
      .then(function (r) { return r.json(); })
      .then(function (page) { next = page.next_before; show(page, true); });
  });
  setInterval(function () {
    document.querySelectorAll("#rows [data-at]").forEach(function (el) { el.textContent = ago(el.getAttribute("data-at")); });
  }, 10000);
  show(data.page, false);
  follow();
})();

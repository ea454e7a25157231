(function () {
  "use strict";
  var live = JSON.parse(document.getElementById("live-data").textContent);
  var key = "caseboard-scroll:" + location.pathname;
  var kept = sessionStorage.getItem(key);
  if (kept !== null) { sessionStorage.removeItem(key); window.scrollTo(0, Number(kept)); }
  var note = null;
  var source = new EventSource(live.events + "?after=" + live.head);
  source.addEventListener("commit", function (event) {
    var version = Number(event.lastEventId);
    if (live.at_head) {
      source.close();
      sessionStorage.setItem(key, String(window.scrollY));
      location.replace(location.pathname + location.hash);
      return;
    }
    if (!note) {
      note = document.createElement("p");
      note.className = "live-note";
      note.id = "live-note";
      document.querySelector("header").appendChild(note);
    }
    note.textContent = "";
    note.appendChild(document.createTextNode("Version " + version + " has been committed since. "));
    var link = document.createElement("a");
    link.href = location.pathname;
    link.textContent = "Show the head";
    note.appendChild(link);
  });
})();

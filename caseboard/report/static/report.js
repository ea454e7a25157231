(function () {
  "use strict";
  var COLORS = {
    current: "#2e9d4f", accepted: "#1b6e35", supported: "#2e9d4f", confirmed: "#1b6e35",
    requires_revalidation: "#d0473a", challenged: "#e08a1e", refuted: "#b03a2e", proposed: "#8895a7",
    revised: "#8895a7", withdrawn: "#5b6570", verified: "#5b8bd6", unverified: "#d4a72c",
    late: "#8a6fc7", stale: "#999999", awaiting_result: "#a0a8b4", claimed: "#6c7bd0"
  };
  var SHAPES = { observation: "ellipse", hypothesis: "round-rectangle", proposal: "diamond", work: "hexagon" };
  var COLUMNS = ["observation", "hypothesis", "proposal", "work"];
  var GAP_X = 48, GAP_Y = 14;
  var data = JSON.parse(document.getElementById("graph-data").textContent);
  var elements = [];
  data.nodes.forEach(function (n) {
    elements.push({ group: "nodes", data: { id: n.id, label: n.label, kind: n.kind, status: n.status,
      color: COLORS[n.status] || "#8895a7", shape: SHAPES[n.kind] || "ellipse" } });
  });
  data.edges.forEach(function (e) {
    elements.push({ group: "edges", data: { id: e.id, source: e.source, target: e.target, relation: e.relation } });
  });
  var container = document.getElementById("cy");
  var cy = window.cytoscape({
    container: container,
    elements: elements,
    style: [
      { selector: "node", style: { "background-color": "data(color)", shape: "data(shape)", label: "data(label)",
        "font-size": 11, "text-wrap": "ellipsis", "text-max-width": 200, "text-halign": "center",
        "text-valign": "top", "text-margin-y": -4, "text-background-color": "#ffffff",
        "text-background-opacity": 0.85, "text-background-padding": 1, width: 22, height: 22 } },
      { selector: "node[kind = 'hypothesis']", style: { width: 34, height: 24 } },
      { selector: "edge", style: { width: 2, "curve-style": "bezier", "target-arrow-shape": "triangle", opacity: 0.8 } },
      { selector: "edge[relation = 'supports']", style: { "line-color": "#2e9d4f", "target-arrow-color": "#2e9d4f" } },
      { selector: "edge[relation = 'challenges']", style: { "line-color": "#d0473a", "target-arrow-color": "#d0473a",
        "line-style": "dashed", "line-dash-pattern": [8, 4], width: 4, opacity: 1, "z-index": 10,
        "target-arrow-shape": "tee", "arrow-scale": 1.4 } },
      { selector: "edge[relation = 'depends_on']", style: { "line-color": "#8895a7", "target-arrow-color": "#8895a7",
        "line-style": "dotted", width: 1.5 } }
    ],
    layout: { name: "preset" },
    userZoomingEnabled: true,
    minZoom: 0.2,
    maxZoom: 3
  });

  // Columns by kind (evidence, then what it bears on, then what rests on that), one node per row, each label
  // above its node: a column is as wide as its widest label and a row as tall as the tallest node with its
  // label, so no two labels can meet.
  function layout() {
    var columns = COLUMNS.map(function () { return []; });
    var rank = {};
    cy.nodes("[kind = 'hypothesis']").forEach(function (n, i) { rank[n.id()] = i; });
    cy.nodes().forEach(function (n) {
      var at = COLUMNS.indexOf(n.data("kind"));
      columns[at < 0 ? 0 : at].push(n);
    });
    function near(n) {
      var best = 1e9;
      n.connectedEdges().forEach(function (e) {
        var other = e.source().id() === n.id() ? e.target() : e.source();
        if (rank[other.id()] !== undefined) { best = Math.min(best, rank[other.id()]); }
      });
      return best;
    }
    columns[0].sort(function (a, b) { return near(a) - near(b); });
    columns[2].sort(function (a, b) { return near(a) - near(b); });
    var used = columns.filter(function (c) { return c.length; });
    var rowH = 0;
    cy.nodes().forEach(function (n) {
      rowH = Math.max(rowH, n.boundingBox({ includeLabels: true, includeEdges: false }).h);
    });
    rowH += GAP_Y;
    var rows = Math.max.apply(null, used.map(function (c) { return c.length; }).concat([1]));
    var x = 0;
    used.forEach(function (column) {
      var width = 0;
      column.forEach(function (n) {
        var box = n.boundingBox({ includeLabels: true, includeEdges: false });
        width = Math.max(width, box.w);
      });
      var top = (rows - column.length) * rowH / 2;
      column.forEach(function (n, i) { n.position({ x: x + width / 2, y: top + i * rowH }); });
      x += width + GAP_X;
    });
    container.style.height = Math.max(220, Math.min(620, rows * rowH + 60)) + "px";
    cy.resize();
    cy.fit(undefined, 16);
  }
  layout();
  window.caseboardGraph = cy;
  container.setAttribute("data-nodes", String(cy.nodes().length));
  container.setAttribute("data-edges", String(cy.edges().length));
  container.setAttribute("data-ready", "1");

  var slider = document.getElementById("version-slider");
  if (slider) {
    var shown = document.getElementById("version-shown");
    slider.addEventListener("input", function () { shown.textContent = slider.value; });
    slider.addEventListener("change", function () { slider.form.submit(); });
  }
})();

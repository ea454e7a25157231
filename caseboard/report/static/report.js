(function () {
  "use strict";
  var COLORS = {
    current: "#2e9d4f", accepted: "#1b6e35", supported: "#2e9d4f", confirmed: "#1b6e35",
    requires_revalidation: "#d0473a", challenged: "#e08a1e", refuted: "#b03a2e", proposed: "#8895a7",
    revised: "#8895a7", withdrawn: "#5b6570", verified: "#5b8bd6", unverified: "#d4a72c",
    late: "#8a6fc7", stale: "#999999", awaiting_result: "#a0a8b4", claimed: "#6c7bd0"
  };
  var SHAPES = { observation: "ellipse", hypothesis: "round-rectangle", proposal: "diamond", work: "hexagon" };
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
        "font-size": 10, "text-wrap": "wrap", "text-max-width": 140, "text-valign": "bottom", "text-margin-y": 4,
        width: 28, height: 28 } },
      { selector: "node[kind = 'hypothesis']", style: { width: 44, height: 30 } },
      { selector: "edge", style: { width: 2, "curve-style": "bezier", "target-arrow-shape": "triangle",
        label: "data(relation)", "font-size": 9, "text-rotation": "autorotate", "text-background-color": "#fff",
        "text-background-opacity": 0.8 } },
      { selector: "edge[relation = 'supports']", style: { "line-color": "#2e9d4f", "target-arrow-color": "#2e9d4f" } },
      { selector: "edge[relation = 'challenges']", style: { "line-color": "#d0473a", "target-arrow-color": "#d0473a",
        "line-style": "dashed", width: 3 } },
      { selector: "edge[relation = 'depends_on']", style: { "line-color": "#5b6570", "target-arrow-color": "#5b6570" } }
    ],
    layout: { name: "breadthfirst", directed: true, spacingFactor: 1.1, padding: 20 },
    userZoomingEnabled: true
  });
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

// Draws the index picture embedded in the page (script#qbeast-data) with no network access.
// Each revision is an icicle: one row per depth, each cube as wide as the rows of its subtree.
// Below the depth where the drawing budget runs out, a subtree is one grey strip (an aggregate)
// that a click expands; a click on a drawn cube shows its facts and folds or unfolds it.
// The address may ask for subtrees to be open: #expand=all, or #expand=<revision>:<cube>,...
// Drawn elements carry data attributes (data-cube, data-selected, data-aggregate, data-cubes)
// so that what is on the page can be counted from the DOM.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("qbeast-data").textContent);
  var NS = "http://www.w3.org/2000/svg";
  var WIDTH = 1000, ROW = 26, STRIP = 12, EXPAND_BUDGET = 500, FILE_ROWS = 200;
  var colourBy = "weight";
  var trees = [];

  function el(tag, attrs, parent, text) {
    var node = tag === "svg" || tag === "rect" || tag === "text" || tag === "title" || tag === "g"
      ? document.createElementNS(NS, tag) : document.createElement(tag);
    for (var key in attrs) { if (attrs[key] !== undefined) node.setAttribute(key, attrs[key]); }
    if (text !== undefined) node.textContent = text;
    if (parent) parent.appendChild(node);
    return node;
  }

  function bytes(n) {
    if (n === null || n === undefined) return "unknown";
    var units = ["B", "KiB", "MiB", "GiB", "TiB"], v = n, i = 0;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return i === 0 ? n + " B" : v.toFixed(1) + " " + units[i];
  }

  function count(n) { return n === null || n === undefined ? "unknown" : String(n); }

  function share(part, whole) {
    return part === null || !whole ? "" : " (" + (100 * part / whole).toFixed(1) + "%)";
  }

  function prepare(rev) {
    var nodes = rev.cubes.map(function (c, i) {
      return { i: i, id: c[0], depth: c[1], parent: c[2], rows: c[3], bytes: c[4], weight: c[5],
               blocks: c[6], files: c[7], size: Math.max(c[8], 1), selected: c[9] === 1,
               present: c[10] === 1, children: [], desc: 0, selDesc: 0, open: false };
    });
    var roots = [], perDepth = {};
    nodes.forEach(function (n) {
      if (n.parent >= 0) nodes[n.parent].children.push(n); else roots.push(n);
      if (n.present) perDepth[n.depth] = (perDepth[n.depth] || 0) + 1;
    });
    for (var k = nodes.length - 1; k >= 0; k--) {  // pre-order reversed: children first
      var n = nodes[k];
      if (n.parent >= 0) {
        var p = nodes[n.parent];
        p.desc += n.desc + (n.present ? 1 : 0);
        p.selDesc += n.selDesc + (n.selected ? 1 : 0);
      }
    }
    // open every level whose cubes fit in the drawing budget; deeper ones start aggregated
    var drawn = 0, openDepth = -1, depths = Object.keys(perDepth).map(Number).sort(function (a, b) { return a - b; });
    for (var d = 0; d < depths.length; d++) {
      drawn += perDepth[depths[d]];
      if (drawn > data.budget && d > 0) break;
      openDepth = depths[d];
    }
    nodes.forEach(function (n) { n.open = n.depth < openDepth; });
    return { rev: rev, nodes: nodes, roots: roots };
  }

  function colour(n) {
    if (!n.present) return "none";
    if (colourBy === "file") {
      var f = n.files.length ? n.files[0] : 0;
      return "hsl(" + Math.round((f * 137.508) % 360) + ",60%,58%)";
    }
    return "hsl(" + Math.round(220 - 220 * Math.min(n.weight, 1)) + ",65%,55%)";
  }

  function render(tree) {
    var svg = tree.svg;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    var deepest = 0;
    function place(n, x0, x1) {
      var w = Math.max(x1 - x0, 0.5), y = n.depth * ROW;
      deepest = Math.max(deepest, n.depth);
      var attrs = { x: x0.toFixed(2), y: y, width: w.toFixed(2), height: ROW - 2,
                    "class": n.present ? "cube" : "gap", fill: colour(n) };
      if (n.present) {
        attrs["data-cube"] = tree.rev.id + ":" + n.id;
        attrs["data-selected"] = n.selected ? "true" : "false";
      }
      if (n.present && n.selected && w < 8) attrs.style = "stroke-width:" + Math.max(w / 4, 0.3).toFixed(2);  // thin cubes stay visible
      var rect = el("rect", attrs, svg);
      el("title", {}, rect, (n.present ? "cube '" + n.id + "'" : "no cube (inner, empty) '" + n.id + "'") +
         " depth " + n.depth + ", " + n.rows + " rows");
      rect.addEventListener("click", function () { show(tree, n); if (n.children.length) { n.open = !n.open; render(tree); } });
      if (w > 46 && n.present) el("text", { x: (x0 + 3).toFixed(2), y: y + 15, "class": "label" }, svg, String(n.rows));
      if (n.open && n.children.length) {
        var total = 0, x = x0;
        n.children.forEach(function (c) { total += c.size; });
        n.children.forEach(function (c) { var cw = (x1 - x0) * c.size / total; place(c, x, x + cw); x += cw; });
      } else if (n.desc > 0) {
        var agg = el("rect", { x: x0.toFixed(2), y: y + ROW, width: w.toFixed(2), height: STRIP,
                               "class": "aggregate" + (n.selDesc ? " some-selected" : ""),
                               "data-aggregate": tree.rev.id + ":" + n.id, "data-cubes": n.desc,
                               "data-selected-cubes": n.selDesc }, svg);
        el("title", {}, agg, n.desc + " cubes below '" + n.id + "' (" + n.selDesc + " read): click to expand");
        agg.addEventListener("click", function () { expand(n); render(tree); });
        deepest = Math.max(deepest, n.depth + 1);
      }
    }
    var x = 0, total = 0;
    tree.roots.forEach(function (r) { total += r.size; });
    tree.roots.forEach(function (r) { var w = WIDTH * r.size / total; place(r, x, x + w); x += w; });
    svg.setAttribute("viewBox", "0 0 " + WIDTH + " " + ((deepest + 1) * ROW + STRIP + 2));
    summarize();
  }

  function expand(n) {
    n.open = true;
    var frontier = n.children, added = n.children.length;
    while (frontier.length) {
      var next = [];
      frontier.forEach(function (c) { next = next.concat(c.children); });
      if (added + next.length > EXPAND_BUDGET) break;
      frontier.forEach(function (c) { c.open = true; });
      added += next.length;
      frontier = next;
    }
  }

  function show(tree, n) {
    var names = n.files.map(function (f) { return tree.rev.files[f][0]; });
    tree.details.textContent = "revision " + tree.rev.id + ", cube '" + n.id + "', depth " + n.depth +
      (n.present ? ", " + n.rows + " rows, ~" + bytes(n.bytes) + ", max weight " + n.weight.toFixed(4) +
       ", " + n.blocks + " blocks in " + names.length + " files" + (n.selected ? ", read" : "") +
       (names.length ? ": " + names.slice(0, 5).join(", ") + (names.length > 5 ? ", ..." : "") : "")
       : ", no block (an empty inner cube)") + "; " + n.desc + " cubes below";
  }

  function summarize() {
    var s = document.getElementById("summary");
    var aggregated = 0, aggregatedSelected = 0;
    document.querySelectorAll("rect[data-aggregate]").forEach(function (a) {
      aggregated += Number(a.getAttribute("data-cubes"));
      aggregatedSelected += Number(a.getAttribute("data-selected-cubes"));
    });
    s.setAttribute("data-cubes-drawn", document.querySelectorAll("rect[data-cube]").length);
    s.setAttribute("data-cubes-selected-drawn", document.querySelectorAll('rect[data-cube][data-selected="true"]').length);
    s.setAttribute("data-cubes-aggregated", aggregated);
    s.setAttribute("data-cubes-selected-aggregated", aggregatedSelected);
    s.setAttribute("data-rendered", "true");
  }

  function table(parent, headers, rows, attrs) {
    var t = el("table", {}, parent), head = el("tr", {}, t);
    headers.forEach(function (h) { el("th", {}, head, h); });
    rows.forEach(function (row, i) {
      var tr = el("tr", attrs ? attrs(i) : {}, t);
      row.forEach(function (cell) {
        if (cell instanceof Node) { el("td", {}, tr).appendChild(cell); }
        else { el("td", typeof cell === "string" && cell.indexOf("/") >= 0 ? { "class": "path", title: cell } : {}, tr, String(cell)); }
      });
    });
    return t;
  }

  function band(lo, hi) {
    var box = el("div", { "class": "band", title: "weights " + lo.toFixed(4) + " to " + hi.toFixed(4) });
    var bar = el("span", {}, box);
    bar.style.left = (100 * lo).toFixed(2) + "%";
    bar.style.width = Math.max(100 * (hi - lo), 0.5).toFixed(2) + "%";
    return box;
  }

  function fileRows(parent, rev) {
    var order = rev.files.map(function (f, i) { return i; });
    order.sort(function (a, b) { return rev.files[b][6] - rev.files[a][6] || (rev.files[a][0] < rev.files[b][0] ? -1 : 1); });
    function draw(limit) {
      var old = parent.querySelector("table.files, button.more");
      while (old) { parent.removeChild(old); old = parent.querySelector("table.files, button.more"); }
      var shown = order.slice(0, limit);
      var t = table(parent, ["file", "bytes", "rows", "blocks", "weight band", "read"],
        shown.map(function (i) {
          var f = rev.files[i];
          return [f[0], f[1], count(f[2]), f[3], band(f[4], f[5]), f[6] ? bytes(f[7]) : ""];
        }),
        function (k) { var f = rev.files[shown[k]]; return { "data-file": f[0], "data-selected": f[6] ? "true" : "false" }; });
      t.setAttribute("class", "files");
      if (order.length > limit) {
        var more = el("button", { "class": "more" }, parent, "show all " + order.length + " files");
        more.addEventListener("click", function () { draw(order.length); });
      }
    }
    draw(FILE_ROWS);
  }

  function header() {
    var root = document.getElementById("page");
    el("h1", {}, root, "Qbeast index of " + data.path);
    el("p", { "class": "facts" }, root, "version " + data.version + ", " + count(data.rows) + " rows, " +
       bytes(data.bytes) + " in " + data.files + " files, " + data.revisions.length + " live revisions");
    if (data.selection) {
      var s = data.selection;
      var box = el("div", { "class": "read", id: "read", "data-files-read": s.files_read,
                            "data-rows-read": s.rows_read, "data-bytes-read": s.bytes_read }, root);
      el("strong", {}, box, "Read (" + (s.fraction !== null ? "sample " + s.fraction : "no sample") +
         (s.filter ? ", filter " + s.filter : "") + "): files " + s.files_read + " of " + s.total_files +
         ", rows " + count(s.rows_read) + " of " + count(s.total_rows) + share(s.rows_read, s.total_rows) +
         ", bytes " + bytes(s.bytes_read) + " of " + bytes(s.total_bytes) + share(s.bytes_read, s.total_bytes));
      el("pre", {}, box, s.lines.join("\n"));
    }
    var controls = el("div", { "class": "controls" }, root);
    el("span", {}, controls, "colour cubes by ");
    var pick = el("select", { id: "colour-by" }, controls);
    el("option", { value: "weight" }, pick, "max weight (blue: low threshold, red: leaf)");
    el("option", { value: "file" }, pick, "file (first file of the cube)");
    pick.addEventListener("change", function () { colourBy = pick.value; trees.forEach(render); });
    el("span", { "class": "legend" }, controls, "  width: rows in the subtree; black outline: read; grey strip: " +
       "cubes not drawn, click to expand; click a cube to fold or unfold it");
    return el("div", { "class": "revisions" }, root);
  }

  var box = header();
  el("div", { id: "summary", "data-cubes-total": data.cubes_total,
              "data-cubes-selected-total": data.selection ? data.selection.cubes : 0 }, document.getElementById("page"));
  data.revisions.forEach(function (rev) {
    var panel = el("div", { "class": "revision", "data-revision": rev.id }, box);
    el("h2", {}, panel, "revision " + rev.id + (rev.staging ? ": files without an index (staging or plain Delta)" : "") +
       (rev.columns.length ? ": " + rev.columns.join(", ") : ""));
    el("p", { "class": "facts" }, panel, (rev.staging ? "" : "cube size " + rev.cube_size + ", ") + rev.rows + " rows, " +
       bytes(rev.bytes) + ", " + rev.files.length + " files" + (rev.staging ? ", no index: only their min/max statistics prune them" :
       ", " + rev.cubes.filter(function (c) { return c[10] === 1; }).length + " cubes") +
       (rev.space.length ? "; space: " + rev.space.join("; ") : ""));
    if (rev.cubes.length) {
      var tree = prepare(rev);
      tree.svg = el("svg", { xmlns: NS, "data-tree": rev.id }, panel);
      tree.details = el("div", { "class": "details" }, panel);
      trees.push(tree);
      render(tree);
    }
    if (rev.depths.length) {
      table(panel, ["depth", "cubes", "blocks", "files", "rows"], rev.depths,
            function (i) { return { "data-depth": rev.depths[i][0] }; });
    }
    fileRows(panel, rev);
  });
  // #expand=all or #expand=<revision>:<cube>,... opens those subtrees as a click would (links
  // to a part of a large tree)
  var asked = /(?:^#|&)expand=([^&]*)/.exec(window.location.hash);
  if (asked) {
    var wanted = decodeURIComponent(asked[1]).split(",");
    trees.forEach(function (tree) {
      tree.nodes.forEach(function (n) {
        if (wanted[0] === "all") { n.open = true; return; }
        if (wanted.indexOf(tree.rev.id + ":" + n.id) < 0) return;
        for (var up = n.parent; up >= 0; up = tree.nodes[up].parent) tree.nodes[up].open = true;
        expand(n);
      });
      render(tree);
    });
  }
  summarize();
})();

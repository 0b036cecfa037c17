// The aam-eval HTML report. Every string shown comes from the page's JSON blocks and is put
// into the page as a text node or an attribute value: never parsed as markup.
(function () {
  "use strict";
  var SVG = "http://www.w3.org/2000/svg";
  var ATTRS = /^(id|title|role|tabindex|type|placeholder|open|data-[a-z-]+|aria-[a-z]+)$/;
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var details = {};

  // --- building blocks ------------------------------------------------------------------------

  function h(tag, props) {
    var node = document.createElement(tag);
    setProps(node, props);
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }

  function setProps(node, props) {
    if (!props) return;
    Object.keys(props).forEach(function (k) {
      var v = props[k];
      if (v === null || v === undefined || v === false) return;
      if (k === "class") node.setAttribute("class", v);
      else if (k === "text") node.textContent = String(v);
      else if (k.slice(0, 2) === "on") node.addEventListener(k.slice(2), v);
      else if (ATTRS.test(k)) node.setAttribute(k, String(v));
      else throw new Error("attribute not allowed: " + k);
    });
  }

  function add(node, kid) {
    if (kid === null || kid === undefined || kid === false) return;
    if (Array.isArray(kid)) { kid.forEach(function (k) { add(node, k); }); return; }
    node.append(kid instanceof Node ? kid : document.createTextNode(String(kid)));
  }

  function svg(tag, attrs) {
    var node = document.createElementNS(SVG, tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    for (var i = 2; i < arguments.length; i++) add(node, arguments[i]);
    return node;
  }

  function pct(rate) { return rate === null || rate === undefined ? "–" : (rate * 100).toFixed(1) + "%"; }
  function money(v) { return v === null || v === undefined ? "–" : "$" + Number(v).toFixed(v < 1 ? 4 : 2); }
  function secs(v) {
    if (v === null || v === undefined) return "–";
    return v >= 60 ? Math.floor(v / 60) + " min " + Math.round(v % 60) + " s" : Number(v).toFixed(v < 10 ? 2 : 1) + " s";
  }
  function pp(v) { return v === null || v === undefined ? "" : (v > 0 ? "+" : v < 0 ? "−" : "±") + Math.abs(v).toFixed(1) + " pp"; }
  function badge(verdict) {
    var v = verdict || "–";
    return h("span", {class: "badge v-" + String(v).toLowerCase().replace(/[^a-z]/g, "")}, v);
  }
  function pre(text, cls) { return h("pre", {class: cls || "text"}, text === null || text === undefined ? "" : String(text)); }
  function section(title, id) { return h("section", {class: "block", id: id}, h("h3", null, title)); }
  function kv(pairs) {
    var dl = h("dl", {class: "kv"});
    pairs.forEach(function (p) { if (p[1] !== null && p[1] !== undefined && p[1] !== "") add(dl, [h("dt", null, p[0]), h("dd", null, p[1])]); });
    return dl;
  }

  // --- overview -------------------------------------------------------------------------------

  function overview() {
    var head = data.head, s = head.summary, hl = data.headline;
    var name = (head.package || "package") + (head.version ? "@" + head.version : "");
    var box = h("header", {class: "overview"},
      h("h1", null, name, h("span", {class: "muted"}, " · eval report")),
      h("p", {class: "meta", id: "run-meta"},
        [head.id, head.timestamp, head.engine + (head.runtime_version ? " " + head.runtime_version : ""),
         "model " + (head.model || "–"), "judge " + (head.judge || "–"), "mode " + (head.mode || "–")].join(" · ")));
    if (head.interrupted) add(box, h("p", {class: "warn"}, "This run was interrupted: the report is partial."));
    if (s.score !== undefined && s.score !== null) {  // a claude plugin eval suite: that runner's numbers first
      var two = function (x) { return Number(x).toFixed(2); };
      add(box, h("div", {class: "headline", id: "plugin-eval-headline"},
        h("span", {class: "rate"}, "score " + two(s.score)),
        h("span", {class: "muted"}, "claude plugin eval · pass rate " + pct(s.score_pass_rate) +
          (s.mean_delta !== undefined && s.mean_delta !== null ? " · mean Δ " + (s.mean_delta > 0 ? "+" : "") + two(s.mean_delta) +
            " (with the plugin − without)" : ""))));
    }
    var rate = h("div", {class: "headline"});
    if (data.base && hl.compared) {
      add(rate, [h("span", {class: "rate", id: "headline-rate"},
        h("span", {id: "headline-base"}, pct(hl.base_compared)), " → ", h("span", {id: "headline-head"}, pct(hl.head_compared))),
        h("span", {class: "delta " + (hl.delta_pp < 0 ? "down" : hl.delta_pp > 0 ? "up" : ""), id: "headline-delta"}, pp(hl.delta_pp)),
        h("span", {class: "muted", id: "headline-over"}, "over " + hl.compared + " case" + (hl.compared === 1 ? "" : "s") +
          " graded on both sides" + (hl.not_graded ? " · " + hl.not_graded + " not graded" : ""))]);
    } else if (hl.graded) {
      add(rate, [h("span", {class: "rate", id: "headline-rate"}, h("span", {id: "headline-head"}, pct(hl.head_rate))),
        h("span", {class: "muted", id: "headline-over"}, "graded over " + hl.graded + " of " + hl.total + " cases" +
          (hl.not_graded ? " · " + hl.not_graded + " not graded" : "") + (data.base ? " · no case graded on both sides" : ""))]);
    } else {
      add(rate, h("span", {class: "rate", id: "headline-rate"}, "no case was graded"));
    }
    add(box, rate);
    var counts = [["passed", s.passed], ["failed", s.failed], ["errored", s.errored], ["skipped", s.skipped],
      ["flaky", s.flaky], ["not replayable", s.not_replayable], ["diverged", s.diverged || 0], ["total", s.total]];
    add(box, h("ul", {class: "counts"}, counts.map(function (c) {
      return h("li", {id: "count-" + c[0].replace(/ /g, "-")}, h("b", null, String(c[1] || 0)), " " + c[0]);
    })));
    add(box, kv([["cost recorded", money(s.cost_usd)], ["spent by this run", money(s.run_cost_usd)],
      ["duration", secs(head.duration_seconds)],
      ["baseline pass rate", s.baseline_pass_rate !== undefined ? pct(s.baseline_pass_rate) + " (lift " + pp(s.lift_pp) + ")" : null],
      ["trigger precision / recall", s.trigger_cases ? pct(s.trigger_precision) + " / " + pct(s.trigger_recall) : null],
      ["base run", data.base ? data.base.id + " · " + data.base.timestamp : null],
      ["removed since base", data.removed && data.removed.length ? data.removed.join(", ") : null]]));
    (data.warnings || []).forEach(function (w) { add(box, h("p", {class: "warn"}, w)); });
    if (s.drafted_unreviewed) {
      add(box, h("p", {class: "warn", id: "drafted-unreviewed"}, plural(s.drafted_unreviewed, "case") +
        " drafted by aam-eval init " + (s.drafted_unreviewed === 1 ? "has" : "have") + " not been reviewed by a person yet: read them before trusting their numbers."));
    }
    if (data.labels) {
      (data.labels.agreement || []).forEach(function (a) {
        add(box, h("p", {class: "agreement", "data-judge": a.judge_model}, "Judge " + a.judge_model + " agrees with people on " + pct(a.agreement) +
          " of " + a.labels + " labelled output" + (a.labels === 1 ? "" : "s") + ", κ " + (a.kappa === undefined ? "undefined" : a.kappa.toFixed(2)) +
          (a.true_pass_rate !== undefined ? " · true-pass " + pct(a.true_pass_rate) : "") +
          (a.true_fail_rate !== undefined ? " · true-fail " + pct(a.true_fail_rate) : "") + " · judge-gate " + data.labels.gate));
      });
      if (data.labels.stale && data.labels.stale.length) add(box, h("p", {class: "muted"}, "Stale labels: " + data.labels.stale.join("; ")));
    }
    if (s.max_usd !== undefined) {
      add(box, h("p", {class: s.over_budget ? "warn" : "muted", id: "budget"}, "Spent " + money(s.spent_usd || 0) +
        " of max-usd " + money(s.max_usd) + (s.over_budget ? " · " + s.over_budget + " case" +
        (s.over_budget === 1 ? "" : "s") + " not graded (budget)" : "")));
    }
    return box;
  }

  function volatile() {
    if (!data.volatile || !data.volatile.length) return null;
    return h("details", {class: "volatile", id: "volatile"},
      h("summary", null, "Ignored on re-execution: " + data.volatile.length + " volatile value" +
        (data.volatile.length === 1 ? "" : "s") + " learnt by the recordings"),
      h("table", {class: "matrix"}, h("thead", null, h("tr", null, h("th", null, "CLI"), h("th", null, "Value"),
        h("th", null, "Learnt from"))), h("tbody", null, data.volatile.map(function (m) {
          return h("tr", null, h("td", null, m.cli), h("td", null, m.mask), h("td", null, m.case || ""));
        }))));
  }

  function matrix() {
    if (!data.pairs || !data.pairs.length) return null;
    var engines = [], models = [], cell = {};
    data.pairs.forEach(function (p) {
      if (engines.indexOf(p.engine) < 0) engines.push(p.engine);
      var m = p.model || "–";
      if (models.indexOf(m) < 0) models.push(m);
      cell[p.engine + "\u0000" + m] = p;
    });
    var table = h("table", {class: "matrix", id: "matrix"},
      h("thead", null, h("tr", null, h("th", null, "engine \\ model"), models.map(function (m) { return h("th", null, m); }))),
      h("tbody", null, engines.map(function (e) {
        return h("tr", null, h("th", null, e), models.map(function (m) {
          var p = cell[e + "\u0000" + m];
          return h("td", null, p ? [h("b", null, pct(p.rate)), " ", h("span", {class: "muted"}, (p.passed || 0) + "/" + (p.total || 0))] : "–");
        }));
      })));
    return h("section", {class: "block"}, h("h2", null, "Engines and models"), table);
  }

  function plugins() {
    if (!data.plugins || data.plugins.length < 2) return null;
    var table = h("table", {class: "matrix", id: "plugins"},
      h("thead", null, h("tr", null, ["plugin", "layout", "pass rate", "passed", "failed", "errored", "warnings"].map(function (t) {
        return h("th", null, t);
      }))),
      h("tbody", null, data.plugins.map(function (p) {
        var s = p.summary || {};
        return h("tr", null, [h("th", null, p.name), h("td", null, p.layout), h("td", null, h("b", null, pct(s.pass_rate))),
          h("td", null, String(s.passed || 0)), h("td", null, String(s.failed || 0)), h("td", null, String(s.errored || 0)),
          h("td", null, (p.warnings || []).length ? h("details", null, h("summary", null, String(p.warnings.length)),
            h("ul", null, p.warnings.map(function (w) { return h("li", null, w); }))) : "0")]);
      })));
    return h("section", {class: "block"}, h("h2", null, "Plugins"), table);
  }

  // --- routing --------------------------------------------------------------------------------

  function whole(rate) { return rate === null || rate === undefined ? "–" : Math.round(rate * 100) + "%"; }
  function interval(ci) { return ci ? " (" + Math.round(ci[0] * 100) + "–" + Math.round(ci[1] * 100) + "%)" : ""; }
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  var trig = {filter: "all", query: "", sort: null, desc: false, cell: null};
  var TRIGGER_FILTERS = [
    ["all", "All", function () { return true; }],
    ["misrouted", "Misrouted", function (c) { return c.verdict !== "ERROR" && c.trigger.routed !== c.trigger.expected; }],
    ["canary", "Canaries", function (c) { return c.trigger.canary; }],
    ["unreviewed", "Drafted, not reviewed", function (c) { return c.trigger.draft === "unreviewed"; }]
  ].concat(data.base ? [["moved", "Moved since base", function (c) {
    return c.trigger.base_routed !== null && c.trigger.base_routed !== undefined && c.trigger.base_routed !== c.trigger.routed;
  }]] : []);
  var TRIGGER_COLUMNS, BASE_TRIGGER_COLUMNS = [
    ["prompt", "Prompt", function (c) { return c.trigger.prompt || c.name; }],
    ["expected", "Belongs to", function (c) { return c.trigger.expected; }],
    ["routed", "Fired", function (c) { return c.trigger.routed || ""; }],
    ["rate", "Fire rate", function (c) { return c.trigger.rate === null || c.trigger.rate === undefined ? -1 : c.trigger.rate; }],
    ["verdict", "Verdict", function (c) { return c.verdict; }]
  ];
  var trigRows, trigBody, trigCount, trigBar, trigCell;
  var SUSPECT = "a harness problem (above): these numbers measure the harness, not the skill's description";

  // A cell's shade, 0 (as it should be) to 4 (all of its row off): render/routing.py's `band`.
  function band(far) { return far <= 0 ? 0 : far <= 0.25 ? 1 : far <= 0.5 ? 2 : far < 1 ? 3 : 4; }

  // The matrix of one engine and model: rows the skill a prompt belongs to, columns the skill it
  // fired; each skill's recall on its row and precision under its column; harness problems first.
  function routingMatrix(r, k, several) {
    var box = h("div", {class: "routing-pair", "data-pair": k});
    if (several) add(box, h("h3", null, r.engine + (r.model ? " · " + r.model : "")));
    var names = Object.keys(r.skills || {});
    names.forEach(function (name) {
      var sk = r.skills[name];
      if (sk.harness) add(box, h("p", {class: "warn harness", "data-skill": name}, h("b", null, "Harness problem, " + name + ": "), sk.harness));
    });
    var labels = r.labels || [];
    var thead = h("thead", null, h("tr", null, h("th", {class: "corner"}, "belongs to ↓ · fired →"),
      labels.map(function (col) { return h("th", {class: "col", "data-col": col}, col); }), h("th", null, "recall (95% CI)")));
    var tbody = h("tbody", null, labels.map(function (row) {
      var sk = r.skills[row], cells = r.matrix[row] || {};
      var total = labels.reduce(function (sum, col) { return sum + (cells[col] || 0); }, 0);
      return h("tr", {"data-row": row}, h("th", {class: "row"}, row), labels.map(function (col) {
        var n = cells[col] || 0, diag = row === col;
        var what = plural(n, "prompt") + " that belong" + (n === 1 ? "s" : "") + " to " + row + (col === "none" ? " fired no skill" : " fired " + col);
        // Shaded by how far it is from what it should be: a diagonal cell by its recall, any
        // other by its leak (its share of the row); an empty cell off the diagonal is as it should be.
        var far = total ? (diag ? 1 - n / total : n / total) : null;
        var shade = far === null || (!diag && !n) ? "" : " d" + band(far);
        if (far !== null && (diag || n)) what += " (" + (diag ? "recall " : "leak ") + Math.round((diag ? 1 - far : far) * 100) + "% of " + total + ")";
        return h("td", {class: "cell" + (diag ? " diag" : n ? " off" : " zero") + shade, "data-row": row, "data-col": col,
          "data-distance": far === null ? null : String(Math.round(far * 1000) / 1000),
          title: n ? what + " (click to list them)" : what, tabindex: n ? "0" : null,
          onclick: n ? function () { showCell(k, row, col); } : null,
          onkeydown: n ? function (e) { if (e.key === "Enter") showCell(k, row, col); } : null}, String(n));
      }), h("td", {class: "recall" + (sk && sk.harness ? " suspect" : ""), "data-skill": row, title: sk && sk.harness ? SUSPECT : null}, sk ? [
        h("b", null, whole(sk.recall)), interval(sk.recall_ci), h("span", {class: "muted"}, " of " + sk.cases),
        sk.errored ? h("span", {class: "muted"}, " · " + sk.errored + " errored, not counted") : null] : "–"));
    }));
    var tfoot = h("tfoot", null, h("tr", null, h("th", null, "precision (95% CI)"), labels.map(function (col) {
      var sk = r.skills[col];
      return h("td", {class: "precision" + (sk && sk.harness ? " suspect" : ""), "data-skill": col, title: sk && sk.harness ? SUSPECT : null}, sk ? [
        h("b", null, whole(sk.precision)), interval(sk.precision_ci), h("span", {class: "muted"}, " of " + sk.fired + " fired")] : "–");
    }), h("td")));
    var runs = r.runs ? plural(r.runs, "run") + " per prompt; " : "";
    var rule = r.threshold !== undefined && r.threshold !== null ? "in at least " + Math.round(r.threshold * 100) + "% of its runs" : "in at least the threshold share of its runs";
    add(box, h("p", {class: "muted"}, runs + "a prompt fired a skill when the skill loaded " + rule +
      ". Each cell is shaded by how far it is from what it should be: green, as it should be; yellow, up to 25% off; orange, up to 50%; red, more. A diagonal cell by its recall (the share of its row that reached its skill), any other by its leak (the share of the row it took). Click a cell to list its prompts."));
    add(box, h("div", {class: "scroll"}, h("table", {class: "matrix confusion", id: "confusion-" + k}, thead, tbody, tfoot)));
    return box;
  }

  function routing() {
    var list = data.routing || [];
    trigRows = rows.filter(function (r) { return r.c.trigger; });
    if (!list.length && !trigRows.length) return null;
    var s = h("section", {class: "block routing", id: "routing"}, h("h2", null, "Routing"));
    list.forEach(function (r, k) { add(s, routingMatrix(r, k, list.length > 1)); });
    if (trigRows.length) add(s, triggerTable());
    return s;
  }

  // --- skill listings -------------------------------------------------------------------------

  var SHOWN = {"full": "in full", "truncated": "cut short", "name-only": "by name only", "left-out": "not listed"};

  // Each engine's skill listing as a bar against its budget (the CLI's own skills, the package's,
  // the neighbours'), each skill of the package with how it is shown; then the crowding sweep.
  function listings() {
    var list = data.listings || [], sweep = data.sweep;
    if (!list.length && !sweep) return null;
    var s = h("section", {class: "block listings", id: "listings"}, h("h2", null, "Skill listings"));
    add(s, h("p", {class: "muted"}, "What each CLI lists of the installed skills in every request, against its budget. " +
      "Past the budget a skill is cut short or listed by its name only, and rarely fires."));
    list.forEach(function (v) {
      var scale = Math.max(v.used || 0, v.budget || 0, 1), width = 640, x = 0;
      var bar = svg("svg", {class: "listing-bar", viewBox: "0 0 " + width + " 16", width: width, height: 16, role: "img",
        "aria-label": v.used.toLocaleString() + (v.budget ? " of " + v.budget.toLocaleString() : "") + " " + v.unit});
      [["cli", v.cli_size, v.engine + "'s own skills"], ["mine", v.package_size, "this package"],
       ["theirs", v.neighbors_size, "neighbours"]].forEach(function (p) {
        var w = width * (p[1] || 0) / scale;
        var rect = svg("rect", {class: "seg " + p[0], x: x.toFixed(2), y: 2, width: w.toFixed(2), height: 12});
        var tip = svg("title");
        tip.textContent = p[2] + ": " + (p[1] || 0).toLocaleString() + " " + v.unit;
        rect.appendChild(tip);
        bar.appendChild(rect);
        x += w;
      });
      if (v.budget) bar.appendChild(svg("rect", {class: "limit", x: (width * v.budget / scale - 1).toFixed(2), y: 0, width: 2, height: 16}));
      var size = v.used.toLocaleString() + (v.budget ? " of " + v.budget.toLocaleString() : "") + " " + v.unit +
        (v.budget ? "" : " (no budget)") + (v.neighbors ? " · " + plural(v.neighbors, "neighbour") + ", " + v.neighbors_name_only + " by name only" : "");
      var skills = Object.keys(v.skills || {}).map(function (name) {
        return h("li", {class: "shown-" + v.skills[name], "data-skill": name}, h("b", null, name), " " + SHOWN[v.skills[name]]);
      });
      add(s, h("div", {class: "listing", "data-engine": v.engine}, h("h3", null, v.engine + " " + v.cli + " · " + v.model),
        bar, h("p", {class: "muted"}, size), h("ul", {class: "listing-skills"}, skills)));
    });
    if (sweep) {
      var names = [];
      sweep.points.forEach(function (p) { Object.keys(p.skills).forEach(function (n) { if (names.indexOf(n) < 0) names.push(n); }); });
      var head = h("tr", null, h("th", null, "engine · model"), h("th", null, "neighbours"),
        names.map(function (n) { return h("th", null, n); }), h("th", null, "lost"));
      var body = sweep.points.map(function (p) {
        return h("tr", null, h("td", null, p.engine + " · " + p.model), h("td", null, String(p.size)),
          names.map(function (n) {
            var sk = p.skills[n];
            return h("td", {class: sk ? "shown-" + sk.shown : null}, sk ? [h("b", null, whole(sk.recall)), interval(sk.recall_ci),
              h("span", {class: "muted"}, " " + SHOWN[sk.shown])] : "–");
          }), h("td", null, (p.lost || []).join(", ")));
      });
      add(s, h("h3", null, "Crowding sweep (" + plural(sweep.pool, "neighbour") + " in the pool)"));
      add(s, h("div", {class: "scroll"}, h("table", {class: "matrix sweep", id: "sweep"}, h("thead", null, head), h("tbody", null, body))));
    }
    return s;
  }

  function showCell(k, row, col) {
    trig.cell = {pair: k, row: row, col: col};
    trig.filter = "all";
    redrawTriggers();
    document.getElementById("trigger-table").scrollIntoView({block: "nearest"});
  }

  function inCell(c) {
    var cell = trig.cell;
    if (!cell) return true;
    var pair = data.routing[cell.pair];
    if (data.routing.length > 1 && (c.engine !== pair.engine || (pair.model && c.model !== pair.model))) return false;
    return c.verdict !== "ERROR" && c.trigger.expected === cell.row && (c.trigger.routed || "none") === cell.col;
  }

  function firedCell(c) {
    var t = c.trigger, loaded = t.fired || [];
    if (c.verdict === "ERROR") return h("td", {class: "fired"}, "–", h("div", {class: "sub-line"}, "every run errored: not counted"));
    var same = t.routed === "none" ? loaded.length === 0 : loaded.length === 1 && loaded[0] === t.routed;
    return h("td", {class: "fired" + (c.verdict !== "ERROR" && t.routed !== t.expected ? " wrong" : "")},
      h("span", {class: "skill"}, t.routed || "–"),
      !same && t.fired ? h("div", {class: "sub-line loaded"}, loaded.length ? "session loaded " + loaded.join(" → ") : "session loaded no skill") : null,
      t.base_routed && t.base_routed !== t.routed ? h("div", {class: "sub-line moved"}, "on base: " + t.base_routed) : null);
  }

  function triggerRowOf(r) {
    if (r.ttr) return r.ttr;
    var c = r.c, t = c.trigger, target = (c.target || "").replace(/^skill:/, "");
    r.ttr = h("tr", {tabindex: "0", "data-case": r.i, onclick: function () { openCase(r.i, true); },
      onkeydown: function (e) { if (e.key === "Enter") openCase(r.i, true); }},
      h("td", {class: "prompt"},
        h("div", {class: "ptext", title: t.prompt || c.name}, t.prompt || c.name),
        h("div", {class: "sub-line"}, h("span", {class: "case-ref"}, c.name),
          t.prompt ? null : h("span", {class: "muted"}, " · prompt not recorded"),
          t.canary ? h("span", {class: "tag canary", title: "names its skill outright: if it does not fire, the harness is at fault"}, "canary") : null,
          t.draft === "unreviewed" ? h("span", {class: "tag draft", title: "drafted by aam-eval init; no person has reviewed it yet"}, "drafted, not reviewed") : null)),
      h("td", {class: "expected"}, t.expected),
      firedCell(c),
      h("td", {class: "num rate", title: "share of its runs in which " + (target || "its target") + " fired"},
        pct(t.rate), t.runs > 1 ? h("div", {class: "sub-line"}, "of " + t.runs + " runs") : null,
        target && target !== t.expected ? h("div", {class: "sub-line"}, "of " + target) : null),
      h("td", {class: "verdict"}, badge(c.verdict)),
      matrixRun ? h("td", null, c.engine + (c.model ? " · " + c.model : "")) : null);
    return r.ttr;
  }

  function redrawTriggers() {
    var test = TRIGGER_FILTERS.filter(function (f) { return f[0] === trig.filter; })[0][2];
    var q = trig.query.toLowerCase();
    var found = trigRows.filter(function (r) {
      var t = r.c.trigger;
      return test(r.c) && inCell(r.c) && (!q || [t.prompt, r.c.name, t.expected, t.routed].concat(t.fired || []).some(function (x) {
        return x && String(x).toLowerCase().indexOf(q) >= 0;
      }));
    });
    if (trig.sort) {
      var key = TRIGGER_COLUMNS.filter(function (col) { return col[0] === trig.sort; })[0][2];
      found.sort(function (a, b) {
        var x = key(a.c), y = key(b.c);
        var d = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
        return (trig.desc ? -d : d) || a.i - b.i;
      });
    }
    var frag = document.createDocumentFragment();
    found.forEach(function (r) { var tr = triggerRowOf(r); tr.classList.toggle("open", r.i === state.open); frag.append(tr); });
    trigBody.replaceChildren(frag);
    trigCount.textContent = found.length + " of " + plural(trigRows.length, "trigger prompt");
    var cell = trig.cell;
    trigCell.replaceChildren();
    if (cell) {
      var pair = data.routing[cell.pair];
      add(trigCell, [h("span", null, "Only the prompts that belong to " + cell.row + " and fired " + cell.col +
        (data.routing.length > 1 ? " on " + pair.engine + (pair.model ? " · " + pair.model : "") : "") + " "),
        h("button", {type: "button", onclick: function () { trig.cell = null; redrawTriggers(); }}, "show all")]);
    }
    Array.prototype.forEach.call(trigBar.children, function (b) {
      b.setAttribute("aria-pressed", String(!trig.cell && b.getAttribute("data-filter") === trig.filter));
    });
  }

  function triggerTable() {
    trigBar = h("div", {class: "filters", role: "group", id: "trigger-filters"}, TRIGGER_FILTERS.map(function (f) {
      var n = trigRows.filter(function (r) { return f[2](r.c); }).length;
      return h("button", {type: "button", "data-filter": f[0], onclick: function () { trig.filter = f[0]; trig.cell = null; redrawTriggers(); }},
        f[1] + " ", h("span", {class: "n"}, String(n)));
    }));
    var search = h("input", {type: "search", id: "trigger-search", class: "search", placeholder: "search prompt, case or skill",
      oninput: function (e) { trig.query = e.target.value; redrawTriggers(); }});
    trigBody = h("tbody", {id: "trigger-rows"});
    trigCount = h("p", {class: "muted", id: "trigger-count"});
    trigCell = h("p", {class: "cell-filter", id: "trigger-cell"});
    TRIGGER_COLUMNS = BASE_TRIGGER_COLUMNS.concat(matrixRun ? [["engine", "Engine · model", function (c) { return c.engine + " " + (c.model || ""); }]] : []);
    var thead = h("thead", null, h("tr", null, TRIGGER_COLUMNS.map(function (col) {
      return h("th", {"data-sort": col[0], title: "sort by " + col[1].toLowerCase(), onclick: function () {
        trig.desc = trig.sort === col[0] ? !trig.desc : false;
        trig.sort = col[0];
        redrawTriggers();
      }}, col[1]);
    })));
    var box = h("div", {class: "triggers"}, h("h3", null, "Trigger prompts"),
      h("p", {class: "muted"}, "Each trigger case by its prompt: the skill it belongs to, the skill it fired and how often. Choose one to see its session."),
      h("div", {class: "tools"}, trigBar, search), trigCell, trigCount,
      h("div", {class: "scroll table"}, h("table", {class: "rows trig", id: "trigger-table"}, thead, trigBody)));
    redrawTriggers();
    return box;
  }

  // --- trends ---------------------------------------------------------------------------------

  // A run's label as (date, time): `11-25` over `14:03`, so two runs on one day differ.
  function runLabel(r, i) {
    var label = r.label || "run " + (i + 1), cut = label.indexOf(" ");
    return cut < 0 || label.slice(0, 4) === "run " ? [label, ""] : [label.slice(0, cut), label.slice(cut + 1)];
  }

  function trends() {
    var hist = data.history;
    if (!hist || !hist.runs.length) return null;
    var runs = hist.runs, w = 720, ht = 220, pad = 40;
    var x = function (i) { return runs.length === 1 ? w / 2 : pad + i * (w - 2 * pad) / (runs.length - 1); };
    var y = function (r) { return ht - pad + (pad * 2 - ht) * (r || 0); };
    var chart = svg("svg", {viewBox: "0 0 " + w + " " + ht, class: "chart", id: "trend-chart", role: "img"},
      svg("title", null, "graded pass rate per run"));
    [0, 0.5, 1].forEach(function (t) {
      add(chart, [svg("line", {x1: pad, x2: w - pad, y1: y(t), y2: y(t), class: "grid"}),
        svg("text", {x: 4, y: y(t) + 4, class: "axis"}, (t * 100) + "%")]);
    });
    add(chart, svg("polyline", {class: "line", points: runs.map(function (r, i) { return x(i) + "," + y(r.rate); }).join(" ")}));
    // Each run by its start (date over time, UTC): every k-th back from the newest when they would overlap.
    var every = Math.max(1, Math.ceil(runs.length / Math.floor((w - 2 * pad) / 44 + 1)));
    runs.forEach(function (r, i) {
      add(chart, svg("circle", {cx: x(i), cy: y(r.rate), r: 5, class: "point", "data-rate": r.rate},
        svg("title", null, r.timestamp + " · " + pct(r.rate) + " · " + (r.passed || 0) + "/" + (r.graded === undefined ? r.total : r.graded))));
      if ((runs.length - 1 - i) % every) return;
      var when = runLabel(r, i);
      add(chart, svg("text", {x: x(i), y: ht - 22, class: "axis run", "text-anchor": "middle", "data-run": i},
        svg("tspan", {x: x(i)}, when[0]), when[1] ? svg("tspan", {x: x(i), dy: 13}, when[1]) : null));
    });
    var grid = h("table", {class: "vgrid", id: "trend-grid"},
      h("thead", null, h("tr", null, h("th", null, "case"), runs.map(function (r, i) {
        var when = runLabel(r, i);
        return h("th", {class: "run", title: r.id + " · " + r.timestamp}, h("span", null, when[0]), when[1] ? h("span", null, when[1]) : null);
      }))),
      h("tbody", null, hist.cases.map(function (name, ci) {
        var row = hist.cells[ci];
        return h("tr", null, h("th", {class: "name", title: name}, name), row.map(function (v, i) {
          var flip = i > 0 && v && row[i - 1] && v !== row[i - 1];
          return h("td", {class: "cell v-" + String(v || "none").toLowerCase().replace(/[^a-z]/g, "") + (flip ? " flip" : ""),
            title: runs[i].timestamp + ": " + (v || "not in this run")}, v ? v.charAt(0) : "·");
        }));
      })));
    return h("details", {class: "block trends", id: "trends", open: true},
      h("summary", null, h("h2", null, "Trends over " + runs.length + " runs")),
      chart, h("p", {class: "muted"}, "Graded pass rate per run, oldest first. Below, each case's verdict per run; a framed cell is a flip."),
      h("div", {class: "scroll"}, grid));
  }

  // --- the case table -------------------------------------------------------------------------

  var FILTERS = [
    ["all", "All", function () { return true; }],
    ["regressions", "Regressions", function (c) { return c.category === "regressed"; }],
    ["failures", "Failures", function (c) { return c.verdict === "FAIL" || c.verdict === "ERROR"; }],
    ["diverged", "Diverged", function (c) { return c.miss === "diverged"; }],
    ["stale", "Stale", function (c) { return c.miss === "stale" || c.miss === "no-cassette"; }],
    ["flaky", "Flaky", function (c) { return c.flaky; }]
  ];
  var state = {filter: "all", query: "", sort: null, desc: false, open: null};
  var matrixRun = data.cases.some(function (c) { return c.engine !== data.cases[0].engine || c.model !== data.cases[0].model; });
  var several = data.plugins && data.plugins.length > 1;
  var COLUMNS = [
    ["verdict", "Verdict", function (c) { return c.verdict; }],
    ["name", "Case", function (c) { return c.title || c.name; }],
    ["target", "Target", function (c) { return c.target || ""; }]
  ].concat(several ? [["plugin", "Plugin", function (c) { return c.plugin || ""; }]] : [])
    .concat(matrixRun ? [["engine", "Engine", function (c) { return c.engine; }], ["model", "Model", function (c) { return c.model || ""; }]] : [])
    .concat(data.base ? [["base", "Base", function (c) { return c.base || ""; }], ["category", "Change", function (c) { return c.category || ""; }]] : [])
    .concat([["failed", "Failed", function (c) { return c.failed.length ? c.failed.join(", ") : c.refused || ""; }],
      ["duration", "Time", function (c) { return c.duration || 0; }],
      ["cost", "Cost", function (c) { return c.cost === undefined || c.cost === null ? -1 : c.cost; }]]);
  var rows = data.cases.map(function (c, i) { return {i: i, c: c, tr: null, ttr: null, td: null, g: null}; });
  var tbody, countLine, filterBar, split;

  // A report of several engines and models is a grid: one row per case, one verdict cell per
  // engine · model; a cell opens that pair's session.
  var PAIRS = pairsOf();
  var grid = PAIRS ? gridRows() : null;
  var NUMERIC = {duration: true, cost: true, passed: true};
  var CHANGES = {regressed: true, fixed: true, "new": true, "no-baseline": true};
  var GRID_COLUMNS = PAIRS ? [
    ["name", "Case", function (g) { return g.title || g.name; }],
    ["target", "Target", function (g) { return g.target || ""; }]
  ].concat(several ? [["plugin", "Plugin", function (g) { return g.plugin || ""; }]] : [])
    .concat(PAIRS.map(function (p, k) { return ["pair-" + k, p, function (g) { return g.cells[k] ? g.cells[k].c.verdict : ""; }]; }))
    .concat([["passed", "Passed", function (g) { var n = passed(g); return n[1] ? n[0] / n[1] : -1; }]]) : null;

  function pairKey(engine, model) { return engine + "\u0000" + (model || ""); }
  function pairName(p) { return p.engine + (p.model ? " · " + p.model : ""); }

  function pairsOf() {
    if (!data.pairs || data.pairs.length < 2) return null;
    var list = [], seen = new Map();
    var note = function (engine, model) {
      var key = pairKey(engine, model);
      if (!seen.has(key)) { seen.set(key, list.length); list.push({engine: engine, model: model || null, key: key}); }
    };
    data.pairs.forEach(function (p) { note(p.engine, p.model); });
    data.cases.forEach(function (c) { note(c.engine, c.model); });
    list.index = seen;
    return list;
  }

  function gridRows() {
    var byName = new Map(), out = [];
    rows.forEach(function (r) {
      var k = PAIRS.index.get(pairKey(r.c.engine, r.c.model)), mine = byName.get(r.c.name) || [];
      var g = mine.filter(function (x) { return !x.cells[k]; })[0];
      if (!g) {
        g = {n: out.length, name: r.c.name, title: r.c.title, target: r.c.target, plugin: r.c.plugin, tr: null,
          cells: PAIRS.map(function () { return null; })};
        mine.push(g);
        byName.set(r.c.name, mine);
        out.push(g);
      }
      g.cells[k] = r;
      r.g = g;
    });
    return out;
  }

  function passed(g) {
    var ran = g.cells.filter(Boolean);
    return [ran.filter(function (r) { return r.c.verdict === "PASS"; }).length, ran.length];
  }

  function nameCell(name, props) {
    return h("td", Object.assign({class: "name", title: name}, props || {}), h("div", {class: "clamp"}, name));
  }

  function cellOf(col, c) {
    if (col[0] === "verdict") return h("td", {class: "verdict"}, badge(c.verdict), c.flaky ? h("span", {class: "tag"}, "flaky") : null,
      c.miss ? h("span", {class: "tag"}, c.miss) : null);
    if (col[0] === "base") return h("td", {class: "verdict"}, c.base ? badge(c.base) : "–");
    if (col[0] === "name") return nameCell(c.title || c.name);
    if (col[0] === "duration") return h("td", {class: "num"}, secs(c.duration));
    if (col[0] === "cost") return h("td", {class: "num"}, money(c.cost));
    return h("td", {class: col[0]}, col[2](c));
  }

  function rowOf(r) {
    if (r.tr) return r.tr;
    r.tr = h("tr", {tabindex: "0", "data-case": r.i, onclick: function () { openCase(r.i); },
      onkeydown: function (e) { if (e.key === "Enter") openCase(r.i); }},
      COLUMNS.map(function (col) { return cellOf(col, r.c); }));
    return r.tr;
  }

  // One verdict of the grid: its engine · model's result for the case; a click opens its session.
  function pairCell(g, k) {
    var r = g.cells[k], p = PAIRS[k];
    if (!r) return h("td", {class: "pair none", "data-engine": p.engine, "data-model": p.model, title: "not run on " + pairName(p)}, "–");
    var c = r.c, about = [pairName(p) + ": " + c.verdict];
    if (c.failed.length) about.push("failed " + c.failed.join(", "));
    if (c.base) about.push("base " + c.base + (c.category ? " (" + c.category + ")" : ""));
    if (c.duration !== null && c.duration !== undefined) about.push(secs(c.duration));
    if (c.cost !== null && c.cost !== undefined) about.push(money(c.cost));
    var open = function (e) { e.stopPropagation(); openCase(r.i); };
    r.td = h("td", {class: "pair", tabindex: "0", role: "button", "data-case": r.i, "data-engine": p.engine, "data-model": p.model,
      title: about.join(" · ") + " (click for its session)", onclick: open,
      onkeydown: function (e) { if (e.key === "Enter") open(e); }},
      badge(c.verdict), c.flaky ? h("span", {class: "tag"}, "flaky") : null, c.miss ? h("span", {class: "tag"}, c.miss) : null,
      CHANGES[c.category] === true ? h("span", {class: "tag change"}, c.category) : null);
    return r.td;
  }

  function gridRowOf(g) {
    if (g.tr) return g.tr;
    var first = g.cells.filter(Boolean)[0];
    var open = function () { openCase(first.i); };
    g.tr = h("tr", {"data-case": first.i, "data-row": g.n}, GRID_COLUMNS.map(function (col) {
      if (col[0] === "name") return nameCell(g.title || g.name, {tabindex: "0", onclick: open, onkeydown: function (e) { if (e.key === "Enter") open(); }});
      if (col[0].indexOf("pair-") === 0) return pairCell(g, +col[0].slice(5));
      if (col[0] === "passed") { var n = passed(g); return h("td", {class: "num passed"}, n[0] + "/" + n[1]); }
      return h("td", {class: col[0]}, col[2](g));
    }));
    return g.tr;
  }

  function filterTest() { return FILTERS.filter(function (f) { return f[0] === state.filter; })[0][2]; }

  function sorted(found, columns, item, order) {
    if (!state.sort) return found;
    var key = columns.filter(function (col) { return col[0] === state.sort; })[0][2];
    return found.sort(function (a, b) {
      var x = key(item(a)), y = key(item(b));
      var d = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
      return (state.desc ? -d : d) || order(a) - order(b);
    });
  }

  function found(name, target) {
    var q = state.query.toLowerCase();
    return !q || name.toLowerCase().indexOf(q) >= 0 || (target || "").toLowerCase().indexOf(q) >= 0;
  }

  function visible() {
    var test = filterTest();
    return sorted(rows.filter(function (r) { return test(r.c) && (found(r.c.name, r.c.target) || found(r.c.title || "", r.c.target)); }), COLUMNS,
      function (r) { return r.c; }, function (r) { return r.i; });
  }

  // The grid's rows: a case is listed when one of its results passes the filter (the others are
  // dimmed) and its name or target matches the search.
  function visibleGrid() {
    var test = filterTest();
    return sorted(grid.filter(function (g) {
      return g.cells.some(function (r) { return r && test(r.c); }) && (found(g.name, g.target) || found(g.title || "", g.target));
    }), GRID_COLUMNS, function (g) { return g; }, function (g) { return g.n; });
  }

  function redraw() {
    var frag = document.createDocumentFragment(), test = filterTest(), shown;
    if (PAIRS) {
      shown = visibleGrid();
      var results = 0;
      shown.forEach(function (g) {
        var tr = gridRowOf(g);
        g.cells.forEach(function (r) {
          if (!r) return;
          var hit = test(r.c);
          results += hit ? 1 : 0;
          r.td.classList.toggle("dim", state.filter !== "all" && !hit);
          r.td.classList.toggle("open", r.i === state.open);
        });
        tr.classList.toggle("open", g.cells.some(function (r) { return r && r.i === state.open; }));
        frag.append(tr);
      });
      countLine.textContent = shown.length + " of " + grid.length + " cases × " + PAIRS.length + " engine · model pairs" +
        (state.filter !== "all" ? " · " + results + " of " + rows.length + " results" : "");
    } else {
      shown = visible();
      shown.forEach(function (r) {
        var tr = rowOf(r);
        tr.classList.toggle("open", r.i === state.open);
        frag.append(tr);
      });
      countLine.textContent = shown.length + " of " + rows.length + " cases";
    }
    tbody.replaceChildren(frag);
    Array.prototype.forEach.call(filterBar.children, function (b) {
      b.setAttribute("aria-pressed", String(b.getAttribute("data-filter") === state.filter));
    });
  }

  function heading(col) {
    var pair = typeof col[1] === "object" ? col[1] : null;
    return h("th", {"data-sort": col[0], class: pair ? "pair" : NUMERIC[col[0]] ? "num" : null, "data-engine": pair ? pair.engine : null,
      "data-model": pair ? pair.model : null, title: "sort by " + (pair ? pairName(pair) : col[1].toLowerCase()),
      onclick: function () {
        state.desc = state.sort === col[0] ? !state.desc : false;
        state.sort = col[0];
        redraw();
      }}, pair ? [h("span", {class: "engine"}, pair.engine), h("span", {class: "model"}, pair.model || "–")] : col[1]);
  }

  function caseTable() {
    filterBar = h("div", {class: "filters", role: "group", id: "filters"}, FILTERS.map(function (f) {
      var n = rows.filter(function (r) { return f[2](r.c); }).length;
      var cases = PAIRS ? grid.filter(function (g) { return g.cells.some(function (r) { return r && f[2](r.c); }); }).length : n;
      return h("button", {type: "button", "data-filter": f[0], title: PAIRS ? plural(n, "result") + " on some engine · model" : null,
        onclick: function () { state.filter = f[0]; redraw(); }}, f[1] + " ", h("span", {class: "n"}, String(cases)));
    }));
    var search = h("input", {type: "search", id: "search", placeholder: "search name or target",
      oninput: function (e) { state.query = e.target.value; redraw(); }});
    tbody = h("tbody", {id: "case-rows"});
    countLine = h("span", {id: "case-count"});
    var thead = h("thead", null, h("tr", null, (PAIRS ? GRID_COLUMNS : COLUMNS).map(heading)));
    var hint = PAIRS ? "One row per case, one column per engine · model: choose a verdict to see that session."
      : "Choose a case to see what the agent did.";
    return h("section", {class: "cases"}, h("h2", null, "Cases"), h("div", {class: "tools"}, filterBar, search),
      h("p", {class: "muted status"}, countLine, h("span", {class: "hint"}, " · " + hint)),
      h("div", {class: "scroll table", id: "case-list"},
        h("table", {class: "rows cases" + (PAIRS ? " grid" : ""), id: "case-table"}, thead, tbody)));
  }

  // --- one case -------------------------------------------------------------------------------

  function detailOf(i) {
    if (!(i in details)) details[i] = JSON.parse(document.getElementById("case-" + i).textContent);
    return details[i];
  }

  // Marks a result open (or not) wherever it is listed.
  function mark(i, on) {
    var r = rows[i];
    if (PAIRS) {
      if (r.td) r.td.classList.toggle("open", on);
      if (r.g.tr) r.g.tr.classList.toggle("open", on);
    } else if (on || r.tr) {
      rowOf(r).classList.toggle("open", on);
    }
    if (r.ttr) r.ttr.classList.toggle("open", on);
  }

  function openCase(i, reveal) {
    if (state.open !== null) mark(state.open, false);
    state.open = i;
    var d = detailOf(i), c = data.cases[i];
    var pane = document.getElementById("case");
    split.classList.add("has-case");
    pane.replaceChildren(caseView(d, c, rows[i]));
    mark(i, true);
    if (location.hash !== "#case-" + i) history.replaceState(null, "", "#case-" + i);
    pane.scrollTop = 0;
    if (reveal) pane.scrollIntoView({block: "start"});
  }

  function closeCase() {
    if (state.open !== null) mark(state.open, false);
    state.open = null;
    split.classList.remove("has-case");
    document.getElementById("case").replaceChildren();
    history.replaceState(null, "", "#");
  }

  function caseView(d, c, r) {
    var box = h("article", {class: "case", id: "case-view", "data-name": d.name, "data-title": c.title || d.name, "data-engine": c.engine, "data-model": c.model},
      h("h2", null, badge(d.verdict), " ", h("span", {class: "case-name"}, c.title || d.name),
        h("button", {type: "button", class: "close", id: "close-case", title: "close this case", "aria-label": "close this case", onclick: closeCase}, "×")),
      h("p", {class: "meta"}, [d.target, c.engine + (c.model ? " · " + c.model : ""),
        d.file ? d.file + (d.line ? ":" + d.line : "") : null, c.category].filter(Boolean).join(" · ")));
    if (PAIRS) add(box, pairSwitch(r));
    add(box, why(d));
    add(box, prompt(d));
    add(box, transcriptBlock(d));
    add(box, numbers(d));
    return box;
  }

  // In a grid: which engine · model this is, and the same case on the others, one click away.
  function pairSwitch(r) {
    return h("div", {class: "tabs pairs", role: "group", id: "case-pairs"}, h("span", {class: "muted"}, "on "),
      r.g.cells.map(function (x, k) {
        if (!x) return null;
        return h("button", {type: "button", "aria-pressed": String(x.i === r.i), "data-case": x.i, "data-engine": PAIRS[k].engine,
          onclick: x.i === r.i ? null : function () { openCase(x.i); }}, badge(x.c.verdict), " " + pairName(PAIRS[k]));
      }));
  }


  function why(d) {
    var s = section("Verdict", "verdict");
    if (d.error) add(s, h("p", {class: "error"}, d.error));
    if (d.miss) add(s, missBox(d.miss));
    if (d.cassette_changed) add(s, h("p", {class: "warn"}, "This pull request changed the case's cassettes; recorded: " + (d.cassette_provenance || "unknown")));
    if (d.checks.length) {
      add(s, h("ul", {class: "checks", id: "checks"}, d.checks.map(function (k) {
        return h("li", {class: "check", "data-check": k.name}, badge(k.result), " ", h("span", {class: "name"}, k.name));
      })));
      d.checks.forEach(function (k) {
        if (k.detail) add(s, h("div", {class: "check-detail"}, h("b", null, k.name + ": "), pre(k.detail)));
      });
    }
    if (d.graders && d.graders.length) {
      var fixed = function (x) { return x === undefined || x === null ? "–" : Number(x).toFixed(2); };
      add(s, h("p", {id: "plugin-eval-score"}, h("b", null, "claude plugin eval score " + fixed(d.score)),
        " · pass rate " + pct(d.pass_rate) +
        (d.score_without !== undefined ? " · without the plugin " + fixed(d.score_without) + " · Δ " +
          (d.delta === undefined ? "withheld" : (d.delta > 0 ? "+" : "") + fixed(d.delta)) : "") +
        (d.run_scores && d.run_scores.length > 1 ? " · runs " + d.run_scores.map(fixed).join(", ") : "")));
      add(s, h("table", {class: "graders", id: "graders"}, h("thead", null, h("tr", null,
        ["grader", "type", "weight", "", "why"].map(function (c) { return h("th", null, c); }))),
        h("tbody", null, d.graders.map(function (g) {
          return h("tr", {"data-grader": g.name}, h("td", null, g.name), h("td", null, g.type), h("td", null, String(g.weight)),
            h("td", null, badge(g.passed ? "PASS" : "FAIL"), g.scored ? "" : h("span", {class: "muted"}, g.with_only ? " with-only, not scored" : " not scored")),
            h("td", null, g.explanation));
        }))));
    }
    if (d.skipped_checks) {
      add(s, h("div", {class: "warn", id: "not-honoured"}, h("p", null, "Imported from " + (d.source || "another tool's file") +
        ": what it asks that this run could not check"), h("ul", null, Object.keys(d.skipped_checks).map(function (k) {
        return h("li", null, h("b", null, k + ": "), d.skipped_checks[k]);
      }))));
    }
    if (d.label) {
      add(s, h("p", {class: d.label.stale ? "muted" : "warn", id: "human-label"}, d.label.stale
        ? "A label by " + d.label.by + " is stale (" + (d.label.why_stale || "changed") + "): it no longer decides."
        : (d.judge_verdict && d.judge_verdict.result !== d.label.verdict ? "Overruled by a person" : "Confirmed by a person") +
          " (" + d.label.by + ", " + d.label.at + "): " + d.label.verdict + ". " + d.label.reason));
    }
    if (d.judge_advisory) add(s, h("p", {class: "warn", id: "judge-advisory"}, "The judge's FAIL is advisory: " + d.judge_advisory));
    if (d.budget) {
      add(s, h("p", {class: "warn", id: "budget-skip"}, "Not graded (budget): estimated " +
        (d.budget.estimate_usd === null ? "– (" + d.budget.basis + ")" : money(d.budget.estimate_usd) + " from the " + d.budget.basis) +
        ", " + money(d.budget.left_usd) + " left of max-usd " + money(d.budget.cap_usd) + "."));
    }
    if (d.self_check) {
      var sc = d.self_check, box = h("div", {class: sc.unstable ? "warn" : "muted", id: "self-check"},
        h("p", null, sc.unstable ? "Recording unstable: re-executed against itself, it still differed (it will not be re-executed): " + sc.unstable
          : sc.skipped ? "Recording not checked against itself: " + sc.skipped
          : "Recording checked against itself: clean (" + sc.runs + " re-execution" + (sc.runs === 1 ? "" : "s") + ")."));
      if (sc.learnt && sc.learnt.length) add(box, h("ul", null, sc.learnt.map(function (m) { return h("li", null, "learnt a volatile value: " + m); })));
      add(s, box);
    }
    add(s, judge(d.judge_verdict));
    if (d.label_line) {
      var line = pre(d.label_line, "label-line"), copy = h("button", {type: "button", class: "copy",
        onclick: function () { if (navigator.clipboard) navigator.clipboard.writeText(d.label_line); }}, "Copy");
      line.id = "label-line";
      add(s, h("div", {class: "label-box"}, h("p", {class: "muted"}, "Disagree with the judge? Run this in the repository (write the reason) to label this exact output:"), line, copy));
    }
    var facts = [];
    if (d.trigger_expected !== undefined) facts.push(["skill should fire", String(d.trigger_expected)]);
    if (d.skill_triggered !== undefined) facts.push(["skill fired", String(d.skill_triggered)]);
    if (d.expected_skill !== undefined) facts.push(["belongs to", d.expected_skill]);
    if (d.routed_to !== undefined) facts.push(["went to", d.routed_to + (d.fire_rate !== undefined ? " · target fired in " + pct(d.fire_rate) + " of its runs" : "")]);
    if (d.skills_fired !== undefined) facts.push(["session loaded", d.skills_fired.length ? d.skills_fired.join(" → ") : "no skill"]);
    if (d.canary) facts.push(["canary", "names its skill outright: if it does not fire, the harness is at fault"]);
    if (d.draft) facts.push(["drafted by aam-eval init", d.draft === "unreviewed" ? "not reviewed yet" : "reviewed"]);
    if (d.baseline_verdict) facts.push(["without the skill", d.baseline_verdict + (d.baseline_error ? ": " + d.baseline_error : "")]);
    if (d.skill_not_needed) facts.push(["skill not needed", "passes without it as well"]);
    if (d.replay_kind) facts.push(["session", d.replay_kind + (d.live_from_turn ? ", live from turn " + d.live_from_turn : "")]);
    if (d.turns !== undefined) facts.push(["conversation", plural(d.turns, "user turn") + (d.stopped ? " · stopped: " + d.stopped + " (" + stopWhy(d.stopped) + ")" : "")]);
    if (d.changed_at_turn !== undefined) facts.push(["re-executed", "differed from its recording from user turn " + d.changed_at_turn]);
    if (d.confinement) facts.push(["sandbox", d.confinement]);
    add(s, kv(facts));
    if (d.attempts && d.attempts.length) add(s, attempts("Attempts", d.attempts));
    if (d.baseline_attempts && d.baseline_attempts.length) add(s, attempts("Attempts without the skill", d.baseline_attempts));
    if (d.base) {
      add(s, h("div", {class: "base-verdict", id: "base-verdict"}, h("h4", null, "On the base: ", badge(d.base.verdict)),
        d.base.error ? h("p", {class: "error"}, d.base.error) : null,
        d.base.checks.length ? h("p", null, d.base.checks.map(function (k) { return k.name + " " + k.result; }).join(" · ")) : null,
        judge(d.base.judge_verdict)));
    }
    return s;
  }

  function missBox(m) {
    var box = h("div", {class: "miss", id: "miss"}, h("p", null, h("b", null, "replay " + m.kind + " (" + (m.subject || "agent") + "): "), m.reason));
    if (m.changes && m.changes.length) add(box, h("ul", null, m.changes.map(function (x) { return h("li", null, x); })));
    if (m.rerecord) add(box, h("p", null, "re-record: ", h("code", null, m.rerecord)));
    var dv = m.divergence;
    if (dv) {
      add(box, h("div", {class: "divergence", id: "divergence"},
        h("p", null, h("b", null, "first differing request: turn " + dv.turn + (dv.conversation && dv.conversation !== "main" ? " of " + dv.conversation : "")),
          dv.path ? " at " : "", dv.path ? h("code", null, dv.path) : null),
        dv.tool ? h("p", null, "tool " + dv.tool + (dv.tool_input ? ": " : ""), dv.tool_input ? h("code", null, dv.tool_input) : null) : null,
        h("div", {class: "two"}, h("div", null, h("h4", null, "recorded"), pre(dv.recorded, "text rec")),
          h("div", null, h("h4", null, "this run"), pre(dv.live, "text live"))),
        dv.message ? h("p", {class: "muted"}, dv.message) : null));
    }
    return box;
  }

  function judge(j) {
    if (!j) return null;
    var box = h("div", {class: "judge"}, h("h4", null, "Judge ", badge(j.result), j.model ? h("span", {class: "muted"}, " " + j.model + (j.replayed ? " · replayed" : "")) : null),
      j.reason ? pre(j.reason, "text reason") : null);
    if (j.votes && j.votes.length) {
      add(box, h("ol", {class: "votes"}, j.votes.map(function (v) { return h("li", null, badge(v.result), " ", v.reason); })));
    }
    return box;
  }

  function attempts(title, list) {
    return h("div", null, h("h4", null, title), h("ol", {class: "attempts"}, list.map(function (a) {
      return h("li", null, badge(a.verdict), " ", secs(a.duration_seconds), a.error ? " · " + a.error : "",
        a.skills_fired ? " · " + (a.skills_fired.length ? "loaded " + a.skills_fired.join(" → ") : "loaded no skill") : "");
    })));
  }

  function prompt(d) {
    var s = section("Prompt and inputs", "prompt");
    if (d.prompt === null || d.prompt === undefined) add(s, h("p", {class: "muted"}, "prompt not available: " + d.prompt_note));
    else add(s, pre(d.prompt, "text prompt"));
    if (d.prompt_from_report) add(s, h("p", {class: "muted", id: "prompt-from-report"}, "from the report (its first 500 characters): " + d.prompt_note));
    if (d.description) add(s, h("p", {class: "muted"}, d.description));
    if (d.criteria) add(s, h("p", null, h("b", null, "judge criteria: "), d.criteria));
    (d.inputs || []).forEach(function (f) {
      add(s, h("details", {class: "file"}, h("summary", null, f.path, f.note ? h("span", {class: "muted"}, " · " + f.note) : null),
        f.text !== undefined ? pre(f.text, "text code") : null));
    });
    return s;
  }

  // --- transcripts ----------------------------------------------------------------------------

  function transcriptBlock(d) {
    var s = section("Transcript", "transcript");
    var choices = options(d.head, "with the package", "attempt ", false)
      .concat(d.baseline_rec ? options(d.baseline_rec, "baseline", "baseline attempt ", true) : []);
    var body = h("div", {class: "transcript-body"});
    var show = function (k) {
      Array.prototype.forEach.call(tabs.children, function (b, j) { b.setAttribute("aria-pressed", String(j === k)); });
      body.replaceChildren(choices[k].rec.sessions ? sessionPane(d, choices[k]) : missing(choices[k].rec));
    };
    var tabs = h("div", {class: "tabs", role: "group"}, choices.map(function (ch, k) {
      return h("button", {type: "button", onclick: function () { show(k); }}, ch.label);
    }));
    if (choices.length > 1) add(s, tabs);
    add(s, body);
    show(0);
    return s;
  }

  // One tab per attempt (or one saying why there is no transcript).
  function options(rec, label, numbered, baseline) {
    var list = rec && rec.sessions ? rec.sessions : [null];
    return list.map(function (x, i) {
      return {label: list.length > 1 ? numbered + (i + 1) : label, rec: rec || {missing: "none recorded"}, n: i, baseline: baseline};
    });
  }

  function missing(rec) { return h("p", {class: "muted no-transcript"}, "no transcript: " + (rec ? rec.missing || "none recorded" : "none recorded")); }

  function sessionPane(d, choice) {
    var sess = choice.rec.sessions[choice.n];
    var wrap = h("div", null, h("p", {class: "muted"}, "from " + choice.rec.where +
      (sess.how === "steps" ? " · one step per tool call (this recording has no model traffic, so turn boundaries are not known)" : "")));
    if (choice.rec.note) add(wrap, h("p", {class: "warn"}, choice.rec.note));
    if (sess.note) add(wrap, h("p", {class: "warn"}, sess.note));
    var base = !choice.baseline && choice.n === 0 && d.base ? d.base.rec : null;
    var changed = !choice.baseline && choice.n === 0 ? d.changed_at_turn : null;
    if (base) {
      var other = base.sessions ? base.sessions[0] : null;
      add(wrap, aligned(sess, other, base, d.first_diff));
    } else if (talked(sess)) {
      add(wrap, chat(sess, changed));
      add(wrap, ending(sess));
    } else {
      add(wrap, h("div", {class: "turns", id: "turns"}, sess.turns.map(function (t) { return turn(t); })));
      add(wrap, ending(sess));
    }
    add(wrap, files(sess));
    return wrap;
  }

  // --- a conversation: the user's messages, each followed by the agent's work and answer -----

  var STOPS = {
    "turns-done": "every scripted turn was sent",
    "goal-reached": "the simulated user's goal was reached",
    "agent-finished": "the agent finished without asking anything",
    "max-turns": "max-turns was reached",
    "error": "a turn failed"
  };

  function stopWhy(stopped) { return Object.prototype.hasOwnProperty.call(STOPS, stopped) ? STOPS[stopped] : "why not known"; }

  function talked(sess) { return !!(sess && sess.conversation && sess.conversation.length); }

  function about(sess) {
    var n = sess.conversation.length;
    return h("p", {class: "chat-about", "data-turns": n, "data-stopped": sess.stopped},
      h("b", null, "Conversation of " + plural(n, "user turn")),
      sess.stopped ? [" · stopped: ", h("span", {class: "stopped"}, sess.stopped), " (" + stopWhy(sess.stopped) + ")"] : null);
  }

  function userMessage(u, k, n) {
    var sim = u.by === "simulated-user";
    return h("div", {class: "msg user" + (sim ? " simulated" : ""), "data-by": u.by, "data-user-turn": k + 1},
      h("div", {class: "who"}, sim ? "simulated user" : "user", h("span", {class: "muted"}, " · " + (k + 1) + " of " + n)),
      h("div", {class: "body"}, u.user));
  }

  function answerMessage(u, k, last) {
    var said = u.output !== null && u.output !== undefined && u.output !== "";
    return h("div", {class: "msg agent" + (u.is_error ? " failed" : ""), "data-user-turn": k + 1},
      h("div", {class: "who"}, "agent", h("span", {class: "muted"}, (last ? " · model turn " + last.n : "") +
        (u.duration_seconds ? " · the user turn took " + secs(u.duration_seconds) : ""))),
      said ? h("div", {class: "body"}, u.output) : h("div", {class: "body muted"}, "(no answer)"),
      u.is_error ? h("p", {class: "error"}, "this turn failed: the conversation stopped here") : null);
  }

  // The model turns of one user turn; the last one's text is the answer, shown as such.
  function work(sess, u) {
    var mine = sess.turns.slice(u.first, u.first + u.count), last = mine[mine.length - 1];
    var folds = last && last.text.join("\n\n").trim() === String(u.output || "").trim() && last.text.length;
    var shown = mine.map(function (t) {
      if (t !== last || !folds) return turn(t);
      return last.calls.length || (last.sub || []).length || (last.thinking || []).length ? turn(t, true) : null;
    });
    return {turns: shown.filter(Boolean), last: folds ? last : null};
  }

  function chat(sess, changed) {
    var split = sess.conversation.every(function (u) { return u.first !== null && u.first !== undefined; });
    var box = h("div", {class: "chat", id: "chat"}, about(sess));
    if (sess.split === "calls") add(box, h("p", {class: "muted"}, "model turns matched to the messages by their counts of tool calls"));
    sess.conversation.forEach(function (u, k) {
      var part = split ? work(sess, u) : {turns: [], last: null};
      add(box, h("div", {class: "chat-turn" + (changed === k + 1 ? " changed" : ""), "data-user-turn": k + 1},
        changed === k + 1 ? h("p", {class: "diff-label"}, "re-executed, the session first differed from its recording in this turn") : null,
        userMessage(u, k, sess.conversation.length),
        part.turns.length ? h("div", {class: "turns"}, part.turns) : null,
        answerMessage(u, k, part.last)));
    });
    if (!split) {
      add(box, h("p", {class: "warn"}, "The model turns could not be matched to the user messages: all of them, in order."));
      add(box, h("div", {class: "turns", id: "turns"}, sess.turns.map(function (t) { return turn(t); })));
    }
    return box;
  }

  // Beside a base: the user messages that start at each model turn, on either side.
  function startsAt(sess) {
    var at = {};
    if (!talked(sess)) return at;
    sess.conversation.forEach(function (u, k) {
      if (u.first === null || u.first === undefined) return;
      (at[u.first] = at[u.first] || []).push(userMessage(u, k, sess.conversation.length));
    });
    return at;
  }

  function aligned(head, base, baseRec, first) {
    var n = Math.max(head.turns.length, base ? base.turns.length : 0);
    var grid = h("div", {class: "aligned", id: "aligned"},
      h("div", {class: "turn-row heading"}, h("h4", null, "head"), h("h4", null, "base")));
    if (talked(head) || talked(base)) {
      add(grid, h("div", {class: "turn-row"}, h("div", null, talked(head) ? about(head) : null), h("div", null, talked(base) ? about(base) : null)));
    }
    var headAt = startsAt(head), baseAt = startsAt(base);
    if (!base) add(grid, h("div", {class: "turn-row"}, h("div"), missing(baseRec)));
    for (var i = 0; base && i <= n; i++) {
      if (headAt[i] || baseAt[i]) add(grid, h("div", {class: "turn-row said"}, h("div", {class: "side head"}, headAt[i] || null), h("div", {class: "side base"}, baseAt[i] || null)));
      if (i === n) break;
      var mark = first === i + 1;
      add(grid, h("div", {class: "turn-row" + (mark ? " first-diff" : ""), "data-turn": i + 1},
        mark ? h("p", {class: "diff-label"}, "the sessions part here, at turn " + (i + 1)) : null,
        h("div", {class: "side head"}, head.turns[i] ? turn(head.turns[i]) : h("p", {class: "muted"}, "(no such turn)")),
        h("div", {class: "side base"}, base.turns[i] ? turn(base.turns[i]) : h("p", {class: "muted"}, "(no such turn)"))));
    }
    if (base && first === null) add(grid, h("p", {class: "muted"}, "head and base took the same turns"));
    return h("div", null, grid, h("div", {class: "two"}, ending(head), base ? ending(base) : h("div")));
  }

  // A model turn; `quiet` leaves its text out (a conversation shows it as the turn's answer).
  function turn(t, quiet) {
    var box = h("div", {class: "turn", "data-turn": t.n}, h("div", {class: "turn-n"}, "turn " + t.n, t.live ? h("span", {class: "tag"}, "live") : null));
    (t.thinking || []).forEach(function (x) { add(box, h("details", {class: "thinking"}, h("summary", null, "thinking"), pre(x))); });
    if (!quiet) t.text.forEach(function (x) { add(box, h("div", {class: "say"}, x)); });
    t.calls.forEach(function (c) { add(box, call(c)); });
    (t.sub || []).forEach(function (s) {
      add(box, h("details", {class: "sub", open: true, "data-sub": s.id},
        h("summary", null, "sub-agent " + s.id + (s.agent && s.agent !== s.id ? " (" + s.agent + ")" : "") + (s.description ? ": " + s.description : "")),
        s.turns.map(function (x) { return turn(x); })));
    });
    return box;
  }

  function call(c) {
    var box = h("div", {class: "call" + (c.hook ? " blocked" : c.is_error ? " failed" : "")},
      h("div", {class: "tool"}, h("span", {class: "tool-name"}, c.name)), pre(c.input, "text code input"));
    if (c.hook) add(box, h("div", {class: "hook"}, h("b", null, "blocked by a hook"), pre(c.result, "text reason")));
    else if (c.result !== null && c.result !== undefined) add(box, h("details", {class: "result", open: c.is_error || c.result.length < 400},
      h("summary", null, c.is_error ? "error" : "result"), pre(c.result, "text code")));
    return box;
  }

  function ending(sess) {
    if (!sess) return h("div");
    var box = h("div", {class: "ending"});
    (sess.unmatched_hooks || []).forEach(function (e) { add(box, h("div", {class: "hook"}, h("b", null, "blocked by a hook"), pre(e, "text reason"))); });
    var last = talked(sess) ? sess.conversation[sess.conversation.length - 1].output || ""
      : sess.turns.length ? sess.turns[sess.turns.length - 1].text.join("\n\n") : "";
    if (sess.output && sess.output.trim() !== last.trim()) add(box, [h("h4", null, "final answer"), pre(sess.output, "text answer")]);
    if (sess.error) add(box, h("p", {class: "error"}, sess.error));
    if (sess.stderr) add(box, h("details", null, h("summary", null, "stderr"), pre(sess.stderr, "text code")));
    return box;
  }

  function files(sess) {
    if (!sess.files.length) return null;
    return h("div", {class: "files", id: "files"}, h("h4", null, "Files the agent created or changed"), sess.files.map(function (f) {
      var about = f.status + ", " + f.size + " bytes";
      return h("details", {class: "file", open: sess.files.length < 4},
        h("summary", null, f.path, h("span", {class: "muted"}, " · " + about)),
        f.text !== undefined ? pre(f.text, "text code") : h("p", {class: "muted"}, f.status === "deleted" ? "deleted" : "content not recorded (binary or over 64 KiB): sha256 " + f.sha256));
    }));
  }

  function numbers(d) {
    var s = section("Tokens, cost and time", "numbers");
    var u = d.usage || {};
    var sess = d.head && d.head.sessions && d.head.sessions[0];
    add(s, kv([["input tokens", u.input_tokens], ["output tokens", u.output_tokens],
      ["cache read / written", u.cache_read_input_tokens || u.cache_creation_input_tokens ? (u.cache_read_input_tokens || 0) + " / " + (u.cache_creation_input_tokens || 0) : null],
      ["cost recorded", money(d.cost_usd)], ["spent by this run", money(d.run_cost_usd)], ["case time", secs(d.duration_seconds)],
      ["agent session time", sess ? secs(sess.duration_seconds) : null], ["model turns", sess ? sess.num_turns : null],
      ["agent", sess ? [sess.engine, sess.runtime_version, sess.model].filter(Boolean).join(" · ") : null],
      ["session id", d.session_id]]));
    return s;
  }

  // --- the page -------------------------------------------------------------------------------

  var app = document.getElementById("app");
  add(app, [overview(), plugins(), matrix(), routing(), listings(), trends(), volatile()]);
  // The case list takes the page's width; the case pane opens beside it when a case is chosen.
  split = h("div", {class: "split", id: "cases"}, caseTable(), h("aside", {class: "pane", id: "case"}));
  add(app, split);
  redraw();
  var m = /^#case-(\d+)$/.exec(location.hash);
  if (m && +m[1] < rows.length) openCase(+m[1]);
  document.body.setAttribute("data-ready", String(performance.now()));
})();

// report.html's script (docs/reports.md), written for tpusim; it loads nothing. It draws
// the page's plots and tables as inline SVG and HTML from the JSON in #report-data. Every
// section is drawn on its own: an error in one is written into #script-errors and the
// others still draw. When done, the body's data-rendered attribute is "ok", or "error".
// The build embeds this file into the binary (report/html_script.cpp.in).
"use strict";
(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const errors = [];
  function fail(where, error) {
    errors.push(where + ": " + (error && error.message ? error.message : String(error)));
    const box = document.getElementById("script-errors");
    box.textContent = errors.join("\n");
    box.hidden = false;
  }
  window.addEventListener("error", function (event) { fail("page", event.error || event.message); });

  function el(name, attrs, text) {
    const node = document.createElementNS(SVG, name);
    for (const key in attrs) node.setAttribute(key, attrs[key]);
    if (text !== undefined) node.textContent = text;
    return node;
  }
  function html(name, text, cls) {
    const node = document.createElement(name);
    if (text !== undefined) node.textContent = text;
    if (cls) node.className = cls;
    return node;
  }
  function tip(node, text) { node.appendChild(el("title", {}, text)); return node; }
  function num(value) {
    if (typeof value !== "number") return value === undefined || value === null ? "" : String(value);
    if (Number.isInteger(value)) return value.toLocaleString("en-US");
    return Math.abs(value) >= 1e4 || (value !== 0 && Math.abs(value) < 1e-3) ? value.toExponential(3) : value.toFixed(4);
  }
  function si(value, unit) {
    const prefixes = [[1e15, "P"], [1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
    for (const [scale, p] of prefixes) if (Math.abs(value) >= scale) return (value / scale).toPrecision(3) + " " + p + unit;
    return value.toPrecision(3) + " " + unit;
  }
  function seconds(value) {
    for (const [scale, unit] of [[1, "s"], [1e-3, "ms"], [1e-6, "us"], [1e-9, "ns"]]) {
      if (value >= scale) return +(value / scale).toPrecision(3) + " " + unit;
    }
    return +(value * 1e12).toPrecision(3) + " ps";
  }
  function bytes(value) {
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (value >= 1024 && i < units.length - 1) value /= 1024, i++;
    return (i === 0 ? value.toString() : value.toFixed(2)) + " " + units[i];
  }
  function heat(fraction) {  // white to dark blue
    const f = Math.max(0, Math.min(1, fraction));
    const c = (a, b) => Math.round(a + (b - a) * f);
    return "rgb(" + c(247, 8) + "," + c(251, 48) + "," + c(255, 107) + ")";
  }
  function done(node) { node.setAttribute("data-rendered", "ok"); }

  function utilization(data, node) {
    const t = data.timeline;
    if (!t) {
      node.appendChild(html("p", "No instruction timeline in this run (tpusim run --no-instructions leaves " +
                                 "report.json's \"ops\" empty), so there is no utilization over time.", "note"));
      return done(node);
    }
    const label = 190, width = 940, plot = width - label - 10, row = 26, top = 8;
    const height = top + row * t.units.length + 36;
    const svg = el("svg", {width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img"});
    const windows = t.units.length ? t.units[0].utilization.length : 0;
    const x = (cycle) => label + plot * cycle / t.total_cycles;
    t.units.forEach(function (unit, u) {
      const y0 = top + u * row;
      svg.appendChild(el("text", {x: label - 6, y: y0 + row * 0.65, "text-anchor": "end", class: "label"}, unit.name));
      svg.appendChild(el("rect", {x: label, y: y0 + 2, width: plot, height: row - 4, class: "lane"}));
      unit.utilization.forEach(function (value, w) {
        const start = w * t.window_cycles, end = Math.min(t.total_cycles, start + t.window_cycles);
        const h = (row - 4) * value;
        if (h <= 0) return;
        svg.appendChild(tip(el("rect", {x: x(start), y: y0 + row - 2 - h, width: Math.max(0.5, x(end) - x(start)),
                                        height: h, fill: heat(0.35 + 0.65 * value)}),
                            unit.name + " cycles " + start + "-" + end + ": " + (100 * value).toFixed(1) + "% busy"));
      });
    });
    const axisY = top + row * t.units.length + 4;
    svg.appendChild(el("line", {x1: label, x2: label + plot, y1: axisY, y2: axisY, class: "axis"}));
    const stepS = t.total_cycles / t.clock_hz;
    const [scale, unit] = stepS >= 1 ? [1, "s"] : stepS >= 1e-3 ? [1e3, "ms"] : stepS >= 1e-6 ? [1e6, "us"] : [1e9, "ns"];
    for (let i = 0; i <= 5; i++) {
      const cycle = t.total_cycles * i / 5;
      svg.appendChild(el("text", {x: x(cycle), y: axisY + 14, "text-anchor": i === 0 ? "start" : i === 5 ? "end" : "middle",
                                  class: "tick"}, Number((cycle / t.clock_hz * scale).toPrecision(3)) + " " + unit));
    }
    svg.appendChild(el("text", {x: label + plot / 2, y: axisY + 30, "text-anchor": "middle", class: "tick"},
                       windows + " windows of " + t.window_cycles + " cycles; bar height = share of the window busy"));
    node.appendChild(svg);
    done(node);
  }

  function roofline(data, node) {
    const r = data.roofline;
    const points = r.ops.concat(r.step.hbm_bytes > 0 ? [r.step] : []);
    const width = 720, height = 440, left = 70, right = 20, top = 20, bottom = 50;
    let xmin = r.ridge / 10, xmax = r.ridge * 10, ymax = r.mxu_flops_per_s * 2, ymin = r.mxu_flops_per_s / 1e4;
    for (const p of points) {
      xmin = Math.min(xmin, p.intensity / 2), xmax = Math.max(xmax, p.intensity * 2);
      if (p.flops_per_s > 0) ymin = Math.min(ymin, p.flops_per_s / 2);
    }
    const lx = (v) => left + (width - left - right) * (Math.log10(v) - Math.log10(xmin)) / (Math.log10(xmax) - Math.log10(xmin));
    const ly = (v) => height - bottom - (height - top - bottom) * (Math.log10(v) - Math.log10(ymin)) / (Math.log10(ymax) - Math.log10(ymin));
    const svg = el("svg", {width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img"});
    svg.appendChild(el("rect", {x: left, y: top, width: width - left - right, height: height - top - bottom, class: "frame"}));
    for (let e = Math.ceil(Math.log10(xmin)); e <= Math.log10(xmax); e++) {
      svg.appendChild(el("line", {x1: lx(10 ** e), x2: lx(10 ** e), y1: top, y2: height - bottom, class: "grid"}));
      svg.appendChild(el("text", {x: lx(10 ** e), y: height - bottom + 14, "text-anchor": "middle", class: "tick"}, "1e" + e));
    }
    for (let e = Math.ceil(Math.log10(ymin)); e <= Math.log10(ymax); e++) {
      svg.appendChild(el("line", {x1: left, x2: width - right, y1: ly(10 ** e), y2: ly(10 ** e), class: "grid"}));
      svg.appendChild(el("text", {x: left - 4, y: ly(10 ** e) + 4, "text-anchor": "end", class: "tick"}, si(10 ** e, "")));
    }
    svg.appendChild(el("text", {x: (left + width - right) / 2, y: height - 12, "text-anchor": "middle", class: "label"},
                       "arithmetic intensity (flops per HBM byte)"));
    svg.appendChild(el("text", {x: 14, y: (top + height - bottom) / 2, "text-anchor": "middle", class: "label",
                                transform: "rotate(-90 14 " + (top + height - bottom) / 2 + ")"}, "FLOP/s achieved over the op's span"));
    function roof(peak, cls, name) {  // the HBM slope up to the peak, then flat
      const knee = peak / r.hbm_bytes_per_s;
      const x0 = xmin, y0 = Math.max(ymin, x0 * r.hbm_bytes_per_s);
      const start = y0 === ymin ? ymin / r.hbm_bytes_per_s : x0;
      svg.appendChild(tip(el("polyline", {points: [lx(start), ly(y0), lx(knee), ly(peak), lx(xmax), ly(peak)].join(","),
                                          class: cls}), name + " roof " + si(peak, "FLOP/s")));
      svg.appendChild(el("text", {x: lx(xmax) - 4, y: ly(peak) - 5, "text-anchor": "end", class: "tick"}, name + " " + si(peak, "FLOP/s")));
    }
    roof(r.mxu_flops_per_s, "roof", "MXU");
    roof(r.vpu_flops_per_s, "roof vpu", "VPU");
    for (const p of points) {
      if (!(p.flops_per_s > 0)) continue;
      const step = p.kind === "step";
      svg.appendChild(tip(el(step ? "rect" : "circle", step ? {x: lx(p.intensity) - 6, y: ly(p.flops_per_s) - 6, width: 12, height: 12, class: "step"}
                                                            : {cx: lx(p.intensity), cy: ly(p.flops_per_s), r: 4, class: "point " + p.kind}),
                          p.op + (p.type ? " (" + p.type + ")" : "") + ": " + p.intensity.toPrecision(3) + " flops/B, " +
                          si(p.flops_per_s, "FLOP/s")));
    }
    node.appendChild(svg);
    const legend = "Circles: ops (blue: MXU, orange: VPU only); square: the whole step. Roofs: MXU and VPU peaks " +
                   "with the HBM bandwidth slope of " + si(r.hbm_bytes_per_s, "B/s") + "; ridge point " + r.ridge.toPrecision(4) +
                   " flops per byte. Not placed: " + r.ops_without_hbm_bytes + " ops with flops but no HBM traffic, " +
                   r.ops_without_flops + " ops that only move data.";
    node.appendChild(html("p", legend, "note"));
    done(node);
  }

  function table(rows, columns, node) {
    const tbl = html("table");
    const head = html("tr");
    let order = rows.slice();
    function fill() {
      while (tbl.rows.length > 1) tbl.deleteRow(1);
      for (const row of order) {
        const tr = html("tr");
        for (const c of columns) tr.appendChild(html("td", c === "bound_share" ? (100 * row[c]).toFixed(1) + "%" : num(row[c]),
                                                     typeof row[c] === "number" ? "n" : ""));
        tbl.appendChild(tr);
      }
    }
    columns.forEach(function (c) {
      const th = html("th", c);
      th.title = "click to sort";
      th.addEventListener("click", function () {
        order = rows.slice().sort((a, b) => typeof a[c] === "number" ? b[c] - a[c] : String(a[c]).localeCompare(String(b[c])));
        fill();
      });
      head.appendChild(th);
    });
    tbl.appendChild(head);
    fill();
    node.appendChild(tbl);
    done(node);
  }

  function memory(data, node) {
    const m = data.memory;
    node.appendChild(html("p", "HBM: the step needs " + bytes(m.peak_bytes) + " of " + bytes(m.capacity_bytes) + " (" +
                               (100 * m.peak_bytes / m.capacity_bytes).toPrecision(3) + "%); VMEM: at most " +
                               bytes(m.vmem_peak_bytes) + " of " + bytes(m.vmem_capacity_bytes) + " per core, in " +
                               m.vmem_peak_op + "."));
    const hbm = [["HBM peak (planned)", m.peak_bytes], ["most bytes live at once", m.live_peak_bytes],
                 ["persistent (inputs, weights, outputs)", m.persistent_bytes], ["every tensor, no reuse", m.unplanned_bytes],
                 ["scratch", m.scratch_bytes]];
    for (const role in m.bytes_by_role) hbm.push(["tensors: " + role, m.bytes_by_role[role]]);
    const vmem = [["VMEM per core", m.vmem_capacity_bytes], ["VMEM peak", m.vmem_peak_bytes]];
    const bars = hbm.concat(vmem);
    const label = 260, width = 940, row = 22, plot = width - label - 120;
    const svg = el("svg", {width: width, height: row * bars.length + 10, role: "img"});
    const hbmMax = Math.max(1, ...hbm.map((b) => b[1]));
    const vmemMax = Math.max(1, ...vmem.map((b) => b[1]));
    bars.forEach(function (b, i) {
      const isVmem = i >= hbm.length, scale = isVmem ? vmemMax : hbmMax;
      const y = 4 + i * row;
      svg.appendChild(el("text", {x: label - 6, y: y + 14, "text-anchor": "end", class: "label"}, b[0]));
      svg.appendChild(tip(el("rect", {x: label, y: y + 3, width: Math.max(1, plot * b[1] / scale), height: row - 6,
                                      class: isVmem ? "bar vmem" : "bar"}), b[1] + " bytes"));
      svg.appendChild(el("text", {x: label + plot * b[1] / scale + 6, y: y + 14, class: "tick"}, bytes(b[1])));
    });
    node.appendChild(svg);
    node.appendChild(html("p", "HBM bars share one scale (the largest of them), VMEM bars another.", "note"));
    memoryOverTime(data, node);
    done(node);
  }

  function memoryOverTime(data, node) {
    const t = data.memory_timeline, m = data.memory;
    if (!t) {
      node.appendChild(html("p", "No memory_timeline in this report.json, so no memory over time.", "note"));
      return;
    }
    const width = 940, height = 220, left = 90, right = 20, top = 14, bottom = 34, plot = width - left - right;
    const windows = t.window_peak_bytes.length;
    const ymax = Math.max(1, m.peak_bytes, t.peak_bytes) * 1.1;
    const y = (v) => height - bottom - (height - top - bottom) * v / ymax;
    const svg = el("svg", {width: width, height: height, role: "img", class: "memory-over-time"});
    svg.appendChild(el("rect", {x: left, y: top, width: plot, height: height - top - bottom, class: "frame"}));
    t.window_peak_bytes.forEach(function (value, w) {
      const x0 = left + plot * w / windows, x1 = left + plot * (w + 1) / windows;
      svg.appendChild(tip(el("rect", {x: x0, y: y(value), width: Math.max(0.5, x1 - x0 - 0.5), height: y(0) - y(value), class: "bar"}),
                          "cycles " + w * t.window_cycles + "-" + (w + 1) * t.window_cycles + ": at most " + bytes(value)));
    });
    for (const [value, name] of [[m.peak_bytes, "plan peak"], [m.persistent_bytes, "persistent"]]) {
      svg.appendChild(el("line", {x1: left, x2: left + plot, y1: y(value), y2: y(value), class: "roof vpu"}));
      svg.appendChild(el("text", {x: left + plot - 4, y: y(value) - 4, "text-anchor": "end", class: "tick"}, name + " " + bytes(value)));
    }
    for (let i = 0; i <= 4; i++) {
      svg.appendChild(el("text", {x: left - 6, y: y(ymax * i / 5) + 4, "text-anchor": "end", class: "tick"}, bytes(Math.round(ymax * i / 5))));
    }
    svg.appendChild(el("text", {x: left + plot / 2, y: height - 10, "text-anchor": "middle", class: "tick"},
                       windows + " windows of " + t.window_cycles + " cycles; bar = the most HBM bytes held in the window"));
    node.appendChild(html("h3", "HBM held over the step"));
    node.appendChild(svg);
    node.appendChild(html("p", "From the memory plan's addresses and the timeline: a tensor holds its bytes from the start of the op " +
                               "that writes it to the end of the last op that reads it; inputs, weights and optimizer state " +
                               "throughout. Peak " + bytes(t.peak_bytes) + " at cycle " + t.peak_cycle + " (the plan's most live at " +
                               "once: " + bytes(m.live_peak_bytes) + ", at " + m.live_peak_op + ").", "note"));
  }

  // Rows are sources; columns destinations, or (past 64 chips, where a chip-by-chip matrix
  // is too large to read) link dimensions. A cell is the busiest link it stands for.
  function interconnect(data, node) {
    const links = data.interconnect;
    if (!links || links.length === 0) {
      node.appendChild(html("p", "No interconnect in this run.", "note"));
      return done(node);
    }
    const order = (a, b) => a.localeCompare(b, "en", {numeric: true});
    const chips = [];
    for (const l of links) for (const end of [String(l.src), String(l.dst)]) if (chips.indexOf(end) < 0) chips.push(end);
    chips.sort(order);
    const byDim = chips.length > 64;
    const columns = byDim ? Array.from(new Set(links.map((l) => String(l.dim)))).sort(order) : chips;
    const cellW = byDim ? 40 : Math.max(6, Math.min(36, Math.floor(640 / chips.length)));
    const cellH = byDim ? Math.max(2, Math.min(20, Math.floor(800 / chips.length))) : cellW;
    const label = 70, legend = 40;
    const width = label + cellW * columns.length + 10, height = label + cellH * chips.length + legend;
    const svg = el("svg", {width: Math.max(width, 320), height: height, role: "img"});
    const cells = {};
    for (const l of links) {
      const key = String(l.src) + "\u0000" + (byDim ? String(l.dim) : String(l.dst));
      const c = cells[key] || (cells[key] = {utilization: 0, bytes: 0, links: []});
      c.utilization = Math.max(c.utilization, l.utilization), c.bytes += l.bytes;
      c.links.push(l.src + "->" + l.dst + " (" + l.dim + ") " + (100 * l.utilization).toFixed(1) + "%" +
                   (l.stalled_cycles ? ", stalled " + l.stalled_cycles + " cycles" : ""));
    }
    const every = (size) => Math.max(1, Math.ceil(12 / size));  // label every n-th row or column
    chips.forEach(function (name, i) {
      if (i % every(cellH) === 0) {
        svg.appendChild(el("text", {x: label - 4, y: label + i * cellH + cellH / 2 + 4, "text-anchor": "end", class: "tick"}, name));
      }
    });
    columns.forEach(function (name, i) {
      if (i % every(cellW) !== 0) return;
      const x = label + i * cellW + cellW / 2;
      svg.appendChild(el("text", {x: x, y: label - 4, class: "tick", transform: "rotate(-60 " + x + " " + (label - 4) + ")"}, name));
    });
    for (const key in cells) {
      const [src, column] = key.split("\u0000"), c = cells[key];
      svg.appendChild(tip(el("rect", {x: label + columns.indexOf(column) * cellW, y: label + chips.indexOf(src) * cellH,
                                      width: Math.max(1, cellW - 1), height: Math.max(1, cellH - 1), fill: heat(c.utilization),
                                      class: "cell"}),
                          c.links.join("\n") + "\n" + bytes(c.bytes)));
    }
    const y0 = label + cellH * chips.length + 12;
    for (let i = 0; i <= 10; i++) {
      svg.appendChild(el("rect", {x: label + i * 20, y: y0, width: 20, height: 10, fill: heat(i / 10)}));
    }
    svg.appendChild(el("text", {x: label - 4, y: y0 + 9, "text-anchor": "end", class: "tick"}, "0%"));
    svg.appendChild(el("text", {x: label + 11 * 20 + 4, y: y0 + 9, class: "tick"}, "100% busy"));
    node.appendChild(svg);
    node.appendChild(html("p", "Rows: source chip; columns: " + (byDim ? "link dimension" : "destination chip") +
                               "; darker is busier (the busiest link a cell stands for; hover for each). " + links.length +
                               " directed links between " + chips.length + " chips.", "note"));
    done(node);
  }

  // Simulated time against the reference's measured time per matched op, log-log, with
  // the line where they are equal and the line of the matched ops' overall ratio.
  function comparePlot(data, node) {
    const c = data.compare;
    const ops = c.per_op.filter((o) => o.status === "matched" && o.sim_time_s > 0 && o.ref_time_s > 0);
    const s = c.summary;
    const head = "Reference: " + c.backend + " (" + c.device + "), numerics " + c.reference_numerics + "; " + c.timing + ". " +
                 s.matched + " ops matched, " + s.simulator_only + " simulator only, " + s.reference_only +
                 " reference only. Step: measured / simulated = " + c.step_time_ratio.toPrecision(4) + ".";
    node.appendChild(html("p", head, "note"));
    if (ops.length === 0) {
      node.appendChild(html("p", "No op has a time on both sides.", "note"));
      return done(node);
    }
    const width = 560, height = 440, left = 90, right = 20, top = 20, bottom = 50;
    let lo = Infinity, hi = 0;
    for (const o of ops) lo = Math.min(lo, o.sim_time_s, o.ref_time_s), hi = Math.max(hi, o.sim_time_s, o.ref_time_s);
    lo /= 2, hi *= 2;
    const span = Math.log10(hi) - Math.log10(lo);
    const lx = (v) => left + (width - left - right) * (Math.log10(v) - Math.log10(lo)) / span;
    const ly = (v) => height - bottom - (height - top - bottom) * (Math.log10(v) - Math.log10(lo)) / span;
    const svg = el("svg", {width: width, height: height, viewBox: "0 0 " + width + " " + height, role: "img"});
    svg.appendChild(el("rect", {x: left, y: top, width: width - left - right, height: height - top - bottom, class: "frame"}));
    for (let e = Math.ceil(Math.log10(lo)); e <= Math.log10(hi); e++) {
      svg.appendChild(el("line", {x1: lx(10 ** e), x2: lx(10 ** e), y1: top, y2: height - bottom, class: "grid"}));
      svg.appendChild(el("line", {x1: left, x2: width - right, y1: ly(10 ** e), y2: ly(10 ** e), class: "grid"}));
      svg.appendChild(el("text", {x: lx(10 ** e), y: height - bottom + 14, "text-anchor": "middle", class: "tick"}, seconds(10 ** e)));
      svg.appendChild(el("text", {x: left - 4, y: ly(10 ** e) + 4, "text-anchor": "end", class: "tick"}, seconds(10 ** e)));
    }
    svg.appendChild(tip(el("line", {x1: lx(lo), y1: ly(lo), x2: lx(hi), y2: ly(hi), class: "roof vpu"}), "measured = simulated"));
    const k = s.matched_ratio;
    if (k > 0) {  // measured = k x simulated, clipped to the frame
      const x0 = Math.max(lo, lo / k), x1 = Math.min(hi, hi / k);
      if (x1 > x0) svg.appendChild(tip(el("line", {x1: lx(x0), y1: ly(k * x0), x2: lx(x1), y2: ly(k * x1), class: "roof"}),
                                       "the matched ops' ratio, " + k.toPrecision(4)));
    }
    for (const o of ops) {
      svg.appendChild(tip(el("circle", {cx: lx(o.sim_time_s), cy: ly(o.ref_time_s), r: 4, class: "point mxu"}),
                          o.op + " (" + o.type + "): simulated " + seconds(o.sim_time_s) + ", measured " + seconds(o.ref_time_s) +
                          ", ratio " + o.ratio.toPrecision(4)));
    }
    svg.appendChild(el("text", {x: (left + width - right) / 2, y: height - 12, "text-anchor": "middle", class: "label"},
                       "simulated time of the op"));
    svg.appendChild(el("text", {x: 14, y: (top + height - bottom) / 2, "text-anchor": "middle", class: "label",
                                transform: "rotate(-90 14 " + (top + height - bottom) / 2 + ")"}, "measured time of the op"));
    node.appendChild(svg);
    node.appendChild(html("p", "One circle per op both sides ran; dashed: measured = simulated; solid: the matched ops' " +
                               "overall ratio (summed measured over summed simulated time).", "note"));
    done(node);
  }

  function numericsTable(data, node) {
    const n = data.compare.numerics;
    if (!n) {
      node.appendChild(html("p", "The simulation ran without --functional: no outputs to compare.", "note"));
      return done(node);
    }
    table(n.outputs, n.columns, node);
  }

  function verdict(data, node) {
    node.appendChild(html("p", data.verdict.headline, "headline"));
    const list = html("ul");
    for (const line of data.verdict.evidence) list.appendChild(html("li", line));
    node.appendChild(list);
    done(node);
  }

  let data = null;
  try {
    data = JSON.parse(document.getElementById("report-data").textContent);
  } catch (error) {
    fail("report data", error);
  }
  const sections = [
    ["verdict", verdict], ["utilization-plot", utilization], ["roofline-plot", roofline],
    ["per-op-table", (d, n) => table(d.per_op, d.per_op_columns, n)],
    ["layers-table", (d, n) => table(d.layers, d.layer_columns, n)],
    ["memory-plot", memory], ["interconnect-plot", interconnect]];
  if (data && data.compare) {
    sections.push(["compare-plot", comparePlot], ["compare-table", (d, n) => table(d.compare.per_op, d.compare.per_op_columns, n)],
                  ["numerics-table", numericsTable]);
  }
  for (const [id, draw] of sections) {
    try {
      if (data) draw(data, document.getElementById(id));
    } catch (error) {
      fail(id, error);
    }
  }
  document.body.setAttribute("data-rendered", errors.length === 0 && data ? "ok" : "error");
})();

// accelmatrix dashboard: draws every table and chart from the run's embedded data
// (coordinator/dashboard_data.h documents the schema). No network, no library: the page must
// open from file:// anywhere. After drawing, <body data-am-state> is "ready" or "error".
(function () {
  'use strict';

  const PAGE_SIZE = 100;
  const MAX_MODEL_CHARTS = 24;   // accuracy charts drawn at once
  const MAX_BARS = 40;           // latency bars per class before bars become per-precision medians
  const RATING_ORDER = ['excellent', 'good', 'baseline', 'moderate', 'noisy', 'no_baseline', 'accuracy_only', 'poor',
                        'unsupported', 'failed', 'pending', 'not_run'];
  const RATING_LABEL = {excellent: 'Excellent', good: 'Good', baseline: 'Baseline', moderate: 'Moderate',
                        poor: 'Poor', failed: '✗ failed', unsupported: '✗ unsupported',
                        no_baseline: 'measured, no baseline', accuracy_only: 'accuracy only', not_run: 'not run',
                        noisy: '≈ noisy', pending: '⏳ pending'};
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const SERIES_COLOURS = ['#3b6fb6', '#c4314b', '#1a7f37', '#d4a72c', '#7a4fb6', '#e07b39', '#2a9d8f', '#8c959f'];

  const state = {data: null, jobs: [], classLabel: {}, filters: {}, cellFilter: null, pages: {}, sort: {}};

  function fail(err) {
    document.body.dataset.amState = 'error';
    const box = document.getElementById('am-error');
    box.hidden = false;
    box.textContent = 'The dashboard could not be drawn: ' + (err && err.stack ? err.stack : String(err));
  }
  window.addEventListener('error', function (ev) { fail(ev.error || ev.message); });
  window.addEventListener('unhandledrejection', function (ev) { fail(ev.reason); });

  // ---- helpers ------------------------------------------------------------------------------
  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === 'text') node.textContent = v;
      else if (k === 'class') node.className = v;
      else if (k.startsWith('on')) node.addEventListener(k.slice(2), v);
      else node.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of [].concat(children || [])) {
      if (c === null || c === undefined) continue;
      node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
  }
  function svg(tag, attrs, children) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined) continue;
      if (k === 'text') node.textContent = v; else node.setAttribute(k, String(v));
    }
    for (const c of [].concat(children || [])) if (c) node.append(c);
    return node;
  }
  function fmt(v, digits) {
    if (v === null || v === undefined || Number.isNaN(v)) return '';
    const d = digits === undefined ? 3 : digits;
    if (v !== 0 && (Math.abs(v) >= 1e6 || Math.abs(v) < 1e-3)) return v.toExponential(2);
    return Number(v.toPrecision(Math.max(d, 1))).toString();
  }
  function fmtBytes(b) {
    if (b === null || b === undefined) return '';
    const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0, v = b;
    while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return (i === 0 ? v.toString() : v.toFixed(v < 10 ? 2 : 1)) + ' ' + units[i];
  }
  // A noisy cell says where its speed-up lies ("≈ 1.15–1.62×", from the JSON report's label).
  function ratingText(c) { return c.rating === 'noisy' && c.rating_label ? c.rating_label : RATING_LABEL[c.rating]; }
  function speedupText(c) {
    if (c.speedup === null || c.speedup === undefined) return '';
    return fmt(c.speedup) + '×' + (c.speedup_ci_low !== null && c.speedup_ci_low !== undefined
      ? ' [' + fmt(c.speedup_ci_low) + '–' + fmt(c.speedup_ci_high) + ']' : '');
  }
  function busyBadge(c) {
    if (!c.host_busy && !c.baseline_host_busy) return null;
    return el('span', {class: 'badge busy', title: c.host_busy ? c.host_busy_jobs + ' job(s) ran on a busy host'
                                                              : 'the baseline ran on a busy host',
                       text: 'busy host'});
  }
  function ratingRank(r) { const i = RATING_ORDER.indexOf(r); return i < 0 ? RATING_ORDER.length : i; }
  function shape(j) { return 'b' + (j.batch === null ? '?' : j.batch) + ' s' + (j.seq_len === null ? '?' : j.seq_len); }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  function sectionBody(id) { return clear(document.querySelector('#' + id + ' .body')); }
  function unique(values) { return Array.from(new Set(values)); }

  // ---- data ---------------------------------------------------------------------------------
  async function loadData() {
    const node = document.getElementById('am-data');
    const text = node.textContent.trim();
    node.remove();  // the 8 MB of a 100k-job run need not stay in the DOM once read
    const raw = atob(text);
    const bytes = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
    return JSON.parse(await new Response(stream).text());
  }

  // Jobs come by column with interned strings; the page works on one object per job, built as
  // one literal so every job shares one object shape (100k of them stay fast to filter).
  function decodeJobs(d) {
    const s = d.strings, J = d.jobs, jobs = new Array(d.job_count);
    for (let i = 0; i < d.job_count; i++) {
      const latency = J.latency[i];
      jobs[i] = {
        index: i, id: J.id[i], model: s[J.model[i]], architecture: s[J.architecture[i]], backend: s[J.backend[i]],
        precision: s[J.precision[i]], batch: J.batch[i], seq_len: J.seq_len[i], mode: s[J.mode[i]],
        status: s[J.status[i]], reason: s[J.reason[i]], attempt: J.attempt[i], attempts: J.attempts[i],
        worker: s[J.worker[i]], hardware_class: s[J.hardware_class[i]], device: s[J.device[i]], build: s[J.build[i]],
        seed: J.seed[i], scaled: J.scaled[i], start_s: J.start_s[i], wall_s: J.wall_s[i], latency: latency,
        histogram: J.histogram[i], tokens_per_s: J.tokens_per_s[i], ttft_ms: J.ttft_ms[i],
        decode_tokens_per_s: J.decode_tokens_per_s[i], nmse: J.nmse[i], cosine: J.cosine[i], top1: J.top1[i],
        kl: J.kl[i], peak_rss_bytes: J.peak_rss_bytes[i], noisy: J.noisy[i], cell: J.cell[i],
        host: J.host ? J.host[i] : null, host_busy: J.host_busy ? J.host_busy[i] : null,
        median: latency ? latency[3] : null, p90: latency ? latency[6] : null,
      };
    }
    return jobs;
  }

  // Cells come by column too; the page works on one object per cell.
  function decodeCells(d) {
    const C = d.cells, keys = Object.keys(C), cells = new Array(d.cell_count);
    for (let i = 0; i < d.cell_count; i++) {
      const cell = {};
      for (const k of keys) cell[k] = C[k][i];
      cells[i] = cell;
    }
    return cells;
  }

  // ---- filters ------------------------------------------------------------------------------
  const FILTERS = [
    {key: 'backend', label: 'Backend'},
    {key: 'hardware_class', label: 'Hardware class'},
    {key: 'precision', label: 'Precision'},
    {key: 'status', label: 'Status'},
    {key: 'architecture', label: 'Architecture'},
  ];
  function jobMatches(j) {
    for (const f of FILTERS) {
      const want = state.filters[f.key];
      if (want && j[f.key] !== want) return false;
    }
    return true;
  }
  function cellMatches(c) {
    const f = state.filters;
    if (f.backend && c.backend !== f.backend) return false;
    if (f.precision && c.precision !== f.precision) return false;
    if (f.architecture && c.architecture !== f.architecture) return false;
    if (f.status && c.status !== f.status) return false;
    if (f.hardware_class && c.hardware_classes.indexOf(f.hardware_class) < 0) return false;
    return true;
  }
  function drawFilters() {
    const form = clear(document.getElementById('am-filters'));
    for (const f of FILTERS) {
      const values = unique(state.jobs.map(function (j) { return j[f.key]; }).filter(function (v) { return v; }));
      const select = el('select', {name: f.key, 'data-filter': f.key, onchange: function (ev) {
        state.filters[f.key] = ev.target.value;
        state.pages = {};
        drawFiltered();
      }}, [el('option', {value: '', text: 'all'})]);
      for (const v of values) {
        select.append(el('option', {value: v, text: f.key === 'hardware_class' ? (state.classLabel[v] || v) : v}));
      }
      form.append(el('label', {}, [f.label, select]));
    }
    form.append(el('button', {type: 'button', text: 'Clear filters', onclick: function () {
      state.filters = {};
      state.cellFilter = null;
      state.pages = {};
      for (const s of form.querySelectorAll('select')) s.value = '';
      drawFiltered();
    }}));
  }

  // ---- header -------------------------------------------------------------------------------
  function drawHeader(d) {
    const meta = clear(document.getElementById('am-meta'));
    const r = d.run;
    const items = [['Run', r.run_id], ['Plan', r.plan_name + (r.plan_path ? ' (' + r.plan_path + ')' : '')],
                   ['Started', r.created_at], ['Finished', r.finished_at || 'still running'],
                   ['Builds', d.builds.join(', ')], ['Workers', d.workers.length],
                   ['Hardware classes', d.classes.length], ['Jobs', d.summary.total]];
    if (r.description) items.push(['About', r.description]);
    meta.append(el('div', {class: 'meta-grid'}, items.map(function (it) {
      return el('span', {}, [it[0] + ': ', el('b', {text: String(it[1])})]);
    })));
    const chips = el('div', {class: 'chips', id: 'am-summary', 'data-total': d.summary.total,
                             'data-terminal': d.summary.terminal});
    const counts = Object.assign({}, d.summary.by_status, d.summary.by_state);
    for (const [k, n] of Object.entries(counts)) {
      chips.append(el('span', {class: 'chip', 'data-status': k, 'data-count': n, text: k + ' ' + n}));
    }
    const scaled = state.jobs.filter(function (j) { return j.scaled; }).length;
    const noisy = state.jobs.filter(function (j) { return j.noisy; }).length;
    const software = d.classes.filter(function (c) { return c.software; }).length;
    if (scaled) chips.append(el('span', {class: 'badge', text: scaled + ' job(s) on scaled-down models'}));
    if (software) chips.append(el('span', {class: 'badge software', text: software + ' software device class(es)'}));
    if (noisy) chips.append(el('span', {class: 'badge noisy', text: noisy + ' noisy measurement(s)'}));
    const busy = state.jobs.filter(function (j) { return j.host_busy === 1; }).length;
    if (busy) chips.append(el('span', {class: 'badge busy', id: 'am-busy', 'data-count': busy,
                                       text: busy + ' perf job(s) on a busy host'}));
    const noisyCells = d.cells.filter(function (c) { return c.rating === 'noisy'; }).length;
    if (noisyCells) chips.append(el('span', {class: 'badge noisy', text: noisyCells + ' cell(s) rated ≈ noisy'}));
    meta.append(chips);
    document.getElementById('am-footer').textContent = 'Generated ' + d.generated_at + ' by accelmatrix from ' +
      d.summary.total + ' stored job(s) of run ' + r.run_id + '. Every figure comes from a stored result.';
  }

  function legend(d) {
    const rules = d.rating_rules;
    const box = el('div', {class: 'legend'});
    const notes = {excellent: '≥ ' + rules.excellent_min_speedup + '×', good: '≥ ' + rules.good_min_speedup + '×',
                   moderate: '≥ ' + rules.moderate_min_speedup + '×', poor: '< ' + rules.moderate_min_speedup + '×',
                   baseline: rules.baseline_backend + ' ' + rules.baseline_precision,
                   noisy: 'the ' + Math.round(rules.speedup_confidence * 100) + '% interval crosses a threshold'};
    for (const r of RATING_ORDER) {
      box.append(el('span', {class: 'r-' + r, text: RATING_LABEL[r] + (notes[r] ? ' (' + notes[r] + ')' : '')}));
    }
    return box;
  }

  // ---- overview heatmap ---------------------------------------------------------------------
  function drawOverview(d) {
    const body = sectionBody('overview');
    const f = state.filters;
    const archs = unique(d.overview.map(function (o) { return o.architecture; }))
      .filter(function (a) { return !f.architecture || a === f.architecture; });
    // A column per backend × hardware class (the matrix's columns), grouped by backend.
    const backends = unique(d.overview.map(function (o) { return o.backend; }))
      .filter(function (b) { return !f.backend || b === f.backend; });
    const columns = [];
    for (const b of backends) {
      for (const cls of unique(d.overview.filter(function (o) { return o.backend === b; })
                                 .map(function (o) { return o.hardware_class; }))) {
        if (f.hardware_class && cls !== f.hardware_class) continue;
        columns.push({backend: b, hardware_class: cls});
      }
    }
    const head = el('tr', {}, [el('th', {text: 'architecture'})]);
    for (const c of columns) {
      const label = c.hardware_class ? (state.classLabel[c.hardware_class] || c.hardware_class) : 'unplaced';
      head.append(el('th', {title: c.hardware_class || 'jobs that reached no hardware'},
        [c.backend, el('small', {}, [el('br'), label])]));
    }
    const table = el('table', {class: 'heat', id: 'overview-table'}, [el('thead', {}, head)]);
    const tbody = el('tbody');
    for (const a of archs) {
      const tr = el('tr', {}, [el('th', {text: a})]);
      for (const c of columns) {
        const b = c.backend;
        const o = d.overview.find(function (x) {
          return x.architecture === a && x.backend === b && x.hardware_class === c.hardware_class;
        });
        if (!o) { tr.append(el('td', {class: 'cell r-not_run', text: '—'})); continue; }
        const title = o.support + '; ' + o.working + ' working (' + o.degraded + ' degraded), ' + o.failed +
          ' failed, ' + o.unsupported + ' unsupported, ' + o.not_run + ' not run, ' + o.pending + ' pending' +
          (o.best_speedup !== null ? '; best ' + fmt(o.best_speedup) + '× (' + o.best_model + ' ' + o.best_precision + ')' : '');
        const filter = {architecture: a, backend: b};
        if (c.hardware_class) filter.hardware_class = c.hardware_class;
        tr.append(el('td', {class: 'cell r-' + o.best_rating, title: title, 'data-architecture': a, 'data-backend': b,
                            'data-hardware-class': c.hardware_class,
                            'data-working': o.working, 'data-cells': o.cells, 'data-rating': o.best_rating,
                            onclick: function () { setFilter(filter); }},
          [o.working + '/' + o.cells, el('small', {text: RATING_LABEL[o.best_rating] +
            (o.best_speedup !== null ? ' · ' + fmt(o.best_speedup) + '×' : '')})]));
      }
      tbody.append(tr);
    }
    table.append(tbody);
    body.append(table, legend(d));
  }

  function setFilter(values) {
    Object.assign(state.filters, values);
    for (const [k, v] of Object.entries(values)) {
      const s = document.querySelector('select[data-filter="' + k + '"]');
      if (s) s.value = v;
    }
    state.pages = {};
    drawFiltered();
    document.getElementById('cells').scrollIntoView();
  }

  // ---- quantization matrix ------------------------------------------------------------------
  // A cell of an external command ([[commands]]) is named by its command as well: its precision
  // is the command's own label, often "external" (which has no bits per weight: bits is null).
  function precisionLabel(c) { return c.command ? c.precision + ' · ' + c.command : c.precision; }
  function drawQuantization(d) {
    const body = sectionBody('quantization');
    const cells = d.cells.filter(cellMatches);
    const groups = unique(d.precisions.map(function (p) { return p.group; }))
      .filter(function (g) { return cells.some(function (c) { return c.group === g; }); });
    const byRow = new Map();
    for (const c of cells) {
      const key = c.model + '\u0000' + c.backend + '\u0000' + c.hardware_class;
      if (!byRow.has(key)) byRow.set(key, {model: c.model, backend: c.backend, cls: c.hardware_class, groups: {}});
      const row = byRow.get(key);
      (row.groups[c.group] = row.groups[c.group] || []).push(c);
    }
    const columns = [{key: 'model', label: 'model', value: function (r) { return r.model; }},
                     {key: 'backend', label: 'backend', value: function (r) { return r.backend; }},
                     {key: 'class', label: 'hardware class',
                      value: function (r) { return r.cls ? (state.classLabel[r.cls] || r.cls) : 'unplaced'; }}];
    for (const g of groups) {
      columns.push({key: 'g-' + g, label: g,
        value: function (r) {
          const list = r.groups[g] || [];
          return list.length ? Math.min.apply(null, list.map(function (c) { return ratingRank(c.rating); })) : null;
        },
        cell: function (r) {
          const td = el('span');
          for (const c of r.groups[g] || []) {
            td.append(el('span', {class: 'q-item r-' + c.rating, 'data-model': c.model, 'data-backend': c.backend,
                                  'data-hardware-class': c.hardware_class,
                                  'data-precision': c.precision, 'data-rating': c.rating,
                                  title: c.reason || (c.speedup !== null ? speedupText(c) + ' vs baseline' : ''),
                                  text: precisionLabel(c) + ' ' + ratingText(c) +
                                    (c.nmse_max !== null ? ' · NMSE ' + fmt(c.nmse_max, 2) : '')}));
          }
          return td;
        }});
    }
    body.append(sortableTable('quantization-table', columns, Array.from(byRow.values())));
  }

  // ---- sortable, paged tables --------------------------------------------------------------
  // columns: [{key, label, num, value(row) -> sortable value, cell(row) -> node or text}]
  // All rows are sorted, then one page of PAGE_SIZE is drawn: a 100k-job run stays responsive.
  // Returns a <div> with the pager (id + '-pager', data-matching = all rows) and the table.
  function sortableTable(id, columns, rows, onRow, attrs) {
    const sort = state.sort[id] || {};
    if (sort.key) {
      const col = columns.find(function (c) { return c.key === sort.key; });
      const dir = sort.dir === 'desc' ? -1 : 1;
      rows = rows.slice().sort(function (a, b) {
        const x = col.value(a), y = col.value(b);
        const xn = x === null || x === undefined || x === '', yn = y === null || y === undefined || y === '';
        if (xn || yn) return xn === yn ? 0 : (xn ? 1 : -1);
        return (x < y ? -1 : x > y ? 1 : 0) * dir;
      });
    }
    const pages = Math.max(1, Math.ceil(rows.length / PAGE_SIZE));
    const page = Math.min(state.pages[id] || 0, pages - 1);
    const wrap = el('div', {class: 'paged', 'data-table': id});
    function redraw() { wrap.replaceWith(sortableTable(id, columns, rows, onRow, attrs)); }
    const head = el('tr', {}, columns.map(function (c) {
      return el('th', {class: 'sortable', 'data-key': c.key, 'data-dir': sort.key === c.key ? sort.dir : null,
                       text: c.label, onclick: function () {
                         const dir = sort.key === c.key && sort.dir === 'asc' ? 'desc' : 'asc';
                         state.sort[id] = {key: c.key, dir: dir};
                         state.pages[id] = 0;
                         redraw();
                       }});
    }));
    const tbody = el('tbody');
    for (const r of rows.slice(page * PAGE_SIZE, (page + 1) * PAGE_SIZE)) {
      const tr = el('tr', Object.assign({class: onRow ? 'clickable' : null}, attrs ? attrs(r) : {}));
      if (onRow) tr.addEventListener('click', function () { onRow(r); });
      for (const c of columns) {
        const v = c.cell ? c.cell(r) : c.value(r);
        tr.append(el('td', {class: c.num ? 'num' : null}, v instanceof Node ? v : (v === null ? '' : String(v))));
      }
      tbody.append(tr);
    }
    if (rows.length > PAGE_SIZE || id === 'jobs-table') {
      wrap.append(el('div', {class: 'pager', id: id + '-pager', 'data-matching': rows.length, 'data-page': page}, [
        el('button', {type: 'button', text: '‹ previous', disabled: page === 0,
                      onclick: function () { state.pages[id] = page - 1; redraw(); }}),
        'page ' + (page + 1) + ' of ' + pages + ' · ' + rows.length + ' row(s)',
        el('button', {type: 'button', text: 'next ›', disabled: page >= pages - 1,
                      onclick: function () { state.pages[id] = page + 1; redraw(); }})]));
    }
    wrap.append(el('table', {id: id}, [el('thead', {}, head), tbody]));
    return wrap;
  }

  function ratingCell(c) {
    return el('span', {}, [el('span', {class: 'q-item r-' + c.rating, text: ratingText(c)}), busyBadge(c)]);
  }

  // ---- cells --------------------------------------------------------------------------------
  function drawCells(d) {
    const body = sectionBody('cells');
    const cells = d.cells.map(function (c, i) { return Object.assign({index: i}, c); }).filter(cellMatches);
    const columns = [
      {key: 'model', label: 'model', value: function (c) { return c.model; },
       cell: function (c) { return el('span', {}, [c.model, c.scaled ? el('span', {class: 'badge', text: 'scaled'}) : null]); }},
      {key: 'architecture', label: 'architecture', value: function (c) { return c.architecture; }},
      {key: 'backend', label: 'backend', value: function (c) { return c.backend; }},
      {key: 'precision', label: 'precision', value: function (c) { return precisionLabel(c); }},
      {key: 'status', label: 'status', value: function (c) { return c.status; }},
      {key: 'rating', label: 'rating', value: function (c) { return ratingRank(c.rating); }, cell: ratingCell},
      {key: 'shape', label: 'shape', value: function (c) { return c.representative_shape ? c.representative_shape.batch * 1e6 + c.representative_shape.seq_len : null; },
       cell: function (c) { return c.representative_shape ? 'b' + c.representative_shape.batch + ' s' + c.representative_shape.seq_len : ''; }},
      {key: 'median', label: 'median ms', num: true, value: function (c) { return c.median_ms; }, cell: function (c) { return fmt(c.median_ms); }},
      {key: 'speedup', label: 'speed-up', num: true, value: function (c) { return c.speedup; }, cell: speedupText},
      {key: 'nmse', label: 'NMSE', num: true, value: function (c) { return c.nmse_max; }, cell: function (c) { return fmt(c.nmse_max, 2); }},
      {key: 'cosine', label: 'cosine', num: true, value: function (c) { return c.cosine_min; }, cell: function (c) { return fmt(c.cosine_min, 6); }},
      {key: 'top1', label: 'top-1', num: true, value: function (c) { return c.top1_min; }, cell: function (c) { return fmt(c.top1_min, 3); }},
      {key: 'peak', label: 'peak RSS', num: true, value: function (c) { return c.peak_rss_max; }, cell: function (c) { return fmtBytes(c.peak_rss_max); }},
      {key: 'jobs', label: 'jobs', num: true, value: function (c) { return c.jobs.length; }},
      {key: 'reason', label: 'reason', value: function (c) { return c.reason; }},
    ];
    body.append(sortableTable('cells-table', columns, cells, function (c) {
      state.cellFilter = c.index;
      state.pages = {};
      drawJobs(d);
      document.getElementById('jobs').scrollIntoView();
    }, function (c) {
      return {'data-cell': c.index, 'data-model': c.model, 'data-backend': c.backend, 'data-precision': c.precision,
              'data-hardware-class': c.hardware_class,
              'data-rating': c.rating, 'data-status': c.status, 'data-median': c.median_ms, 'data-nmse': c.nmse_max,
              'data-jobs': c.jobs.length, 'data-speedup': c.speedup, 'data-speedup-low': c.speedup_ci_low,
              'data-speedup-high': c.speedup_ci_high, 'data-host-busy': c.host_busy ? 1 : 0};
    }));
  }

  // ---- charts -------------------------------------------------------------------------------
  // Accuracy (worst NMSE, log scale) against bits per weight, one chart per model, a line per backend.
  function accuracyChart(model, cells) {
    const W = 360, H = 220, L = 52, R = 12, T = 10, B = 34;
    const pts = cells.filter(function (c) { return c.bits !== null && c.nmse_max !== null; });
    if (!pts.length) return null;
    const floor = 1e-12;
    const ys = pts.map(function (c) { return Math.log10(Math.max(c.nmse_max, floor)); });
    const xs = pts.map(function (c) { return c.bits; });
    const x0 = 0, x1 = Math.max.apply(null, xs.concat([32]));
    let y0 = Math.floor(Math.min.apply(null, ys)), y1 = Math.ceil(Math.max.apply(null, ys));
    if (y1 === y0) y1 = y0 + 1;
    const sx = function (v) { return L + (v - x0) / (x1 - x0) * (W - L - R); };
    const sy = function (v) { return T + (y1 - v) / (y1 - y0) * (H - T - B); };
    const g = svg('svg', {width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'data-chart': 'accuracy', 'data-model': model});
    for (let y = y0; y <= y1; y++) {
      g.append(svg('line', {class: 'grid', x1: L, x2: W - R, y1: sy(y), y2: sy(y)}));
      g.append(svg('text', {x: L - 4, y: sy(y) + 4, 'text-anchor': 'end', text: '1e' + y}));
    }
    for (const b of [2, 4, 8, 16, 32]) {
      if (b > x1) continue;
      g.append(svg('text', {x: sx(b), y: H - B + 14, 'text-anchor': 'middle', text: String(b)}));
    }
    g.append(svg('line', {class: 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B}));
    g.append(svg('line', {class: 'axis', x1: L, x2: L, y1: T, y2: H - B}));
    g.append(svg('text', {x: (L + W - R) / 2, y: H - 4, 'text-anchor': 'middle', text: 'bits per weight'}));
    // A series per matrix column: backend × hardware class.
    const keys = unique(pts.map(function (c) { return c.backend + '\u0000' + c.hardware_class; }));
    keys.forEach(function (key, i) {
      const b = key.split('\u0000')[0];
      const cls = key.split('\u0000')[1];
      const name = b + (cls && keys.length > unique(pts.map(function (c) { return c.backend; })).length
                        ? ' · ' + (state.classLabel[cls] || cls) : '');
      const colour = SERIES_COLOURS[i % SERIES_COLOURS.length];
      const series = pts.filter(function (c) { return c.backend === b && c.hardware_class === cls; })
        .sort(function (p, q) { return p.bits - q.bits; });
      const path = series.map(function (c, k) {
        return (k ? 'L' : 'M') + sx(c.bits).toFixed(1) + ' ' + sy(Math.log10(Math.max(c.nmse_max, floor))).toFixed(1);
      }).join(' ');
      g.append(svg('path', {d: path, fill: 'none', stroke: colour, 'stroke-width': 1.5}));
      for (const c of series) {
        const dot = svg('circle', {cx: sx(c.bits), cy: sy(Math.log10(Math.max(c.nmse_max, floor))), r: 3.5, fill: colour,
                                  'data-model': model, 'data-backend': b, 'data-precision': c.precision,
                                  'data-hardware-class': cls, 'data-nmse': c.nmse_max});
        dot.append(svg('title', {text: name + ' ' + c.precision + ': NMSE ' + fmt(c.nmse_max, 3) + ' at ' + c.bits + ' bits'}));
        g.append(dot);
      }
      g.append(svg('text', {x: W - R - 4, y: T + 12 + 13 * i, 'text-anchor': 'end', fill: colour, text: name}));
    });
    return el('div', {class: 'chart'}, [el('h3', {text: model + ': NMSE vs bits per weight'}), g]);
  }

  // Median latency per model × precision × shape on one hardware class; with more than
  // MAX_BARS such bars, one bar per precision (the median over its jobs) instead.
  function latencyChart(cls, jobs) {
    let groups = {};
    let perPrecision = false;
    for (const j of jobs) {
      if (j.median === null) continue;
      const key = j.model + ' ' + j.precision + ' ' + shape(j);
      (groups[key] = groups[key] || []).push(j.median);
    }
    if (Object.keys(groups).length > MAX_BARS) {
      perPrecision = true;
      groups = {};
      for (const j of jobs) {
        if (j.median === null) continue;
        (groups[j.precision] = groups[j.precision] || []).push(j.median);
      }
    }
    const keys = Object.keys(groups).sort();
    if (!keys.length) return null;
    const values = keys.map(function (k) {
      const v = groups[k].slice().sort(function (a, b) { return a - b; });
      return v[Math.floor((v.length - 1) / 2)];
    });
    const W = 460, row = 16, L = 210, R = 60, T = 6;
    const H = T + row * keys.length + 24;
    const max = Math.max.apply(null, values);
    const g = svg('svg', {width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'data-chart': 'latency',
                          'data-class': cls});
    keys.forEach(function (k, i) {
      const y = T + i * row;
      const w = max > 0 ? values[i] / max * (W - L - R) : 0;
      g.append(svg('text', {x: L - 4, y: y + 11, 'text-anchor': 'end', text: k.length > 34 ? k.slice(0, 33) + '…' : k}));
      const bar = svg('rect', {x: L, y: y + 2, width: Math.max(w, 1), height: row - 4, fill: '#3b6fb6',
                               'data-key': k, 'data-median': values[i]});
      bar.append(svg('title', {text: k + ': ' + fmt(values[i]) + ' ms'}));
      g.append(bar);
      g.append(svg('text', {x: L + w + 4, y: y + 11, text: fmt(values[i]) + ' ms'}));
    });
    g.append(svg('text', {x: L, y: H - 6, text: perPrecision ? 'median latency (ms) over all jobs of each precision'
                                                             : 'median latency (ms), median over the jobs of each bar'}));
    return el('div', {class: 'chart'}, [el('h3', {text: 'Latency on ' + (state.classLabel[cls] || cls)}), g]);
  }

  function drawCharts(d) {
    const body = sectionBody('charts');
    const cells = d.cells.filter(cellMatches);
    const acc = el('div', {class: 'charts'});
    const models = unique(cells.map(function (c) { return c.model; }));
    for (const model of models.slice(0, MAX_MODEL_CHARTS)) {
      const chart = accuracyChart(model, cells.filter(function (c) { return c.model === model; }));
      if (chart) acc.append(chart);
    }
    const more = models.length > MAX_MODEL_CHARTS
      ? el('p', {class: 'note', text: 'Charts of the first ' + MAX_MODEL_CHARTS + ' of ' + models.length +
                 ' models; filter by architecture or backend to see others.'}) : null;
    const lat = el('div', {class: 'charts'});
    const jobs = state.jobs.filter(jobMatches);
    for (const cls of unique(jobs.map(function (j) { return j.hardware_class; }).filter(function (c) { return c; }))) {
      const chart = latencyChart(cls, jobs.filter(function (j) { return j.hardware_class === cls; }));
      if (chart) lat.append(chart);
    }
    body.append(el('h3', {text: 'Accuracy against fp32 by bits per weight'}),
                el('p', {class: 'note', text: 'Worst NMSE of each cell (an exact 0 is drawn at 1e-12); mixed precision and the "external" label of commands have no single bits-per-weight and are left out.'}),
                acc.childNodes.length ? acc : el('p', {text: 'No accuracy measured yet.'}), more || '',
                el('h3', {text: 'Latency per hardware class'}),
                lat.childNodes.length ? lat : el('p', {text: 'No latency measured yet.'}));
  }

  // ---- memory -------------------------------------------------------------------------------
  function drawMemory(d) {
    const body = sectionBody('memory');
    const groups = {};
    for (const j of state.jobs.filter(jobMatches)) {
      if (j.peak_rss_bytes === null) continue;
      const key = [j.model, j.precision, j.hardware_class].join('\u0000');
      const g = groups[key] = groups[key] || {model: j.model, precision: j.precision, cls: j.hardware_class, peak: 0, jobs: 0};
      g.peak = Math.max(g.peak, j.peak_rss_bytes);
      g.jobs++;
    }
    const rows = Object.values(groups);
    if (!rows.length) { body.append(el('p', {text: 'No memory measured yet.'})); return; }
    body.append(sortableTable('memory-table', [
      {key: 'model', label: 'model', value: function (r) { return r.model; }},
      {key: 'precision', label: 'precision', value: function (r) { return r.precision; }},
      {key: 'class', label: 'hardware class', value: function (r) { return state.classLabel[r.cls] || r.cls; }},
      {key: 'peak', label: 'peak RSS', num: true, value: function (r) { return r.peak; }, cell: function (r) { return fmtBytes(r.peak); }},
      {key: 'jobs', label: 'jobs', num: true, value: function (r) { return r.jobs; }},
    ], rows));
  }

  // ---- hardware classes ---------------------------------------------------------------------
  function drawClasses(d) {
    const body = sectionBody('classes');
    const cards = el('div', {class: 'cards'});
    for (const c of d.classes) {
      if (state.filters.hardware_class && c.id !== state.filters.hardware_class) continue;
      const dev = c.device || {}, cpu = c.cpu || {}, topo = c.topology || {}, host = c.host || {};
      const caches = (topo.caches || []).map(function (k) {
        return 'L' + k.level + (k.type === 'unified' ? '' : k.type === 'data' ? 'd' : 'i') + ' ' + fmtBytes(k.size_bytes) + ' ×' + k.count;
      }).join(', ');
      const rows = [['id', c.id], ['backend', c.backend], ['device', dev.name], ['vendor', dev.vendor],
                    ['driver', dev.driver || dev.version], ['device memory', fmtBytes(dev.memory_bytes)],
                    ['compute units', dev.compute_units], ['precisions', (dev.precisions || []).join(', ')],
                    ['CPU', cpu.model], ['CPU ISA', [cpu.isa_level, cpu.isa_summary].filter(Boolean).join(' · ')],
                    ['ISA flags', (cpu.isa || []).join(' ')], ['cores', topo.cores], ['caches', caches],
                    ['host memory', fmtBytes(topo.memory_bytes_os)], ['OS', [host.os, host.kernel].filter(Boolean).join(', ')],
                    ['workers', c.workers.join(', ')], ['jobs', c.jobs]];
      const dl = el('dl');
      for (const [k, v] of rows) {
        if (v === undefined || v === null || v === '') continue;
        dl.append(el('dt', {text: k}), el('dd', {text: String(v)}));
      }
      cards.append(el('div', {class: 'card', 'data-class': c.id}, [el('h3', {}, [c.label,
        c.software ? el('span', {class: 'badge software', text: 'software device'}) : null]), dl]));
    }
    body.append(cards.childNodes.length ? cards : el('p', {text: 'No job has run on any hardware yet.'}));
  }

  // ---- architectures ------------------------------------------------------------------------
  function drawArchitectures(d) {
    const body = sectionBody('architectures');
    const archs = unique(d.overview.map(function (o) { return o.architecture; }))
      .filter(function (a) { return !state.filters.architecture || a === state.filters.architecture; });
    for (const a of archs) {
      const support = d.overview.filter(function (o) { return o.architecture === a; }).map(function (o) {
        return o.backend + ': ' + o.support + ' (' + o.working + '/' + o.cells + ' working' +
          (o.working_precisions.length ? '; ' + o.working_precisions.join(', ') : '') + ')';
      });
      const failures = d.failures.filter(function (f) { return f.architecture === a; });
      const block = el('div', {class: 'card', 'data-architecture': a}, [el('h3', {text: a}), el('p', {text: support.join(' · ')})]);
      if (failures.length) {
        block.append(sortableTable('failures-' + a.replace(/[^A-Za-z0-9_-]/g, '_'), [
          {key: 'backend', label: 'backend', value: function (f) { return f.backend; }},
          {key: 'status', label: 'status', value: function (f) { return f.status; }},
          {key: 'reason', label: 'reason', value: function (f) { return f.reason; }},
          {key: 'count', label: 'jobs', num: true, value: function (f) { return f.count; }},
        ], failures, function (f) {
          state.cellFilter = null;
          setFilter({architecture: a, backend: f.backend, status: f.status});
          document.getElementById('jobs').scrollIntoView();
        }));
      } else {
        block.append(el('p', {class: 'note', text: 'No failures.'}));
      }
      body.append(block);
    }
  }

  // ---- jobs ---------------------------------------------------------------------------------
  function drawJobs(d) {
    const body = sectionBody('jobs');
    let jobs = state.jobs.filter(jobMatches);
    if (state.cellFilter !== null) {
      const members = new Set(d.cells[state.cellFilter].jobs);
      jobs = jobs.filter(function (j) { return members.has(j.index); });
      const c = d.cells[state.cellFilter];
      body.append(el('p', {class: 'note'}, ['Jobs of ' + c.model + ' · ' + c.backend + ' · ' + c.precision + ' ',
        el('button', {type: 'button', text: 'show all jobs', onclick: function () { state.cellFilter = null; state.pages = {}; drawJobs(d); }})]));
    }
    const columns = [
      {key: 'id', label: 'job', value: function (j) { return j.id; }},
      {key: 'model', label: 'model', value: function (j) { return j.model; },
       cell: function (j) { return el('span', {}, [j.model, j.scaled ? el('span', {class: 'badge', text: 'scaled'}) : null]); }},
      {key: 'backend', label: 'backend', value: function (j) { return j.backend; }},
      {key: 'precision', label: 'precision', value: function (j) { return j.precision; }},
      {key: 'shape', label: 'shape', value: function (j) { return (j.batch || 0) * 1e6 + (j.seq_len || 0); }, cell: shape},
      {key: 'status', label: 'status', value: function (j) { return j.status; }},
      {key: 'class', label: 'hardware class', value: function (j) { return state.classLabel[j.hardware_class] || j.hardware_class; }},
      {key: 'median', label: 'median ms', num: true, value: function (j) { return j.median; },
       cell: function (j) { return el('span', {}, [fmt(j.median), j.noisy ? el('span', {class: 'badge noisy', text: 'noisy'}) : null,
                                                   j.host_busy === 1 ? el('span', {class: 'badge busy', text: 'busy host'}) : null]); }},
      {key: 'p90', label: 'p90 ms', num: true, value: function (j) { return j.p90; }, cell: function (j) { return fmt(j.p90); }},
      {key: 'tps', label: 'tokens/s', num: true, value: function (j) { return j.tokens_per_s; }, cell: function (j) { return fmt(j.tokens_per_s); }},
      {key: 'nmse', label: 'NMSE', num: true, value: function (j) { return j.nmse; }, cell: function (j) { return fmt(j.nmse, 2); }},
      {key: 'peak', label: 'peak RSS', num: true, value: function (j) { return j.peak_rss_bytes; }, cell: function (j) { return fmtBytes(j.peak_rss_bytes); }},
      {key: 'attempt', label: 'attempt', num: true, value: function (j) { return j.attempt; }},
    ];
    body.append(sortableTable('jobs-table', columns, jobs, showJob, function (j) {
      return {'data-job': j.id, 'data-status': j.status, 'data-median': j.median};
    }));
  }

  // ---- one job ------------------------------------------------------------------------------
  function boxPlot(j) {
    const q = j.latency;
    if (!q || q[1] === null || q[5] === null) return null;
    const W = 420, H = 150, L = 10, R = 10;
    const h = j.histogram;
    const lo = q[1], hi = q[5] > q[1] ? q[5] : q[1] + 1e-9;
    const sx = function (v) { return L + (v - lo) / (hi - lo) * (W - L - R); };
    const g = svg('svg', {width: W, height: H, viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'data-chart': 'distribution'});
    if (h) {
      const counts = h, top = Math.max.apply(null, counts.concat([1]));
      const bw = (W - L - R) / counts.length;
      counts.forEach(function (c, i) {
        const bh = c / top * 70;
        const bar = svg('rect', {x: L + i * bw + 1, y: 80 - bh, width: Math.max(bw - 2, 1), height: bh, fill: '#a0b4cc'});
        bar.append(svg('title', {text: c + ' sample(s)'}));
        g.append(bar);
      });
    }
    const y = 100;
    if (q[2] !== null && q[4] !== null) {
      g.append(svg('rect', {x: sx(q[2]), y: y - 10, width: Math.max(sx(q[4]) - sx(q[2]), 1), height: 20, fill: 'none', stroke: '#1d232b'}));
    }
    g.append(svg('line', {x1: sx(q[1]), x2: sx(q[5]), y1: y, y2: y, stroke: '#1d232b'}));
    g.append(svg('line', {x1: sx(q[3]), x2: sx(q[3]), y1: y - 12, y2: y + 12, stroke: '#c4314b', 'stroke-width': 2}));
    g.append(svg('text', {x: L, y: H - 8, text: fmt(q[1]) + ' ms'}));
    g.append(svg('text', {x: W - R, y: H - 8, 'text-anchor': 'end', text: fmt(q[5]) + ' ms'}));
    g.append(svg('text', {x: sx(q[3]), y: y + 26, 'text-anchor': 'middle', text: 'median ' + fmt(q[3]) + ' ms'}));
    return g;
  }

  function showJob(j) {
    const section = document.getElementById('job-detail');
    section.hidden = false;
    const body = sectionBody('job-detail');
    const q = j.latency || [];
    const rows = [['job', j.id], ['model', j.model + (j.scaled ? ' (scaled-down)' : '')], ['architecture', j.architecture],
                  ['backend', j.backend], ['precision', j.precision], ['shape', shape(j)], ['mode', j.mode],
                  ['status', j.status], ['reason', j.reason], ['attempt', j.attempt + ' of ' + j.attempts],
                  ['worker', j.worker], ['hardware class', (state.classLabel[j.hardware_class] || '') + ' (' + j.hardware_class + ')'],
                  ['device', j.device], ['build', j.build], ['seed', j.seed], ['started', j.start_s === null ? '' : '+' + fmt(j.start_s) + ' s'],
                  ['wall time', j.wall_s === null ? '' : fmt(j.wall_s) + ' s'],
                  ['latency samples', q[0]], ['min / q1 / median / q3 / max ms', [q[1], q[2], q[3], q[4], q[5]].map(function (v) { return fmt(v); }).join(' / ')],
                  ['p90 ms', fmt(q[6])], ['tokens/s', fmt(j.tokens_per_s)],
                  ['time to first token ms', fmt(j.ttft_ms)], ['decode tokens/s', fmt(j.decode_tokens_per_s)],
                  ['NMSE', fmt(j.nmse, 3)], ['cosine', fmt(j.cosine, 6)], ['top-1 agreement', fmt(j.top1, 4)],
                  ['KL divergence', fmt(j.kl, 3)], ['peak RSS', fmtBytes(j.peak_rss_bytes)], ['noisy', j.noisy ? 'yes (IQR > 10% of median)' : ''],
                  ['host load', j.host === null || j.host === undefined ? '' :
                    'load ' + fmt(j.host[0]) + ' → ' + fmt(j.host[1]) + ' on ' + j.host[2] + ' CPUs; other work ' +
                    fmt(j.host[3]) + ' CPUs; steal ' + fmt(j.host[4] === null ? null : j.host[4] * 100) + '%' +
                    (j.host_busy === 1 ? ' — busy host' : '')]];
    const dl = el('dl');
    for (const [k, v] of rows) {
      if (v === undefined || v === null || v === '' || v === 'undefined') continue;
      dl.append(el('dt', {text: k}), el('dd', {text: String(v)}));
    }
    body.append(el('div', {class: 'card', 'data-job': j.id}, [dl]));
    const plot = boxPlot(j);
    if (plot) body.append(el('h3', {text: 'Latency distribution (histogram of the raw samples, box: quartiles)'}), plot);
    section.scrollIntoView();
  }

  // ---- drawing ------------------------------------------------------------------------------
  function drawFiltered() {
    const d = state.data;
    drawOverview(d);
    drawQuantization(d);
    drawCells(d);
    drawCharts(d);
    drawMemory(d);
    drawClasses(d);
    drawArchitectures(d);
    drawJobs(d);
  }

  async function main() {
    const t0 = performance.now();
    const d = await loadData();
    const tLoad = performance.now();
    if (d.schema !== 2) throw new Error('dashboard data schema ' + d.schema + ' is not 2');
    d.cells = decodeCells(d);
    state.data = d;
    state.jobs = decodeJobs(d);
    const tDecode = performance.now();
    for (const c of d.classes) state.classLabel[c.id] = c.label;
    drawHeader(d);
    drawFilters();
    drawFiltered();
    document.body.dataset.amJobs = String(state.jobs.length);
    // How long the page took to draw itself (ms): load = inflate + parse, decode = job objects.
    document.body.dataset.amDrawMs = (performance.now() - t0).toFixed(0);
    document.body.dataset.amTimings = 'load ' + (tLoad - t0).toFixed(0) + ' decode ' + (tDecode - tLoad).toFixed(0) +
      ' draw ' + (performance.now() - tDecode).toFixed(0);
    document.body.dataset.amState = 'ready';
  }

  main().catch(fail);
})();

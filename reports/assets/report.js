// headscan report, the main script: helpers, data files, colours, head map tooltips, sortable
// tables and the probe stripe. report.js, viewer.js and selftest.js are inlined into every page at
// build time as one script, inside one function scope (reports/html_page.cpp), in that order.
// Every text from the corpus or the model reaches the DOM through textContent, never innerHTML.
const config = JSON.parse(document.getElementById('headscan-config').textContent);
const root = config.root || '';
const H = window.headscan;

function el(tag, attrs, text) {
  const node = document.createElement(tag);
  for (const key in attrs || {}) node.setAttribute(key, attrs[key]);
  if (text !== undefined) node.textContent = text;
  return node;
}
function svg(tag, attrs, text) {
  const node = document.createElementNS('http://www.w3.org/2000/svg', tag);
  for (const key in attrs || {}) node.setAttribute(key, attrs[key]);
  if (text !== undefined) node.textContent = text;
  return node;
}
function fmt(w) { return w.toFixed(2); }

// ---- data files ---------------------------------------------------------------------------
function load(name, file) {
  if (H.data[name] !== undefined) return Promise.resolve(H.data[name]);
  return new Promise(function (resolve, reject) {
    (H.waiting[name] = H.waiting[name] || []).push(resolve);
    if (document.querySelector('script[data-file="' + file + '"]')) return;
    const script = el('script', { 'data-headscan': 'data', 'data-file': file });
    script.src = root + 'data/' + file;
    script.onerror = function () { reject(new Error('cannot load ' + script.src)); };
    document.head.appendChild(script);
  });
}
function decode(b64) {
  const raw = atob(b64);
  const bytes = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) bytes[i] = raw.charCodeAt(i);
  return bytes;
}
// Weights of one head on one example as a function (query, key) -> weight.
function matrix(example, b64) {
  const bytes = decode(b64);
  const T = example.tokens.length;
  const at = example.triangular
    ? function (q, k) { return k > q ? 0 : bytes[q * (q + 1) / 2 + k] / 255; }
    : function (q, k) { return bytes[q * T + k] / 255; };
  return { T: T, at: at };
}

// ---- colours ------------------------------------------------------------------------------
const stops = (config.stops || ['#ffffff', '#08306b']).map(function (hex) {
  return [1, 3, 5].map(function (i) { return parseInt(hex.substr(i, 2), 16); });
});
function weightColour(w) {
  const t = Math.max(0, Math.min(1, w)) * (stops.length - 1);
  const i = Math.min(Math.floor(t), stops.length - 2), f = t - i;
  const c = [0, 1, 2].map(function (k) { return Math.round(stops[i][k] + (stops[i + 1][k] - stops[i][k]) * f); });
  return 'rgb(' + c.join(',') + ')';
}

// ---- tooltips on the head map and score maps ----------------------------------------------
const tooltip = document.getElementById('tooltip');
const headInfo = {};
(config.headInfo || []).forEach(function (info) { headInfo[info.id] = info; });
function showTooltip(target, x, y) {
  const info = headInfo[target.getAttribute('data-head-id')];
  if (!tooltip || !info) return;
  tooltip.textContent = '';
  tooltip.appendChild(el('div', { class: 'title' }, info.id + ' · ' + (info.labels.length ? info.labels.join(', ') : 'no label')));
  const table = el('table');
  info.scores.forEach(function (pair) {
    const row = el('tr');
    row.appendChild(el('td', {}, pair[0]));
    row.appendChild(el('td', { class: 'mono' }, pair[1]));
    table.appendChild(row);
  });
  tooltip.appendChild(table);
  tooltip.style.display = 'block';
  const box = tooltip.getBoundingClientRect();
  tooltip.style.left = Math.min(x + 14, window.innerWidth - box.width - 8) + 'px';
  tooltip.style.top = Math.min(y + 14, window.innerHeight - box.height - 8) + 'px';
}
document.querySelectorAll('[data-head-id]').forEach(function (cell) {
  cell.addEventListener('mouseover', function (e) { showTooltip(cell, e.clientX, e.clientY); });
  cell.addEventListener('mousemove', function (e) { showTooltip(cell, e.clientX, e.clientY); });
  cell.addEventListener('mouseout', function () { if (tooltip) tooltip.style.display = 'none'; });
});

// ---- head map colour switch (heads.json with --ablation's causal scores) -----------------
// Each cell carries its colours under every setting (data-fill-<name>, data-ink-<name>).
const mapColourInputs = document.querySelectorAll('input[name="map-colour"]');
function colourHeadMap(by) {
  document.querySelectorAll('.headmap .cell').forEach(function (cell) {
    const fill = cell.getAttribute('data-fill-' + by);
    if (fill === null) return;
    cell.style.background = fill;
    cell.style.color = cell.getAttribute('data-ink-' + by);
  });
  document.querySelectorAll('[data-map-legend]').forEach(function (legend) {
    legend.hidden = legend.getAttribute('data-map-legend') !== by;
  });
}
mapColourInputs.forEach(function (input) {
  input.addEventListener('change', function () { if (input.checked) colourHeadMap(input.value); });
  // A browser that restores the form on "back" keeps the choice: show it.
  if (input.checked && input.value !== 'label') colourHeadMap(input.value);
});

// ---- sortable tables ----------------------------------------------------------------------
document.querySelectorAll('table.sortable').forEach(function (table) {
  const headers = table.querySelectorAll('thead th');
  headers.forEach(function (th, column) {
    th.addEventListener('click', function () {
      const descending = th.getAttribute('aria-sort') === 'ascending';
      headers.forEach(function (other) { other.removeAttribute('aria-sort'); });
      th.setAttribute('aria-sort', descending ? 'descending' : 'ascending');
      const body = table.tBodies[0];
      const rows = Array.prototype.slice.call(body.rows);
      const key = function (row) {
        const cell = row.cells[column];
        const value = cell.getAttribute('data-sort');
        if (value === null) return cell.textContent;
        return value === '' ? null : parseFloat(value);
      };
      rows.sort(function (a, b) {
        const x = key(a), y = key(b);
        if (x === null || y === null) return (x === null) - (y === null);  // missing values last
        const order = typeof x === 'number' ? x - y : String(x).localeCompare(String(y));
        return descending ? -order : order;
      });
      rows.forEach(function (row) { body.appendChild(row); });
    });
  });
});

// ---- probe stripe on head pages -----------------------------------------------------------
function drawProbe(canvas) {
  return Promise.all([load('examples', 'examples.js'), load(config.id, config.id + '.js')]).then(function (loaded) {
    const index = loaded[0].findIndex(function (e) { return e.probe; });
    if (index < 0) return;
    const m = matrix(loaded[0][index], loaded[1][index]);
    const cell = Math.max(2, Math.floor(300 / m.T));
    canvas.width = canvas.height = cell * m.T;
    const ctx = canvas.getContext('2d');
    for (let q = 0; q < m.T; q++) for (let k = 0; k < m.T; k++) {
      ctx.fillStyle = weightColour(m.at(q, k));
      ctx.fillRect(k * cell, q * cell, cell, cell);
    }
    canvas.setAttribute('data-drawn', '1');
  });
}
const probes = Array.prototype.map.call(document.querySelectorAll('canvas.probe'), drawProbe);

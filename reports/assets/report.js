// headscan report: head map tooltips, sortable tables, the attention viewer (a bertviz-style head
// view over the example sequences, weights loaded from data/*.js by script elements, which works
// from file://), the probe stripe, and a self-test that the browser tests run with "?selftest".
// Every text from the corpus or the model reaches the DOM through textContent, never innerHTML.
// Inlined into every page at build time (reports/CMakeLists.txt).
(function () {
'use strict';
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

// ---- attention viewer ---------------------------------------------------------------------
// bertviz's head view: queries on the left, keys on the right; hovering a token shows where it
// attends (or, on the right, who attends to it) with lines whose opacity is the weight.
function Viewer(container) {
  this.box = container;
  this.example = container.querySelector('.viewer-example');
  this.layer = container.querySelector('.viewer-layer');
  this.head = container.querySelector('.viewer-head');
  this.link = container.querySelector('.viewer-link');
  this.readout = container.querySelector('.readout');
  this.lines = container.querySelector('svg.lines');
  this.canvas = container.querySelector('canvas.matrix');
  this.status = container.querySelector('.status');
  this.focus = null;
}
Viewer.prototype.start = function () {
  const self = this;
  return load('examples', 'examples.js').then(function (data) {
    self.examples = data;
    data.forEach(function (example, i) {
      const text = example.source + ' · ' + example.tokens.length + ' tokens';
      self.example.appendChild(el('option', { value: i }, text));
    });
    if (!data.length) {
      self.status.textContent = 'No example sequences were kept for this report.';
      return;
    }
    if (self.layer && config.initial) {
      self.layer.value = config.initial.layer;
      self.head.value = config.initial.head;
    }
    const onChange = function () { self.relabel(); self.show(); };
    [self.example, self.layer, self.head].forEach(function (select) { if (select) select.addEventListener('change', onChange); });
    self.relabel();
    return self.show();
  }).catch(function (error) { self.fail(error); });
};
// Head options name the primary label of each head of the chosen layer.
Viewer.prototype.relabel = function () {
  if (!this.head) return;
  const layer = +this.layer.value;
  Array.prototype.forEach.call(this.head.options, function (option) {
    const info = headInfo['L' + layer + 'H' + option.value];
    option.textContent = option.value + (info && info.labels.length ? ' · ' + info.labels[0] : '');
  });
};
Viewer.prototype.fail = function (error) {
  if (this.status) this.status.textContent = 'The attention data could not be loaded (' + error.message + '). ' +
    'Keep the data/ folder next to the pages.';
};
Viewer.prototype.current = function () {
  const layer = this.layer ? +this.layer.value : config.layer;
  const head = this.head ? +this.head.value : config.head;
  return { layer: layer, head: head, id: 'L' + layer + 'H' + head, example: +this.example.value };
};
Viewer.prototype.show = function () {
  const self = this, now = this.current();
  if (this.link) this.link.setAttribute('href', root + 'heads/' + now.id + '.html');
  return load(now.id, now.id + '.js').then(function (weights) {
    const example = self.examples[now.example];
    self.tokens = example.tokens;
    self.special = example.special;
    self.m = matrix(example, weights[now.example]);
    self.focus = null;
    self.drawLines();
    self.drawMatrix();
    self.describe();
    self.box.setAttribute('data-ready', now.id + '/' + now.example);
  }).catch(function (error) { self.fail(error); });
};
Viewer.prototype.drawLines = function () {
  const self = this, T = this.m.T, row = 18, gap = 130;
  const area = this.lines;
  area.textContent = '';
  area.setAttribute('height', 26 + T * row);
  area.setAttribute('width', 800);
  this.shadeLeft = []; this.shadeRight = []; this.weightText = [];
  const lefts = [], rights = [];
  for (let i = 0; i < T; i++) {
    const y = 26 + i * row;
    const shadeL = svg('rect', { y: y - 2, height: row - 2, fill: '#2171b5', 'fill-opacity': 0 });
    const shadeR = svg('rect', { y: y - 2, height: row - 2, fill: '#2171b5', 'fill-opacity': 0 });
    area.appendChild(shadeL); area.appendChild(shadeR);
    this.shadeLeft.push(shadeL); this.shadeRight.push(shadeR);
    const cls = this.special[i] ? 'token special' : 'token';
    const left = svg('text', { y: y + 11, 'text-anchor': 'end', class: cls, 'data-side': 'query', 'data-index': i }, this.tokens[i]);
    const right = svg('text', { y: y + 11, class: cls, 'data-side': 'key', 'data-index': i }, this.tokens[i]);
    const weight = svg('text', { y: y + 11, 'text-anchor': 'end', class: 'weight' }, '');
    [left, right].forEach(function (token) {
      token.addEventListener('mouseover', function () { self.hover(token.getAttribute('data-side'), i); });
      token.addEventListener('mouseout', function () { self.hover(null, -1); });
    });
    area.appendChild(left); area.appendChild(right); area.appendChild(weight);
    lefts.push(left); rights.push(right);
    this.weightText.push(weight);
  }
  // Columns as wide as the longest token (any script), measured once the text is in the DOM.
  let widest = 40;
  lefts.forEach(function (t) { widest = Math.max(widest, t.getComputedTextLength ? t.getComputedTextLength() : 0); });
  const xLeft = widest + 12, xRight = xLeft + gap, width = xRight + widest + 48;
  area.setAttribute('width', width);
  for (let i = 0; i < T; i++) {
    lefts[i].setAttribute('x', xLeft - 6);
    rights[i].setAttribute('x', xRight);
    this.weightText[i].setAttribute('x', width - 4);
    this.shadeLeft[i].setAttribute('x', 2); this.shadeLeft[i].setAttribute('width', xLeft - 4);
    this.shadeRight[i].setAttribute('x', xRight - 4); this.shadeRight[i].setAttribute('width', widest + 8);
  }
  area.appendChild(svg('text', { x: xLeft - 6, y: 12, 'text-anchor': 'end', class: 'special' }, 'query'));
  area.appendChild(svg('text', { x: xRight, y: 12, class: 'special' }, 'key'));
  this.lineGroup = svg('g');
  area.insertBefore(this.lineGroup, area.firstChild);
  this.geometry = { row: row, xLeft: xLeft, xRight: xRight };
  this.hover(null, -1);
};
Viewer.prototype.hover = function (side, index) {
  const T = this.m.T, g = this.geometry, at = this.m.at;
  this.focus = side ? { side: side, index: index } : null;
  this.lineGroup.textContent = '';
  for (let i = 0; i < T; i++) {
    this.shadeLeft[i].setAttribute('fill-opacity', 0);
    this.shadeRight[i].setAttribute('fill-opacity', 0);
    this.weightText[i].textContent = '';
  }
  const y = function (i) { return 26 + i * g.row + 6; };
  const add = function (group, q, k, w, strong) {
    group.appendChild(svg('line', { x1: g.xLeft, y1: y(q), x2: g.xRight - 8, y2: y(k), stroke: '#2171b5',
      'stroke-opacity': strong ? Math.max(w, 0.08) : w * 0.5, 'stroke-width': strong ? 1 + 2.5 * w : 1 }));
  };
  if (!side) {
    for (let q = 0; q < T; q++) for (let k = 0; k < T; k++) { const w = at(q, k); if (w >= 0.02) add(this.lineGroup, q, k, w, false); }
  } else {
    for (let j = 0; j < T; j++) {
      const w = side === 'query' ? at(index, j) : at(j, index);
      if (w >= 0.005) add(this.lineGroup, side === 'query' ? index : j, side === 'query' ? j : index, w, true);
      (side === 'query' ? this.shadeRight : this.shadeLeft)[j].setAttribute('fill-opacity', 0.85 * w);
      if (side === 'query' && w >= 0.005) this.weightText[j].textContent = fmt(w);
    }
    (side === 'query' ? this.shadeLeft : this.shadeRight)[index].setAttribute('fill-opacity', 0.15);
  }
  this.drawMatrix();
  this.describe();
};
Viewer.prototype.describe = function () {
  const f = this.focus, T = this.m.T, tokens = this.tokens;
  this.readout.textContent = '';
  const put = function (text, token) {
    if (token !== undefined) this.readout.appendChild(el('span', { class: 'tok' }, token));
    if (text) this.readout.appendChild(document.createTextNode(text));
  }.bind(this);
  if (!f) { put('Hover a token: on the left to see where it attends, on the right to see which queries attend to it.'); return; }
  const pairs = [];
  for (let j = 0; j < T; j++) {
    const w = f.side === 'query' ? this.m.at(f.index, j) : this.m.at(j, f.index);
    if (w >= 0.005) pairs.push([w, j]);
  }
  pairs.sort(function (a, b) { return b[0] - a[0] || a[1] - b[1]; });
  put((f.side === 'query' ? 'query ' : 'key ') + f.index + ' ');
  put(f.side === 'query' ? ' attends to: ' : ' is attended by: ', tokens[f.index]);
  pairs.slice(0, 6).forEach(function (p, n) {
    put((n ? ' · ' : '') + '');
    put(' ' + p[1] + ': ' + fmt(p[0]), tokens[p[1]]);
  });
  if (pairs.length > 6) put(' · … ' + (pairs.length - 6) + ' more');
};
Viewer.prototype.drawMatrix = function () {
  const canvas = this.canvas, T = this.m.T;
  if (!canvas) return;
  const cell = Math.max(2, Math.min(24, Math.floor(440 / T)));
  canvas.width = canvas.height = cell * T;
  const ctx = canvas.getContext('2d');
  for (let q = 0; q < T; q++) for (let k = 0; k < T; k++) {
    ctx.fillStyle = weightColour(this.m.at(q, k));
    ctx.fillRect(k * cell, q * cell, cell, cell);
  }
  if (this.focus) {
    ctx.strokeStyle = '#d55e00';
    ctx.lineWidth = 2;
    if (this.focus.side === 'query') ctx.strokeRect(1, this.focus.index * cell + 1, T * cell - 2, cell - 2);
    else ctx.strokeRect(this.focus.index * cell + 1, 1, cell - 2, T * cell - 2);
  }
  if (!canvas.hasListener) {
    const self = this;
    canvas.hasListener = true;
    canvas.addEventListener('mousemove', function (e) {
      const c = Math.max(2, Math.min(24, Math.floor(440 / self.m.T)));
      const rect = canvas.getBoundingClientRect();
      const q = Math.floor((e.clientY - rect.top) / c), k = Math.floor((e.clientX - rect.left) / c);
      if (q < 0 || k < 0 || q >= self.m.T || k >= self.m.T) return;
      self.readout.textContent = '';
      self.readout.appendChild(document.createTextNode('query ' + q + ' '));
      self.readout.appendChild(el('span', { class: 'tok' }, self.tokens[q]));
      self.readout.appendChild(document.createTextNode(' → key ' + k + ' '));
      self.readout.appendChild(el('span', { class: 'tok' }, self.tokens[k]));
      self.readout.appendChild(document.createTextNode(': ' + fmt(self.m.at(q, k))));
    });
  }
};

const viewers = [];
document.querySelectorAll('.viewer').forEach(function (box) { const v = new Viewer(box); viewers.push(v); });
const started = Promise.all(viewers.map(function (v) { return v.start(); }));

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

// ---- self-test (browser tests open the page with ?selftest) -------------------------------
if (location.search.indexOf('selftest') >= 0) {
  const checks = [];
  const check = function (name, ok, detail) { checks.push({ name: name, ok: !!ok, detail: detail === undefined ? '' : String(detail) }); };
  const wait = function (ms) { return new Promise(function (r) { setTimeout(r, ms); }); };
  const images = Array.prototype.map.call(document.images, function (img) {
    return img.complete ? Promise.resolve() : new Promise(function (r) { img.onload = img.onerror = r; });
  });
  Promise.all([started, Promise.all(probes), Promise.all(images)]).then(function () {
    const broken = Array.prototype.filter.call(document.images, function (img) { return !img.naturalWidth; });
    check('images load', broken.length === 0, broken.map(function (i) { return i.getAttribute('src'); }).join(' '));
    // Nothing outside the file system: no request recorded, none blocked, no absolute URL in the DOM.
    const remote = performance.getEntriesByType('resource').filter(function (e) { return !/^file:/.test(e.name); });
    check('no network requests', remote.length === 0, remote.map(function (e) { return e.name; }).join(' '));
    check('no blocked requests', H.violations.length === 0, H.violations.join(' '));
    const absolute = [];
    document.querySelectorAll('[src],[href],[action],[srcset],[poster],[data]').forEach(function (node) {
      ['src', 'href', 'action', 'srcset', 'poster', 'data'].forEach(function (a) {
        const v = node.getAttribute(a);
        if (v && /^\s*(\/\/|[a-z][a-z0-9+.-]*:)/i.test(v) && !/^(javascript:void|#)/.test(v)) absolute.push(a + '=' + v);
      });
    });
    check('only relative links', absolute.length === 0, absolute.join(' '));
    const foreign = Array.prototype.filter.call(document.scripts, function (s) { return !s.hasAttribute('data-headscan'); });
    let handlers = 0;
    document.querySelectorAll('*').forEach(function (node) {
      for (const a of node.attributes) if (/^on/i.test(a.name)) handlers++;
    });
    check('no injected script', foreign.length === 0 && handlers === 0 && H.alerts === 0,
      'foreign scripts ' + foreign.length + ', handlers ' + handlers + ', alerts ' + H.alerts);
    if (config.page === 'index') {
      const cells = document.querySelectorAll('.headmap .cell');
      let hrefs = 0;
      cells.forEach(function (c) {
        if (c.getAttribute('href') === 'heads/L' + c.getAttribute('data-layer') + 'H' + c.getAttribute('data-head') + '.html') hrefs++;
      });
      check('head map has layers × heads cells', cells.length === config.layers * config.heads && hrefs === cells.length,
        cells.length + ' cells, ' + hrefs + ' head links, expected ' + config.layers * config.heads);
      const rows = document.querySelectorAll('#heads-table tbody tr').length;
      check('table lists every head', rows === config.layers * config.heads, rows + ' rows');
      const th = document.querySelector('#heads-table thead th[data-score]');
      if (th) {
        const column = Array.prototype.indexOf.call(th.parentNode.children, th);
        const values = function () {
          return Array.prototype.map.call(document.querySelectorAll('#heads-table tbody tr'), function (r) {
            return r.cells[column].getAttribute('data-sort');
          }).filter(function (v) { return v !== ''; }).map(parseFloat);
        };
        th.click();
        const up = values();
        th.click();
        const down = values();
        const sorted = function (a, sign) { return a.every(function (v, i) { return i === 0 || sign * (v - a[i - 1]) >= 0; }); };
        check('table sorts', sorted(up, 1) && sorted(down, -1), th.textContent);
      }
      const cell = cells[cells.length - 1];
      cell.dispatchEvent(new MouseEvent('mouseover', { bubbles: true, clientX: 10, clientY: 10 }));
      const tip = tooltip ? tooltip.textContent : '';
      const info = headInfo[cell.getAttribute('data-head-id')];
      check('hover shows every score', tooltip && tooltip.style.display === 'block' && info.scores.every(function (p) { return tip.indexOf(p[0]) >= 0; }), tip);
      cell.dispatchEvent(new MouseEvent('mouseout', { bubbles: true }));
    } else {
      check('head page names its head', document.querySelector('h1').getAttribute('data-head-id') === config.id &&
        location.pathname.endsWith('/heads/' + config.id + '.html'), location.pathname);
      const canvas = document.querySelector('canvas.probe');
      if (canvas) check('probe stripe drawn', canvas.getAttribute('data-drawn') === '1', '');
    }
    const v = viewers[0];
    if (config.examples === 0) {
      check('viewer says it has no examples', v && /No example/.test(v.status.textContent), v ? v.status.textContent : '');
    } else if (v && v.m) {
      // Hovering a query shows its row of weights beside the keys, and the readout names it.
      const shown = function () { return v.weightText.map(function (t) { return t.textContent; }).join('|'); };
      const expected = function (q) {
        return v.weightText.map(function (t, k) { const w = v.m.at(q, k); return w >= 0.005 ? fmt(w) : ''; }).join('|');
      };
      const before = shown(), beforeText = v.readout.textContent;
      const tokens = v.lines.querySelectorAll('text.token[data-side="query"]');
      const q1 = tokens.length - 1, q2 = Math.min(1, tokens.length - 1);
      tokens[q1].dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
      const first = shown(), firstText = v.readout.textContent;
      tokens[q2].dispatchEvent(new MouseEvent('mouseover', { bubbles: true }));
      const second = shown(), secondText = v.readout.textContent;
      tokens[q2].dispatchEvent(new MouseEvent('mouseout', { bubbles: true }));
      check('hovering a token shows its weights', /^\|*$/.test(before) && first !== before && first === expected(q1) &&
        second === expected(q2) && firstText !== beforeText && secondText !== firstText && shown() === before,
        firstText + ' / ' + secondText);
      const shownTokens = Array.prototype.map.call(tokens, function (t) { return t.textContent; });
      check('viewer shows the tokens', shownTokens.length === v.m.T, shownTokens.length + ' tokens');
      H.selftestTokens = shownTokens;
    } else {
      check('viewer loads', false, v && v.status ? v.status.textContent : 'no viewer');
    }
    return wait(50);
  }).then(function () {
    const report = { page: config.page, id: config.id || null, pass: checks.every(function (c) { return c.ok; }),
      checks: checks, title: document.querySelector('h1').textContent, tokens: H.selftestTokens || [] };
    const out = el('pre', { id: 'selftest' }, JSON.stringify(report));
    document.body.appendChild(out);
    if (config.page === 'index' && /selftest=click/.test(location.search)) {
      const cells = document.querySelectorAll('.headmap .cell');
      const cell = cells[cells.length - 1];
      cell.setAttribute('href', cell.getAttribute('href') + '?selftest=clicked');
      cell.click();
    }
  });
}
})();

// headscan report: the attention viewer, a bertviz-style head view over the example sequences,
// their weights loaded from data/*.js by script elements, which works from file://. Part of the
// main script (report.js).
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

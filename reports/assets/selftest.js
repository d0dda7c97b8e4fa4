// headscan report: the self-test that the browser tests run by opening a page with "?selftest".
// Part of the main script (report.js).
// ---- self-test (browser tests open the page with ?selftest) -------------------------------
// Clicks the first score column of a sortable table twice: its numbers must come out ascending,
// then descending (missing values last).
function checkSorting(check, name, table) {
  const th = document.querySelector(table + ' thead th[data-score]');
  if (!th) return;
  const column = Array.prototype.indexOf.call(th.parentNode.children, th);
  const values = function () {
    return Array.prototype.map.call(document.querySelectorAll(table + ' tbody tr'), function (r) {
      return r.cells[column].getAttribute('data-sort');
    }).filter(function (v) { return v !== ''; }).map(parseFloat);
  };
  th.click();
  const up = values();
  th.click();
  const down = values();
  const sorted = function (a, sign) { return a.every(function (v, i) { return i === 0 || sign * (v - a[i - 1]) >= 0; }); };
  check(name, sorted(up, 1) && sorted(down, -1), th.textContent);
}
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
      checkSorting(check, 'table sorts', '#heads-table');
      if (mapColourInputs.length) {
        // Each setting of the switch gives every cell the colour it carries and shows its own legend;
        // the causal settings change some colour; the last click returns to the labels.
        const css = function (colour) { const probe = el('span'); probe.style.background = colour; return probe.style.backgroundColor; };
        const labelColours = Array.prototype.map.call(cells, function (c) { return c.style.backgroundColor; });
        const results = [];
        let ok = true, changed = false;
        Array.prototype.slice.call(mapColourInputs).concat([mapColourInputs[0]]).forEach(function (input) {
          input.click();
          const by = input.value;
          let matching = 0;
          cells.forEach(function (c, i) {
            if (c.style.backgroundColor === css(c.getAttribute('data-fill-' + by))) matching++;
            if (by !== 'label' && c.style.backgroundColor !== labelColours[i]) changed = true;
          });
          const shown = Array.prototype.filter.call(document.querySelectorAll('[data-map-legend]'), function (l) { return !l.hidden; })
            .map(function (l) { return l.getAttribute('data-map-legend'); });
          results.push(by + ': ' + matching + '/' + cells.length + ' cells, legend ' + shown.join(','));
          ok = ok && matching === cells.length && shown.length === 1 && shown[0] === by;
        });
        check('head map colour switch recolours the cells', ok && changed && mapColourInputs[0].checked, results.join('; '));
      }
      const cell = cells[cells.length - 1];
      cell.dispatchEvent(new MouseEvent('mouseover', { bubbles: true, clientX: 10, clientY: 10 }));
      const tip = tooltip ? tooltip.textContent : '';
      const info = headInfo[cell.getAttribute('data-head-id')];
      check('hover shows every score', tooltip && tooltip.style.display === 'block' && info.scores.every(function (p) { return tip.indexOf(p[0]) >= 0; }), tip);
      cell.dispatchEvent(new MouseEvent('mouseout', { bubbles: true }));
    } else if (config.page === 'compare') {
      compareChecks(check);
    } else {
      check('head page names its head', document.querySelector('h1').getAttribute('data-head-id') === config.id &&
        location.pathname.endsWith('/heads/' + config.id + '.html'), location.pathname);
      const canvas = document.querySelector('canvas.probe');
      if (canvas) check('probe stripe drawn', canvas.getAttribute('data-drawn') === '1', '');
      const causal = document.querySelectorAll('#causal a');
      if (causal.length) {
        // "depends on" and "depended on by" link each head by its name to its page.
        const wrong = Array.prototype.filter.call(causal, function (a) { return a.getAttribute('href') !== a.textContent + '.html'; });
        check('causal evidence links to head pages', wrong.length === 0, wrong.map(function (a) { return a.getAttribute('href'); }).join(' '));
      }
    }
    const v = viewers[0];
    if (config.page === 'compare') {
      // no attention viewer: the runs' own reports have theirs
    } else if (config.examples === 0) {
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

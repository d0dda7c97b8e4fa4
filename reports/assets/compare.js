// headscan compare page (headscan compare RUN... -o OUT): the slider over the runs' head maps, and
// the self-test's checks of the page. Part of the compare page's script, after report.js and
// viewer.js and before selftest.js, inside the same function scope.
const runSlider = document.getElementById('run-slider');
function showRun(k) {
  const index = String(k);
  document.querySelectorAll('.runmap').forEach(function (map) { map.hidden = map.getAttribute('data-run') !== index; });
  const caption = document.getElementById('run-caption');
  if (caption && config.runs && config.runs[k] !== undefined) caption.textContent = config.runs[k];
}
if (runSlider) {
  runSlider.addEventListener('input', function () { showRun(runSlider.value); });
  showRun(runSlider.value);
}

// Checks of the self-test (selftest.js) on the compare page.
function compareChecks(check) {
  const expected = config.layers * config.heads;
  const multiples = document.querySelectorAll('svg.multiples');
  check('small multiples for every chosen score', multiples.length === config.scores.length,
    multiples.length + ' of ' + config.scores.length);
  multiples.forEach(function (figure) {
    const groups = figure.querySelectorAll('g.trajectory');
    const lines = figure.querySelectorAll('g.trajectory polyline');
    const changed = figure.querySelectorAll('g.trajectory.changed').length;
    check('one trajectory per head: ' + figure.getAttribute('data-score'),
      groups.length === expected && lines.length === expected && changed === config.changedHeads,
      groups.length + ' trajectories, ' + lines.length + ' lines, ' + changed + ' highlighted; expected ' + expected +
      ' and ' + config.changedHeads);
  });
  const phase = document.querySelectorAll('svg.phase .point');
  check('phase-change figure has a point per run and measure', phase.length === config.phasePoints,
    phase.length + ' points, expected ' + config.phasePoints);
  if (runSlider) {
    const visible = function () {
      return Array.prototype.filter.call(document.querySelectorAll('.runmap'), function (m) { return !m.hidden; })
        .map(function (m) { return m.getAttribute('data-run'); });
    };
    const results = [];
    let ok = true;
    for (let k = config.runs.length - 1; k >= 0; k--) {
      runSlider.value = k;
      runSlider.dispatchEvent(new Event('input'));
      const shown = visible();
      const cells = document.querySelectorAll('.runmap[data-run="' + k + '"] .cell').length;
      results.push(k + ': ' + shown.join(',') + ' (' + cells + ' cells)');
      ok = ok && shown.length === 1 && shown[0] === String(k) && cells === expected;
    }
    check('the slider shows one run\'s head map at a time', ok, results.join('; '));
  }
  const trajectory = document.querySelector('g.trajectory');
  if (trajectory) {
    trajectory.dispatchEvent(new MouseEvent('mouseover', { bubbles: true, clientX: 10, clientY: 10 }));
    const info = headInfo[trajectory.getAttribute('data-head-id')];
    const tip = tooltip ? tooltip.textContent : '';
    check('hovering a trajectory shows its values', tooltip && tooltip.style.display === 'block' && info &&
      info.scores.every(function (p) { return tip.indexOf(p[0]) >= 0; }), tip);
    trajectory.dispatchEvent(new MouseEvent('mouseout', { bubbles: true }));
  }
  checkSorting(check, 'diff table sorts', '#diff-table');
}

// headscan report, first script in <head>: the registry that data/*.js files call, and the
// self-test hooks.
window.headscan = { data: {}, waiting: {}, violations: [], alerts: 0,
  receive: function (name, payload) {
    this.data[name] = payload;
    (this.waiting[name] || []).forEach(function (resolve) { resolve(payload); });
    delete this.waiting[name];
  } };
document.addEventListener('securitypolicyviolation', function (e) { headscan.violations.push(e.blockedURI + ' ' + e.violatedDirective); });
if (location.search.indexOf('selftest') >= 0) {
  // Counts any injected alert() instead of blocking the headless browser on a dialog.
  window.alert = function () { headscan.alerts++; };
}

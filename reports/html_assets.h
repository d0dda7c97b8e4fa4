#pragma once
// The CSS and JavaScript inlined into every page, so that the report needs no network and no file
// beyond its own directory.

namespace headscan {

const char* report_stylesheet();
// Runs first, in <head>: the registry that data/*.js files call, and the self-test hooks.
const char* report_early_script();
// Runs last, inside one function scope: tooltips, sortable tables, the probe stripe, the attention
// viewer, the self-test (reports/assets/report.js, viewer.js, selftest.js).
const char* report_script();
// The same for the page of `headscan compare`, with its run slider and self-test checks
// (reports/assets/compare.js between viewer.js and selftest.js).
const char* compare_script();

}  // namespace headscan

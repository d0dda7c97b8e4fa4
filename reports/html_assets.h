#pragma once
// The CSS and JavaScript inlined into every page, so that the report needs no network and no file
// beyond its own directory.

namespace headscan {

const char* report_stylesheet();
// Runs first, in <head>: the registry that data/*.js files call, and the self-test hooks.
const char* report_early_script();
// Runs last: tooltips, sortable tables, the attention viewer, the probe stripe, the self-test.
const char* report_script();

}  // namespace headscan

#pragma once
// Runs independent report tasks (one plot, one page) on every core: the analysis is over when
// the reports are written, so the cores are free, and a report of many heads is many files.

#include <functional>
#include <vector>

namespace headscan {

// Runs every task once, on up to std::thread::hardware_concurrency() threads; rethrows the first
// exception a task threw after all threads have stopped.
void run_tasks_in_parallel(const std::vector<std::function<void()>>& tasks);

}  // namespace headscan

#pragma once
// `headscan export MODEL_DIR OUT.pt2 …`: exporting is Python by nature (torch.export runs the
// model's Python code), so the command runs the Python module of the same build or install,
// `python -m headscan export …`, in this process's place.

namespace headscan {

// Replaces this process with the Python exporter, passing argv[1…] after "export". Returns only
// when it cannot start Python: then the exit code (2, with the reason and what to do on stderr).
int run_export_command(int argc, char** argv);

}  // namespace headscan

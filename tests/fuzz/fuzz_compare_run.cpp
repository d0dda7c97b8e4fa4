// A run's heads.json, as `headscan compare` reads it: accepted runs have layers × heads checked
// heads in layer-major order (each named by the model's index of its attention map), and compare.json and compare.csv of the run beside itself are made
// without any error but InputError.

#include <string>

#include "analyzer/errors.h"
#include "reports/compare_data.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    headscan::CompareRun run = headscan::parse_compare_run(text, "fuzz/heads.json");
    HEADSCAN_FUZZ_CHECK(run.layers > 0 && run.heads > 0);
    HEADSCAN_FUZZ_CHECK(run.document["heads"].size() == static_cast<std::size_t>(run.layers) * run.heads);
    for (int layer = 0; layer < run.layers; ++layer) {
      for (int head = 0; head < run.heads; ++head) {
        HEADSCAN_FUZZ_CHECK(run.head(layer, head)["layer"] == run.numbering.model_index(layer) &&
                            run.head(layer, head)["head"] == head);
      }
    }
    headscan::CompareRun later = run;
    run.given = "fuzz/a";
    run.name = "a";
    later.given = "fuzz/b";
    later.name = "b";
    const headscan::Comparison comparison = headscan::make_comparison({run, later}, {});
    const nlohmann::ordered_json document = headscan::compare_json(comparison);
    HEADSCAN_FUZZ_CHECK(document["heads"].size() == run.document["heads"].size());
    HEADSCAN_FUZZ_CHECK(document["label_changes"]["consecutive"].empty());
    const std::string csv = headscan::compare_csv(comparison);
    HEADSCAN_FUZZ_CHECK(!csv.empty());
    (void)document.dump();
  } catch (const headscan::InputError&) {
  }
  return 0;
}

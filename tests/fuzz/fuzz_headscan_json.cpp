// headscan.json: parsed fields are within their documented ranges, or the file is refused.

#include "analyzer/errors.h"
#include "analyzer/model/model_metadata.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const headscan::ModelMetadata metadata = headscan::parse_model_metadata(text, "fuzz/headscan.json");
    if (metadata.max_length) {
      HEADSCAN_FUZZ_CHECK(*metadata.max_length >= 2 && *metadata.max_length <= headscan::kMaxMetadataLength);
    }
    if (metadata.n_kv_heads) {
      HEADSCAN_FUZZ_CHECK(*metadata.n_kv_heads >= 1 && *metadata.n_kv_heads <= headscan::kMaxMetadataKvHeads);
    }
  } catch (const headscan::InputError&) {
  }
  return 0;
}

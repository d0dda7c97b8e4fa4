// The pickles of a TorchScript archive (data.pkl, constants.pkl, code/*.debug_pkl), scanned for
// their storages before LibTorch unpickles them: every storage found has a known element size and
// a sane element count, and anything else is an InputError.

#include <string>

#include "analyzer/errors.h"
#include "analyzer/model/torchscript/torchscript_archive.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  try {
    for (const headscan::PickledStorage& storage : headscan::scan_pickle(bytes, "fuzz/data.pkl")) {
      HEADSCAN_FUZZ_CHECK(storage.itemsize == 1 || storage.itemsize == 2 || storage.itemsize == 4 ||
                          storage.itemsize == 8 || storage.itemsize == 16);
      HEADSCAN_FUZZ_CHECK(storage.numel >= 0 && storage.numel <= (std::int64_t{1} << 62) / storage.itemsize);
    }
  } catch (const headscan::InputError&) {
  }
  return 0;
}

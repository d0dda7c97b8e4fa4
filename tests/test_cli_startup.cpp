// The command line's start-up: --help and --version, and the wait policy of LibTorch's OpenMP
// threads, which headscan sets before LibTorch starts them (analyzer/cli/wait_policy.cpp).

#include <catch2/catch.hpp>

#include <cstdlib>
#include <string>

#include <torch/version.h>

#include "analyzer/model/model.h"
#include "tests/fixtures.h"

using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;
using headscan::testing::CommandResult;
using headscan::testing::run_headscan;

TEST_CASE("cli: --help lists every option and --version prints the version", "[cli][errors][e2e]") {
  SECTION("--help") {
    const CommandResult result = run_headscan({"--help"});
    CHECK(result.exit_code == 0);
    for (const char* option : {"--output", "--force", "--tokenizer", "--threads", "--batch-size", "--max-length",
                               "--max-sequences", "--seed", "--threshold", "--parser", "--quiet", "--version", "--dtype"}) {
      CHECK_THAT(result.out, Contains(option));
    }
  }
  SECTION("--version") {
    const CommandResult result = run_headscan({"--version"});
    CHECK(result.exit_code == 0);
    // The LibTorch it runs on: a CUDA build of LibTorch, linked and loaded, also without a GPU.
    CHECK(result.out == std::string("headscan 0.1.0 (") + headscan::libtorch_description() +
                            "; OMP_WAIT_POLICY=" + std::getenv("OMP_WAIT_POLICY") + ")\n");
    CHECK_THAT(result.out, Contains(std::string("LibTorch ") + TORCH_VERSION));
#if HEADSCAN_TORCH_CUDA
    CHECK_THAT(result.out, Contains(", CUDA "));  // torch_cuda was not dropped by the linker
#endif
  }
}

// Idle OpenMP threads sleep unless the user says otherwise: spinning beside another busy process
// made runs 16 to 30 times slower (wait_policy.cpp).
TEST_CASE("cli: LibTorch's OpenMP threads wait passively unless OMP_WAIT_POLICY is given", "[cli][e2e]") {
  const char* given = std::getenv("OMP_WAIT_POLICY");
  const std::string saved = given == nullptr ? "" : given;
  SECTION("not given") {
    ::unsetenv("OMP_WAIT_POLICY");
    const CommandResult result = run_headscan({"--version"});
    CHECK(result.exit_code == 0);
    CHECK_THAT(result.out, EndsWith("; OMP_WAIT_POLICY=PASSIVE)\n"));
  }
  SECTION("given") {
    ::setenv("OMP_WAIT_POLICY", "active", 1);
    const CommandResult result = run_headscan({"--version"});
    CHECK(result.exit_code == 0);
    CHECK_THAT(result.out, EndsWith("; OMP_WAIT_POLICY=active)\n"));
  }
  if (given == nullptr) {
    ::unsetenv("OMP_WAIT_POLICY");
  } else {
    ::setenv("OMP_WAIT_POLICY", saved.c_str(), 1);
  }
}

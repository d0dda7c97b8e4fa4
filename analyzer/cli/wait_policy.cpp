// Idle OpenMP threads sleep instead of spinning, unless the user says otherwise.
//
// LibTorch's threads are GNU OpenMP's (libgomp). Between parallel regions its idle workers spin
// for a while before they sleep; beside another busy process on few cores the spinning threads
// take the cores the working ones need, and a run measured 16 to 30 times slower (README,
// "BLAS and OpenMP"). OMP_WAIT_POLICY=PASSIVE makes them sleep at once and costs nothing on an
// idle machine, but libgomp reads it in its own initializer, before main() and before anything
// headscan could set. So the executable starts itself again with the variable set: from
// .preinit_array, which the dynamic loader runs before any library's initializer, the second
// start costs a few milliseconds of loading and nothing of LibTorch's own start-up.
// A value the user gave (OMP_WAIT_POLICY=ACTIVE included) is kept as given, and under valgrind the
// program is not started again (set the variable yourself there).
#include <unistd.h>

#include <cstring>

namespace {

constexpr char kVariable[] = "OMP_WAIT_POLICY=";
char kPassive[] = "OMP_WAIT_POLICY=PASSIVE";

void start_again_with_passive_wait(int /*argc*/, char** argv, char** envp) {
  std::size_t count = 0;
  for (char** entry = envp; entry != nullptr && *entry != nullptr; ++entry, ++count) {
    if (std::strncmp(*entry, kVariable, sizeof(kVariable) - 1) == 0) return;
    // Under valgrind /proc/self/exe is valgrind's own tool, not this program: no second start.
    if (std::strncmp(*entry, "LD_PRELOAD=", 11) == 0 && std::strstr(*entry, "/vgpreload_") != nullptr) return;
  }
  if (count > 100000) return;  // an environment this large stays as it is rather than fill the stack
  // No allocation: the C library is not initialized yet.
  char** environment = static_cast<char**>(__builtin_alloca((count + 2) * sizeof(char*)));
  for (std::size_t i = 0; i < count; ++i) environment[i] = envp[i];
  environment[count] = kPassive;
  environment[count + 1] = nullptr;
  execve("/proc/self/exe", argv, environment);
  // Without /proc the program goes on as it is: slower beside other work, never wrong.
}

}  // namespace

__attribute__((section(".preinit_array"), used)) static void (*const headscan_wait_policy)(int, char**, char**) =
    start_again_with_passive_wait;

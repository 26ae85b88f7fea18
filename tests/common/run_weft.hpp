#pragma once
// Runs the `weft` program built with the tests (a subcommand and its arguments, optionally behind
// a prefix such as "mpiexec -n 2 ") and returns its exit code and combined output.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace weft::test {

struct Outcome {
  int code = -1;
  std::string output;
};

inline Outcome run_weft(const std::string& subcommand, const std::string& args, const std::string& prefix = "") {
  namespace fs = std::filesystem;
  const std::string weft = std::string(WEFT_BINARY_DIR) + "/apps/weft";
  const fs::path log =
      fs::temp_directory_path() / ("weft-" + subcommand + "-test-" + std::to_string(::getpid()) + ".log");
  const std::string cmd = prefix + weft + " " + subcommand + " " + args + " > " + log.string() + " 2>&1";
  const int status = std::system(cmd.c_str());
  std::ifstream f(log);
  std::stringstream ss;
  ss << f.rdbuf();
  fs::remove(log);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, ss.str()};
}

}  // namespace weft::test

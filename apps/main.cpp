// The `weft` program: one subcommand per application plus `devices` and `mapping check`.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>

#include "common/cli.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/util/error.hpp"
#include "weft/util/log.hpp"
#include "weft/util/output.hpp"
#include "weft/util/version.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/util/settings.hpp"

namespace {

void usage() {
  std::cout << "weft: task graphs over the CPUs and GPUs of a cluster\n\n"
               "usage: weft <command> [options]     (weft <command> --help for its options)\n"
               "       weft --version                (versions of Weft and of the libraries it runs on)\n"
               "       weft --help-env               (the WEFT_* environment variables)\n"
               "       mpirun -np N weft <command> [options]\n\ncommands:\n";
  for (const auto& c : weft::cli::commands()) std::printf("  %-14s %s\n", c.name.c_str(), c.summary.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  weft::remove_stages_on_signals();  // before any thread starts: SIGINT/SIGTERM leave no partial output
  int code = 0;
  std::unique_ptr<weft::Environment> env;
  try {
    env = std::make_unique<weft::Environment>(argc, argv);
    if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0 ||
        std::strcmp(argv[1], "help") == 0) {
      if (env->rank() == 0) usage();
      return argc < 2 ? 2 : 0;
    }
    if (std::strcmp(argv[1], "--help-env") == 0) {
      if (env->rank() == 0) std::fputs(weft::settings_help().c_str(), stdout);
      return 0;
    }
    if (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "version") == 0) {
      if (env->rank() == 0) {
        const weft::BuildInfo b = weft::build_info();
        std::printf("weft %s (commit %s)\n  CUDA: %s\n  NCCL: %s\n  MPI:  %s\n  HDF5: %s\n", b.version.c_str(),
                    b.commit.c_str(), b.cuda.c_str(), b.nccl.c_str(), b.mpi.c_str(), weft::io::hdf5_version().c_str());
      }
      return 0;
    }
    std::string name = argv[1];
    for (const auto& c : weft::cli::commands()) {
      if (c.name != name) continue;
      std::string label = "weft " + name;
      std::vector<char*> args{label.data()};
      for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
      code = c.main(static_cast<int>(args.size()), args.data());
      env.reset();
      return code;
    }
    if (env->rank() == 0) std::fprintf(stderr, "weft: unknown command '%s' (weft --help lists them)\n", name.c_str());
    return 2;
  } catch (const weft::RemoteError& e) {
    std::fprintf(stderr, "weft: stopped: %s\n", e.what());
    code = e.exit_code();
  } catch (const weft::Error& e) {
    std::fprintf(stderr, "weft: error: %s\n", e.user_message().c_str());
    code = e.exit_code();
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "weft: error: out of host memory\n");
    code = 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "weft: error: %s\n", e.what());
    code = 1;
  }
  // Under mpirun every rank that met the error ends together; a rank alone with its error ends
  // every rank rather than leave them waiting.
  if (env) env->exit_after_error(code);
  return code;
}

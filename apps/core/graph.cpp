// weft graph --app NAME [the app's options] --output g.dot|g.svg: the graph an application would
// run, drawn without running it. The application itself parses its options, checks its inputs and
// builds and maps its graph, exactly as for a run (so the picture is the job's, under mpirun too);
// its run_graph then writes the graph (--write-graph) and stops instead of running it.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "common/graph_view.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/util/error.hpp"

namespace weft::cli {
namespace {

constexpr const char* kUsage =
    "usage: weft graph --app NAME [the app's options] --output GRAPH.dot|GRAPH.svg\n"
    "Writes the graph application NAME would run with these options: its tasks with their ports, each\n"
    "filled with the colour of its place (rank and device), the tasks of each rank framed together,\n"
    "and its edges, each labelled by its transport: local (same rank), MPI (host bytes between\n"
    "ranks), NCCL or CUDA IPC (GPU to GPU). Under mpirun the graph is mapped over the job's ranks.\n"
    "GRAPH.svg is drawn by graphviz's `dot` program. The last --output naming a .dot or .svg file\n"
    "is the graph's; another --output (granulometry's folder, flow's file) goes to the application,\n"
    "whose inputs are read and checked as for a run (a pass that finds granulometry's N still runs).\n"
    "Nothing else is written. `weft NAME ... --write-graph FILE` writes the same from a real run.";

bool is_graph_file(const std::string& path) {
  auto ends = [&](const char* suffix) {
    const std::size_t n = std::strlen(suffix);
    return path.size() > n && path.compare(path.size() - n, n, suffix) == 0;
  };
  return ends(".dot") || ends(".svg");
}

/// The applications: subcommands that build a graph (those `weft mapping check` knows).
std::vector<const Command*> applications() {
  std::vector<const Command*> apps;
  for (const auto& c : commands())
    for (const auto& g : app_graphs())
      if (g.name == c.name) {
        apps.push_back(&c);
        break;
      }
  return apps;
}

int graph_main(int argc, char** argv) {
  std::string app, output;
  bool help = false;
  std::vector<std::string> rest;  // the application's own arguments
  int output_at = -1;             // index in `rest` of the last --output naming a graph file
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* name) -> const char* {  // "--name V" or "--name=V"
      const std::string flag = std::string("--") + name;
      if (a == flag) {
        if (i + 1 >= argc) throw ConfigError("weft graph: " + flag + " needs a value");
        return argv[++i];
      }
      if (a.rfind(flag + "=", 0) == 0) return argv[i] + flag.size() + 1;
      return nullptr;
    };
    if (const char* v = value("app")) {
      app = v;
    } else if (const char* v = value("output")) {
      if (is_graph_file(v)) output_at = static_cast<int>(rest.size());
      rest.push_back("--output");
      rest.push_back(v);
    } else {
      help = help || a == "--help" || a == "-h";
      rest.push_back(a);
    }
  }
  std::string names;
  for (const Command* c : applications()) names += (names.empty() ? "" : ", ") + c->name;
  const Environment* env = Environment::current();
  const bool root = !env || env->rank() == 0;
  if (app.empty()) {
    if (help) {
      if (root) std::printf("%s\n  (apps: %s)\n", kUsage, names.c_str());
      return 0;
    }
    throw ConfigError("weft graph: --app NAME missing (apps: " + names + ")");
  }
  const Command* command = nullptr;
  for (const Command* c : applications())
    if (c->name == app) command = c;
  if (!command) throw ConfigError("weft graph: --app: unknown application '" + app + "' (apps: " + names + ")");
  std::vector<std::string> args{"weft " + app};
  if (!help) {
    if (output_at < 0)
      throw ConfigError("weft graph: --output GRAPH.dot|GRAPH.svg missing (the last --output naming a .dot or .svg "
                        "file is the graph's)");
    output = rest[static_cast<std::size_t>(output_at) + 1];
    rest.erase(rest.begin() + output_at, rest.begin() + output_at + 2);
    for (const std::string& a : rest) {
      if (a == "--write-graph" || a.rfind("--write-graph=", 0) == 0)
        throw ConfigError("weft graph: --write-graph: the graph goes to --output " + output);
      if (a == "--generate-sample" || a.rfind("--generate-sample=", 0) == 0)
        throw ConfigError("weft graph: --generate-sample writes a sample and runs no graph");
    }
    auto check = [&] {  // rank 0 writes it (and runs graphviz): an error there stops every rank
      if (root) check_graph_output(output, "--output");
    };
    if (env) env->check_everywhere(check);
    else check();
    bool quiet = false;
    for (const std::string& a : rest) quiet = quiet || a == "--no-progress";
    if (!quiet) rest.push_back("--no-progress");  // nothing runs: no progress to show
    rest.push_back("--write-graph");
    rest.push_back(output);
  }
  args.insert(args.end(), rest.begin(), rest.end());
  std::vector<char*> pointers;
  for (std::string& a : args) pointers.push_back(a.data());
  stop_after_graph("--output");
  try {
    const int code = command->main(static_cast<int>(pointers.size()), pointers.data());
    if (help || code != 0) return code;
  } catch (const GraphWritten&) {
    if (root) std::printf("weft graph: %s's graph written to %s\n", app.c_str(), output.c_str());
    return 0;
  }
  throw ConfigError("weft graph: 'weft " + app + "' with these options runs no graph");
}

const Registrar reg{{"graph", "draw an application's graph: weft graph --app NAME [options] --output g.svg",
                     &graph_main}};

}  // namespace
}  // namespace weft::cli

#pragma once
/// The `weft` program's subcommands and the options every application shares.
#include <functional>
#include <string>
#include <vector>

#include <boost/program_options.hpp>

#include "weft/exec/executor.hpp"
#include "weft/graph/graph.hpp"
#include "weft/mapping/mapping.hpp"

namespace weft::cli {

namespace po = boost::program_options;

/// A subcommand of `weft`: `main` receives argv with argv[0] = "weft <name>" and returns the exit
/// code. Errors are thrown (weft::ConfigError → the program prints one line and exits 2).
struct Command {
  std::string name;
  std::string summary;
  std::function<int(int argc, char** argv)> main;
};

/// Registers a subcommand; call from a static object in an application's OBJECT library:
///   static weft::cli::Registrar reg{{"granulometry", "size distribution of a 3D volume", &run}};
struct Registrar {
  explicit Registrar(Command command);
};
[[nodiscard]] const std::vector<Command>& commands();

/// An application's graph with default options, so that `weft mapping check FILE --app NAME`
/// can validate a mapping file against it without running anything.
struct AppGraph {
  std::string name;
  std::function<weft::Graph()> build;
};
struct GraphRegistrar {
  explicit GraphRegistrar(AppGraph graph);
};
[[nodiscard]] const std::vector<AppGraph>& app_graphs();

/// Options every application accepts (--devices, --mapping, --write-mapping, --write-graph, --trace,
/// --overlap, --config, --log-level, --no-progress, and the migration ones: --migratable, --drain,
/// --ctl, --balance, --balance-period, --balance-threshold).
struct CommonOptions {
  std::string devices = "auto";   ///< cpu | gpu | all | auto (all GPUs if any, else CPUs)
  std::string mapping;            ///< YAML mapping file, empty: automatic
  std::string trace;              ///< Chrome/Perfetto trace output, empty: none
  std::string write_mapping;      ///< write the effective mapping here, empty: no
  std::string write_graph;        ///< write the mapped graph here (.dot or .svg), empty: no
  std::string overlap = "on";     ///< on | off
  std::string config;             ///< config file with option=value lines
  std::string log_level = "info";
  bool progress = true;           ///< progress bar on a terminal, progress lines otherwise
  std::vector<std::string> migratable;  ///< task-name globs that may migrate (--migratable)
  std::vector<std::string> drain;       ///< places evacuated at the start (--drain)
  std::string ctl;                ///< control file rank 0 follows (--ctl NAME|PATH, default $WEFT_CTL)
  std::string balance = "off";    ///< off | greedy | refine
  double balance_period = 1.0;    ///< seconds
  double balance_threshold = 0.1;
};
void add_common_options(po::options_description& desc, CommonOptions& common);

/// Parses the command line (and --config FILE if given) into `vm`, calling po::notify.
/// Prints `usage` and `desc` and returns false when --help was asked; throws ConfigError on bad
/// options (message names the option and value).
[[nodiscard]] bool parse(int argc, char** argv, const po::options_description& desc,
                         po::variables_map& vm, const std::string& usage,
                         const po::positional_options_description* positional = nullptr);

/// Checks the common options before any work (every rank calls it): their values, the places
/// --drain names, the --mapping file; on rank 0 that --trace and --write-mapping can be written and
/// the control file (--ctl or $WEFT_CTL) can be created. Throws ConfigError naming the option.
void check_common(const CommonOptions& common);

/// Maps the graph (Graph::place > --mapping FILE > the application's `defaults` > automatic
/// mapper over --devices), writes --write-graph (the graph as mapped, before it runs), runs it
/// with --overlap and the migration options, writes --trace and --write-mapping (the effective
/// mapping, after migrations) if asked, and returns the run's statistics. Rethrows the first task
/// error. Must be called on every rank (each builds the same graph).
/// `preliminary`: a pass before the job's main graph (granulometry's search for N), which --mapping
/// was not written for: its rules that match none of this graph's tasks are not errors, and
/// --write-graph does not show it.
weft::RunStats run_graph(weft::Graph& graph, const CommonOptions& common, int channel_capacity = 4,
                         const std::vector<const weft::Mapper*>& defaults = {}, bool preliminary = false);

/// `weft graph`: from now on run_graph writes --write-graph (naming `option` in its errors) and
/// then throws GraphWritten on every rank instead of running the job's main graph; preliminary
/// passes still run, since the main graph depends on what they find.
void stop_after_graph(std::string option);
struct GraphWritten {};

/// Progress of a long job on stderr: a bar on a terminal; otherwise (a batch log, mpirun) a line
/// when it starts, at most every WEFT_PROGRESS_INTERVAL seconds (default 5) with done / total and
/// the time left, and one when done. Silent when `enabled` is false (--no-progress).
class Progress {
 public:
  Progress(std::string label, long long total, bool enabled = true);
  ~Progress();
  void advance(long long n = 1);
  void done();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

 private:
  enum class Mode { off, bar, lines };
  void draw(bool final);
  std::string label_;
  long long total_ = 0;
  long long count_ = 0;
  Mode mode_ = Mode::off;
  double start_ = 0;
  double last_draw_ = -1;
};

}  // namespace weft::cli

#include "common/cli.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <optional>
#include <typeinfo>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "weft/util/error.hpp"
#include "weft/util/log.hpp"
#include "weft/util/settings.hpp"

namespace weft::cli {

namespace {
std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}
double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

std::vector<AppGraph>& graph_registry() {
  static std::vector<AppGraph> graphs;
  return graphs;
}

Registrar::Registrar(Command command) { registry().push_back(std::move(command)); }
GraphRegistrar::GraphRegistrar(AppGraph graph) { graph_registry().push_back(std::move(graph)); }
const std::vector<AppGraph>& app_graphs() { return graph_registry(); }
const std::vector<Command>& commands() { return registry(); }

void add_common_options(po::options_description& desc, CommonOptions& c) {
  po::options_description common("Common options");
  common.add_options()
      ("help,h", "show this help")
      ("devices", po::value(&c.devices)->default_value(c.devices),
       "where tasks may run: cpu, gpu, all, or auto (all GPUs of all ranks if there are any, else CPUs)")
      ("mapping", po::value(&c.mapping), "YAML mapping file placing tasks on ranks and devices (see mapping/README.md)")
      ("write-mapping", po::value(&c.write_mapping), "write the effective mapping to this YAML file")
      ("write-graph", po::value(&c.write_graph),
       "write the graph as mapped, before it runs, to this .dot file (or .svg, drawn by graphviz's dot): "
       "tasks and ports coloured by place, edges labelled by transport (local, MPI, NCCL, CUDA IPC)")
      ("trace", po::value(&c.trace), "write a Chrome/Perfetto timeline (JSON) of tasks and copies to this file")
      ("overlap", po::value(&c.overlap)->default_value(c.overlap),
       "on: copies, transfers and kernels of different tokens overlap; off: each rank does one transfer or "
       "computation at a time and waits for it (to see what overlap buys)")
      ("config", po::value(&c.config), "read further options from this file (one 'option = value' per line)")
      ("log-level", po::value(&c.log_level)->default_value(c.log_level), "trace, debug, info, warn, error or off")
      ("no-progress", po::bool_switch()->notifier([&c](bool v) { c.progress = !v; }), "no progress bar or progress lines")
      ("migratable", po::value(&c.migratable)->composing(),
       "let the tasks matching this glob move between places while running (repeatable; default '*' when "
       "--ctl, --drain or --balance is given)")
      ("drain", po::value(&c.drain)->composing(), "move every migratable task off this place at the start, e.g. rank:1/gpu:0 (repeatable)")
      ("ctl", po::value(&c.ctl),
       "control file rank 0 follows for `weft ctl` commands: a NAME (kept in the user's private folder, "
       "$XDG_RUNTIME_DIR/weft or /tmp/weft-UID) or a PATH with '/'; created by the job, removed at its end "
       "(default: $WEFT_CTL)")
      ("balance", po::value(&c.balance)->default_value(c.balance),
       "load balancer over the migratable tasks: off, greedy (one move per period) or refine (several)")
      ("balance-period", po::value(&c.balance_period)->default_value(c.balance_period, "1"), "seconds between balancer decisions")
      ("balance-threshold", po::value(&c.balance_threshold)->default_value(c.balance_threshold, "0.1"),
       "move when the predicted gain exceeds this share of the iteration time");
  desc.add(common);
}

namespace {

/// Whether an option's stored value is an unsigned integer (Boost reads "-5" into one as 2^64 - 5).
bool holds_unsigned(const boost::any& v) {
  const std::type_info& t = v.type();
  return t == typeid(unsigned) || t == typeid(unsigned long) || t == typeid(unsigned long long) ||
         t == typeid(unsigned short);
}

/// The value a double option holds, if it holds one.
std::optional<double> held_double(const boost::any& v) {
  if (v.type() == typeid(double)) return boost::any_cast<double>(v);
  if (v.type() == typeid(float)) return boost::any_cast<float>(v);
  return std::nullopt;
}

/// Checks what Boost accepts but no option means: negative counts wrapped into unsigned ones,
/// and NaN or infinite reals. Every option of every subcommand passes here.
void check_values(const po::parsed_options& parsed, const po::variables_map& vm, const std::string& where) {
  for (const auto& option : parsed.options) {
    if (option.string_key.empty() || option.value.empty() || !vm.count(option.string_key)) continue;
    const boost::any& value = vm[option.string_key].value();
    const std::string& text = option.value.front();
    if (holds_unsigned(value) && text.find('-') != std::string::npos)
      throw ConfigError(where + "--" + option.string_key + ": expected a count >= 0, got '" + text + "'");
    if (const auto real = held_double(value); real && !std::isfinite(*real))
      throw ConfigError(where + "--" + option.string_key + ": expected a finite number, got '" + text + "'");
  }
}

/// A config file must be a readable regular file (an ifstream opens a folder without complaint).
std::ifstream open_config(const std::string& file) {
  std::error_code ec;
  const auto status = std::filesystem::status(file, ec);
  if (ec || !std::filesystem::exists(status)) throw ConfigError("--config: no such file '" + file + "'");
  if (!std::filesystem::is_regular_file(status)) throw ConfigError("--config: '" + file + "' is not a regular file");
  std::ifstream in(file);
  if (!in) throw ConfigError("--config: cannot open '" + file + "'");
  return in;
}

/// Boost.Program_options (1.74) builds its error messages by replacing markers such as
/// "%value%" or "%invalid_line%" with the user's text until none is left: a value, option name or
/// config line that holds one of them never ends (found by fuzz/fuzz_config). Any "%name%" (a
/// lower-case word between two percent signs, the form of every marker) is refused before Boost
/// sees it, so that markers Boost adds later are covered too.
void refuse_format_markers(const std::string& text, const std::string& where) {
  for (std::size_t open = text.find('%'); open != std::string::npos; open = text.find('%', open + 1)) {
    std::size_t end = open + 1;
    while (end < text.size() && ((text[end] >= 'a' && text[end] <= 'z') || text[end] == '_')) ++end;
    if (end > open + 1 && end < text.size() && text[end] == '%')
      throw ConfigError(where + "'" + text.substr(0, 200) + "' holds '" + text.substr(open, end + 1 - open) +
                        "', which is not allowed in options");
  }
}

}  // namespace

bool parse(int argc, char** argv, const po::options_description& desc, po::variables_map& vm,
           const std::string& usage, const po::positional_options_description* positional) {
  for (int i = 1; i < argc; ++i) refuse_format_markers(argv[i], "");
  try {
    auto parser = po::command_line_parser(argc, argv).options(desc);
    if (positional) parser.positional(*positional);
    const po::parsed_options parsed = parser.run();
    po::store(parsed, vm);
    if (vm.count("help")) {
      std::cout << usage << "\n\n" << desc << "\n";
      return false;
    }
    check_values(parsed, vm, "");
    if (vm.count("config")) {
      const std::string file = vm["config"].as<std::string>();
      std::ifstream in = open_config(file);
      std::stringstream text;
      text << in.rdbuf();
      {
        std::istringstream lines(text.str());
        std::string line;
        for (int n = 1; std::getline(lines, line); ++n) refuse_format_markers(line, "--config " + file + ":" + std::to_string(n) + ": ");
      }
      try {
        const po::parsed_options from_file = po::parse_config_file(text, desc);
        po::store(from_file, vm);
        check_values(from_file, vm, "--config " + file + ": ");
      } catch (const po::error& e) {
        throw ConfigError("--config " + file + ": " + e.what());
      }
    }
    po::notify(vm);
  } catch (const po::error& e) {
    throw ConfigError(std::string(argv[0]) + ": " + e.what());
  }
  // --log-level given on the command line or in --config overrides WEFT_LOG_LEVEL.
  const auto apply_level = [](const std::string& level, const std::string& source) {
    try {
      set_log_level(level);
    } catch (const ConfigError& e) {
      throw ConfigError(source + ": " + e.what());
    }
  };
  // Every WEFT_* variable is checked here, for every subcommand (weft --help-env lists them).
  if (!settings().problem.empty()) throw ConfigError(settings().problem);
  if (!settings().log_level.empty()) apply_level(settings().log_level, "WEFT_LOG_LEVEL");
  if (vm.count("log-level") && !vm["log-level"].defaulted()) apply_level(vm["log-level"].as<std::string>(), "--log-level");
  return true;
}

namespace {

/// Seconds between progress lines when stderr is not a terminal (WEFT_PROGRESS_INTERVAL, default 5).
double line_interval() { return settings().progress_interval; }

std::string clock_text(double seconds) {
  char buf[32];
  if (seconds < 60) std::snprintf(buf, sizeof buf, "%.1f s", seconds);
  else if (seconds < 3600) std::snprintf(buf, sizeof buf, "%d min %02d s", int(seconds) / 60, int(seconds) % 60);
  else std::snprintf(buf, sizeof buf, "%d h %02d min", int(seconds) / 3600, int(seconds) / 60 % 60);
  return buf;
}

}  // namespace

Progress::Progress(std::string label, long long total, bool enabled)
    : label_(std::move(label)), total_(total), start_(now_seconds()) {
  if (!enabled) return;
  mode_ = isatty(STDERR_FILENO) ? Mode::bar : Mode::lines;
  if (mode_ == Mode::lines) {  // a batch log or mpirun: one line now, then at most every few seconds
    std::fprintf(stderr, "%s: 0/%lld started\n", label_.c_str(), total_);
    std::fflush(stderr);
    last_draw_ = start_;
  }
}

Progress::~Progress() { done(); }

void Progress::advance(long long n) {
  count_ += n;
  if (mode_ != Mode::off) draw(false);
}

void Progress::done() {
  if (mode_ == Mode::off) return;
  draw(true);
  if (mode_ == Mode::bar) std::fputc('\n', stderr);
  mode_ = Mode::off;
}

void Progress::draw(bool final) {
  const double t = now_seconds();
  const double interval = mode_ == Mode::bar ? 0.1 : line_interval();
  if (!final && t - last_draw_ < interval) return;
  last_draw_ = t;
  const double frac = total_ > 0 ? std::min(1.0, static_cast<double>(count_) / static_cast<double>(total_)) : 0;
  const double elapsed = t - start_;
  const double eta = frac > 0 ? elapsed * (1 - frac) / frac : 0;
  if (mode_ == Mode::lines) {
    if (final)
      std::fprintf(stderr, "%s: %lld/%lld done in %s\n", label_.c_str(), count_, total_, clock_text(elapsed).c_str());
    else
      std::fprintf(stderr, "%s: %lld/%lld (%.0f%%), %s elapsed, about %s left\n", label_.c_str(), count_, total_,
                   100 * frac, clock_text(elapsed).c_str(), clock_text(eta).c_str());
    std::fflush(stderr);
    return;
  }
  const int width = 30, filled = static_cast<int>(frac * width);
  std::string bar(filled, '#');
  bar.resize(width, '.');
  std::fprintf(stderr, "\r%s [%s] %lld/%lld  %.1fs elapsed, %.1fs left ", label_.c_str(), bar.c_str(), count_,
               total_, elapsed, eta);
  std::fflush(stderr);
}

}  // namespace weft::cli

// weft ctl: commands against a running job, appended to the control file that its rank 0 follows
// (--ctl FILE or $WEFT_CTL, on both sides).
#include <cstdio>
#include <cstdlib>

#include "common/cli.hpp"
#include "weft/exec/control.hpp"
#include "weft/graph/place.hpp"
#include "weft/util/error.hpp"
#include "weft/util/settings.hpp"

namespace weft::cli {
namespace {

int ctl_main(int argc, char** argv) {
  std::string action, target, to, file;
  po::options_description desc("Options");
  desc.add_options()("help,h", "show this help")
      ("action", po::value(&action), "migrate, drain or undrain")
      ("target", po::value(&target), "the task (migrate) or the place (drain, undrain)")
      ("to", po::value(&to), "migrate: the place to move the task to, e.g. rank:1/gpu:0")
      ("ctl", po::value(&file), "the job's control file: a NAME in the private folder, or a PATH with '/' (default: $WEFT_CTL)");
  po::positional_options_description pos;
  pos.add("action", 1).add("target", 1);
  po::variables_map vm;
  if (!parse(argc, argv, desc, vm,
             "usage: weft ctl migrate TASK --to PLACE [--ctl FILE]\n"
             "       weft ctl drain PLACE | weft ctl undrain PLACE [--ctl FILE]\n"
             "Sends a command to a running job started with --ctl NAME|PATH (or WEFT_CTL); its rank 0 applies it.\n"
             "Only a control file the job created, of this user, that nobody else may write, is used.",
             &pos))
    return 0;
  if (file.empty())
    file = settings().control_file;
  if (file.empty()) throw ConfigError("weft ctl: no control file (give --ctl FILE or set WEFT_CTL)");
  if (target.empty()) throw ConfigError("weft ctl " + action + ": missing " + (action == "migrate" ? "TASK" : "PLACE"));
  if (target.find_first_of(" \t") != std::string::npos)
    throw ConfigError("weft ctl " + action + ": '" + escaped(target) + "' holds white space");
  std::string line;
  if (action == "migrate") {
    if (to.empty()) throw ConfigError("weft ctl migrate: missing --to PLACE");
    Place p = Place::parse(to);
    line = "migrate " + target + " " + (p.rank ? p.str() : "rank:0/" + p.str());
  } else if (action == "drain" || action == "undrain") {
    Place p = Place::parse(target);
    line = action + " " + (p.rank ? p.str() : "rank:0/" + p.str());
  } else {
    throw ConfigError("weft ctl: unknown action '" + action + "' (expected migrate, drain or undrain)");
  }
  send_control_command(file, line);
  std::printf("%s: %s\n", control_file_path(file).c_str(), line.c_str());
  return 0;
}

const Registrar reg{{"ctl", "command a running job: weft ctl migrate TASK --to rank:1/gpu:0 (see --ctl)", &ctl_main}};

}  // namespace
}  // namespace weft::cli

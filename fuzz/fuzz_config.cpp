// --config files (apps/common/cli.cpp): the same parser and value checks as every subcommand,
// with the common options and options of each value type the programs use.
#include <cstdint>
#include <string>
#include <vector>

#include "common/cli.hpp"
#include "fuzz_common.hpp"
#include "weft/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = weft::fuzz::write_input("options.cfg", data, size);
  weft::cli::CommonOptions common;
  std::int64_t count = 0;
  int small = 0;
  std::uint64_t big = 0;
  double real = 0;
  std::string text;
  std::vector<std::string> many;
  bool flag = false;
  namespace po = weft::cli::po;
  po::options_description desc("fuzz");
  desc.add_options()("count", po::value(&count)->default_value(1), "")("small", po::value(&small), "")
      ("big", po::value(&big), "")("real", po::value(&real), "")("text", po::value(&text), "")
      ("many", po::value(&many)->composing(), "")("flag", po::bool_switch(&flag), "");
  weft::cli::add_common_options(desc, common);
  std::string name = "weft fuzz", option = "--config";
  std::vector<char*> argv{name.data(), option.data(), const_cast<char*>(path.c_str())};
  po::variables_map vm;
  try {
    (void)weft::cli::parse(static_cast<int>(argv.size()), argv.data(), desc, vm, "usage");
    weft::cli::check_common(common);
  } catch (const weft::Error&) {
  }
  return 0;
}

#include "result.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

namespace weft::bench {
namespace {

std::string run_capture(const std::string& cmd) {
  std::string out;
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(cmd.c_str(), "r"), pclose);
  if (!pipe) return out;
  std::array<char, 256> buf{};
  while (fgets(buf.data(), buf.size(), pipe.get())) out += buf.data();
  while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
  return out;
}

std::string device_from_nvidia_smi() {
  std::string names = run_capture("nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null");
  if (names.empty()) return "cpu only (no GPU found)";
  std::vector<std::string> lines;
  size_t start = 0;
  while (start <= names.size()) {
    size_t end = names.find('\n', start);
    if (end == std::string::npos) end = names.size();
    if (end > start) lines.push_back(names.substr(start, end - start));
    start = end + 1;
  }
  return lines.front() + " x" + std::to_string(lines.size());
}

}  // namespace

Result::Result(std::string name, int argc, char** argv) : name_(std::move(name)) {
  std::string command;
  for (int i = 0; i < argc; ++i) command += (i ? " " : "") + std::string(argv[i]);
  std::string commit;
  if (const char* c = std::getenv("WEFT_COMMIT")) commit = c;
  if (commit.empty())
    commit = run_capture(std::string("git -C '") + WEFT_SOURCE_DIR + "' rev-parse HEAD 2>/dev/null");
  if (commit.empty()) commit = "unknown";
  std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  doc_ = {{"benchmark", name_}, {"device", ""}, {"commit", commit}, {"date", date},
          {"command", command}, {"metrics", nlohmann::json::object()},
          {"targets", nlohmann::json::object()}};
}

void Result::metric(const std::string& key, nlohmann::json value) { doc_["metrics"][key] = std::move(value); }

void Result::target(const std::string& name, double value, double goal, bool higher_is_better) {
  bool met = higher_is_better ? value >= goal : value <= goal;
  doc_["targets"][name] = {{"value", value}, {"goal", goal}, {"met", met}};
}

void Result::set_device(std::string device) { doc_["device"] = std::move(device); }

std::string Result::device() {
  if (doc_["device"].get<std::string>().empty()) doc_["device"] = device_from_nvidia_smi();
  return doc_["device"].get<std::string>();
}

std::string Result::write() {
  (void)device();
  std::filesystem::path dir = std::getenv("WEFT_RESULTS_DIR") ? std::getenv("WEFT_RESULTS_DIR")
                                                              : std::string(WEFT_SOURCE_DIR) + "/bench/results";
  std::filesystem::create_directories(dir);
  auto path = dir / (name_ + ".json");
  auto tmp = dir / (name_ + ".json.tmp");
  {
    std::ofstream f(tmp);
    f << doc_.dump(2) << "\n";
  }
  std::filesystem::rename(tmp, path);
  std::printf("wrote %s\n", path.c_str());
  return path.string();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

}  // namespace weft::bench

// The `weft` program around the science: what it says about itself, its logs and its progress.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "common/run_weft.hpp"
#include "weft/util/settings.hpp"

namespace {

using weft::test::run_weft;

int count_lines(const std::string& text, const std::regex& pattern) {
  int n = 0;
  std::string line;
  std::istringstream in(text);
  while (std::getline(in, line))
    if (std::regex_search(line, pattern)) ++n;
  return n;
}

TEST(Cli, VersionNamesWeftAndTheLibrariesItRunsOn) {
  const auto o = run_weft("--version", "");
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_TRUE(std::regex_search(o.output, std::regex(R"(^weft [0-9]+\.[0-9]+\.[0-9]+ \(commit [^)]+\))")))
      << o.output;
  for (const char* library : {"CUDA:", "NCCL:", "MPI:", "HDF5: 1."})
    EXPECT_NE(o.output.find(library), std::string::npos) << library << "\n" << o.output;
}

TEST(Cli, EveryVariableIsListedDocumentedAndChecked) {
  const auto o = run_weft("--help-env", "");
  EXPECT_EQ(o.code, 0) << o.output;
  std::ifstream doc(std::string(WEFT_SOURCE_DIR) + "/docs/configuration.md");
  std::stringstream text;
  text << doc.rdbuf();
  for (const weft::SettingInfo& s : weft::setting_infos()) {
    EXPECT_NE(o.output.find(s.name), std::string::npos) << s.name << " missing from weft --help-env";
    EXPECT_NE(text.str().find(std::string("`") + s.name), std::string::npos)
        << s.name << " missing from docs/configuration.md";
  }
  const auto bad = run_weft("demo", "--devices cpu --tokens 1", "WEFT_LIVENESS_TIMEOUT=soon ");
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("WEFT_LIVENESS_TIMEOUT"), std::string::npos) << bad.output;
}

TEST(Cli, LogLevelDebugShowsTheMappingWithTimeAndRank) {
  const auto quiet = run_weft("demo", "--devices cpu --tokens 3 --length 4");
  EXPECT_EQ(quiet.code, 0) << quiet.output;
  EXPECT_EQ(quiet.output.find("debug"), std::string::npos) << quiet.output;
  const auto o = run_weft("demo", "--devices cpu --tokens 3 --length 4 --log-level debug");
  EXPECT_EQ(o.code, 0) << o.output;
  // "[    0.012s rank 0] [weft.app] debug: scale -> cpu"
  EXPECT_GE(count_lines(o.output, std::regex(R"(^\[ *[0-9]+\.[0-9]{3}s rank 0\] \[weft\.app\] debug: scale -> cpu)")), 1)
      << o.output;
}

TEST(Cli, BadLogLevelsAreErrors) {
  for (const std::string args : {"--log-level loud", "--log-level ''"}) {
    const auto o = run_weft("demo", "--devices cpu --tokens 1 " + args);
    EXPECT_EQ(o.code, 2) << args << "\n" << o.output;
    EXPECT_NE(o.output.find("--log-level"), std::string::npos) << o.output;
  }
  const auto env = run_weft("demo", "--devices cpu --tokens 1", "WEFT_LOG_LEVEL=chatty ");
  EXPECT_EQ(env.code, 2) << env.output;
  EXPECT_NE(env.output.find("WEFT_LOG_LEVEL"), std::string::npos) << env.output;
}

TEST(Cli, ProgressLinesWhenStderrIsNotATerminal) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("weft-cli-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string sample = (dir / "s.h5").string();
  ASSERT_EQ(run_weft("granulometry", "--generate-sample " + sample + " --sample-size 24").code, 0);
  const std::string args = "--devices cpu --input " + sample + ":/exchange/data --element cube --output " +
                           (dir / "out").string();
  // run_weft redirects stderr to a file: lines, not a bar. An interval of 0 writes one per step.
  const auto o = run_weft("granulometry", args, "WEFT_PROGRESS_INTERVAL=0 ");
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_EQ(count_lines(o.output, std::regex(R"(^granulometry: 0/[0-9]+ started$)")), 1) << o.output;
  EXPECT_GE(count_lines(o.output, std::regex(R"(^granulometry: [0-9]+/[0-9]+ \([0-9]+%\), .* elapsed, about .* left$)")), 1)
      << o.output;
  EXPECT_EQ(count_lines(o.output, std::regex(R"(^granulometry: ([0-9]+)/\1 done in )")), 1) << o.output;
  EXPECT_EQ(o.output.find('\r'), std::string::npos) << "a bar where lines belong";
  const auto silent = run_weft("granulometry", args + " --no-progress", "WEFT_PROGRESS_INTERVAL=0 ");
  EXPECT_EQ(silent.code, 0) << silent.output;
  EXPECT_EQ(silent.output.find("granulometry: 0/"), std::string::npos) << silent.output;
  fs::remove_all(dir);
}

}  // namespace

// Views of a job through the `weft` program: `weft graph` and --write-graph (DOT, and SVG through
// graphviz where installed) on 1 and 2 ranks, the trace's arrows from each cross-rank send to its
// receive, and granulometry's phases in the trace.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "common/run_weft.hpp"

namespace {

namespace fs = std::filesystem;
using weft::test::Outcome;
using weft::test::run_weft;

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// A task box of the DOT text: its fill and the place written in it.
struct Node {
  std::string fill, place;
};
/// What a DOT text of graph_dot says: its tasks, and its edges "a.oP -> b.iQ" with their label.
struct Dot {
  std::map<std::string, Node> nodes;
  std::map<std::string, std::string> edges;
};
Dot parse_dot(const std::string& text) {
  Dot d;
  const std::regex node(R"re(^\s*"([^"]+)" \[label=<<TABLE [^>]*BGCOLOR="(#[0-9a-f]{6})".*<FONT POINT-SIZE="8">(rank:[0-9]+/[a-z0-9:]+)</FONT></TD></TR>)re");
  const std::regex edge(R"re(^\s*"([^"]+)":"o([0-9]+)":s -> "([^"]+)":"i([0-9]+)":n \[label="([^"]+)")re");
  std::istringstream in(text);
  std::string line;
  std::smatch m;
  while (std::getline(in, line)) {
    if (std::regex_search(line, m, node) && m[1] != "legend") d.nodes[m[1]] = {m[2], m[3]};
    else if (std::regex_search(line, m, edge)) d.edges[m[1].str() + ".o" + m[2].str() + " -> " + m[3].str() + ".i" + m[4].str()] = m[5];
  }
  return d;
}

bool have_dot() { return std::system("command -v dot > /dev/null 2>&1") == 0; }

/// graphviz accepts the text and draws it.
void expect_dot_draws(const fs::path& dot_file) {
  if (!have_dot()) return;  // graphviz is not installed here (cluster/quickstart.sh test installs it)
  const fs::path svg = dot_file.string() + ".check.svg";
  const std::string cmd = "dot -Tsvg " + dot_file.string() + " -o " + svg.string() + " 2>&1";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  EXPECT_NE(read_text(svg).find("<svg"), std::string::npos);
}

std::string mpiexec(int ranks) {
#ifdef WEFT_MPIEXEC
  return std::string(WEFT_MPIEXEC) + " " + WEFT_MPIEXEC_FLAGS + " -n " + std::to_string(ranks) + " ";
#else
  (void)ranks;
  return {};
#endif
}

class Views : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("weft-views-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  /// The demo's mapping with scale and shift on rank 1: tokens cross ranks twice.
  std::string two_rank_mapping() const {
    std::ofstream(path("demo-2ranks.yaml")) << "ranks: 2\nplaces:\n  source: {rank: 0, device: cpu}\n"
                                                "  scale: {rank: 1, device: cpu}\n  shift: {rank: 1, device: cpu}\n"
                                                "  sink: {rank: 0, device: cpu}\n";
    return path("demo-2ranks.yaml");
  }
  fs::path dir_;
};

TEST_F(Views, DemoGraphOnOneRank) {
  const Outcome o = run_weft("graph", "--app demo --devices cpu --output " + path("demo.dot"));
  ASSERT_EQ(o.code, 0) << o.output;
  const Dot d = parse_dot(read_text(path("demo.dot")));
  ASSERT_EQ(d.nodes.size(), 4u) << read_text(path("demo.dot"));
  for (const auto& [name, node] : d.nodes) {
    EXPECT_EQ(node.place, "rank:0/cpu") << name;
    EXPECT_EQ(node.fill, d.nodes.at("source").fill) << name << ": one place, one colour";
  }
  const std::map<std::string, std::string> edges{{"source.o0 -> scale.i0", "local"},
                                                 {"scale.o0 -> shift.i0", "local"},
                                                 {"shift.o0 -> sink.i0", "local"}};
  EXPECT_EQ(d.edges, edges);
  expect_dot_draws(path("demo.dot"));
  // A real run writes the same picture before it runs.
  const Outcome run = run_weft("demo", "--devices cpu --tokens 3 --length 4 --write-graph " + path("run.dot"));
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_EQ(read_text(path("run.dot")), read_text(path("demo.dot")));
}

TEST_F(Views, DemoGraphOnTwoRanksHasMpiEdges) {
#ifdef WEFT_MPIEXEC
  const std::string args = "--devices cpu --mapping " + two_rank_mapping();
  const Outcome o = run_weft("graph", "--app demo " + args + " --output " + path("demo2.dot"), mpiexec(2));
  ASSERT_EQ(o.code, 0) << o.output;
  const Dot d = parse_dot(read_text(path("demo2.dot")));
  ASSERT_EQ(d.nodes.size(), 4u) << read_text(path("demo2.dot"));
  EXPECT_EQ(d.nodes.at("source").place, "rank:0/cpu");
  EXPECT_EQ(d.nodes.at("scale").place, "rank:1/cpu");
  EXPECT_EQ(d.nodes.at("source").fill, d.nodes.at("sink").fill);
  EXPECT_EQ(d.nodes.at("scale").fill, d.nodes.at("shift").fill);
  EXPECT_NE(d.nodes.at("source").fill, d.nodes.at("scale").fill) << "two places, two colours";
  const std::map<std::string, std::string> edges{{"source.o0 -> scale.i0", "MPI"},
                                                 {"scale.o0 -> shift.i0", "local"},
                                                 {"shift.o0 -> sink.i0", "MPI"}};
  EXPECT_EQ(d.edges, edges);
  expect_dot_draws(path("demo2.dot"));
  const Outcome run = run_weft("demo", "--tokens 3 --length 4 " + args + " --write-graph " + path("run2.dot"), mpiexec(2));
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_EQ(read_text(path("run2.dot")), read_text(path("demo2.dot")));
#else
  GTEST_SKIP() << "no mpiexec";
#endif
}

TEST_F(Views, GranulometryGraphOnOneAndTwoRanks) {
  const std::string sample = path("s.h5");
  ASSERT_EQ(run_weft("granulometry", "--generate-sample " + sample + " --sample-size 24").code, 0);
  // The app's own --output (a folder) comes first; the last --output naming a .dot is the graph's.
  const std::string args = "--app granulometry --input " + sample + ":/exchange/data --element cube --max-size 3 "
                           "--devices cpu --output " + path("curve") + " --output ";
  for (int ranks : {1, 2}) {
    if (ranks == 2 && mpiexec(2).empty()) continue;
    const std::string dot = path("granulometry-" + std::to_string(ranks) + ".dot");
    const Outcome o = run_weft("graph", args + dot, ranks == 2 ? mpiexec(2) : "");
    ASSERT_EQ(o.code, 0) << ranks << " ranks: " << o.output;
    EXPECT_FALSE(fs::exists(path("curve"))) << "weft graph runs nothing and writes no result";
    const Dot d = parse_dot(read_text(dot));
    ASSERT_GE(d.nodes.size(), 3u) << read_text(dot);
    ASSERT_TRUE(d.nodes.count("report")) << read_text(dot);
    std::set<std::string> places, labels;
    for (const auto& [name, node] : d.nodes) places.insert(node.place);
    for (const auto& [edge, label] : d.edges) labels.insert(label);
    if (ranks == 1) {
      EXPECT_EQ(places, std::set<std::string>{"rank:0/cpu"});
      EXPECT_EQ(labels, std::set<std::string>{"local"});
    } else {  // a slab per rank: some tasks on rank 1, their curves sent to rank 0
      EXPECT_TRUE(places.count("rank:1/cpu")) << read_text(dot);
      EXPECT_TRUE(labels.count("MPI")) << read_text(dot);
    }
    expect_dot_draws(dot);
  }
}

TEST_F(Views, SvgThroughGraphviz) {
  if (!have_dot()) GTEST_SKIP() << "graphviz's dot is not installed";
  const Outcome o = run_weft("graph", "--app demo --devices cpu --output " + path("demo.svg"));
  ASSERT_EQ(o.code, 0) << o.output;
  const std::string svg = read_text(path("demo.svg"));
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("scale"), std::string::npos);
  for (const auto& e : fs::directory_iterator(dir_))  // only the picture: no stage, no side file
    EXPECT_EQ(e.path().filename(), "demo.svg");
}

TEST_F(Views, GraphErrorsAreOneLine) {
  const std::vector<std::pair<std::string, std::string>> cases{
      {"--app nope --output " + path("g.dot"), "unknown application 'nope'"},
      {"--app demo --output " + path("g.png"), "--output GRAPH.dot|GRAPH.svg missing"},
      {"--app demo", "--output GRAPH.dot|GRAPH.svg missing"},
      {"--output " + path("g.dot"), "--app NAME missing"},
      {"--app demo --devices cpu --output " + path("g.dot") + " --write-graph " + path("h.dot"), "--write-graph"},
      {"--app granulometry --generate-sample " + path("s.h5") + " --output " + path("g.dot"), "runs no graph"},
  };
  for (const auto& [args, says] : cases) {
    const Outcome o = run_weft("graph", args);
    EXPECT_EQ(o.code, 2) << args << "\n" << o.output;
    EXPECT_NE(o.output.find(says), std::string::npos) << args << "\n" << o.output;
    EXPECT_EQ(std::count(o.output.begin(), o.output.end(), '\n'), 1) << args << "\n" << o.output;
  }
  // Without graphviz an SVG is refused before anything is done, saying what is missing.
  const Outcome o = run_weft("graph", "--app demo --devices cpu --output " + path("g.svg"), "PATH=/nonexistent ");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("graphviz"), std::string::npos) << o.output;
  const Outcome run = run_weft("demo", "--devices cpu --write-graph " + path("g.txt"));
  EXPECT_EQ(run.code, 2) << run.output;
  EXPECT_NE(run.output.find("--write-graph"), std::string::npos) << run.output;
  EXPECT_TRUE(fs::is_empty(dir_));
}

TEST_F(Views, TwoRankTraceHasAnArrowFromEachSendToItsReceive) {
#ifdef WEFT_MPIEXEC
  constexpr int kTokens = 5;
  const Outcome o = run_weft("demo", "--devices cpu --tokens " + std::to_string(kTokens) + " --length 64 --mapping " +
                                         two_rank_mapping() + " --trace " + path("t.json"),
                             mpiexec(2));
  ASSERT_EQ(o.code, 0) << o.output;
  const auto trace = nlohmann::json::parse(read_text(path("t.json")));
  struct End {
    int pid = -1, tid = -1;
    double ts = 0;
  };
  std::map<std::uint64_t, std::vector<End>> starts, finishes;
  std::vector<nlohmann::json> spans;
  for (const auto& e : trace["traceEvents"]) {
    const std::string ph = e["ph"];
    if (ph == "X") spans.push_back(e);
    if (ph != "s" && ph != "f") continue;
    EXPECT_EQ(e["bp"], "e");
    (ph == "s" ? starts : finishes)[e["id"].get<std::uint64_t>()].push_back(
        {e["pid"].get<int>(), e["tid"].get<int>(), e["ts"].get<double>()});
  }
  // Two edges cross ranks (source -> scale, shift -> sink), each with every token.
  EXPECT_EQ(starts.size(), 2u * kTokens);
  ASSERT_EQ(finishes.size(), starts.size());
  auto inside = [&](const End& at, const char* name) {  // bound to a span of that name on its lane
    for (const auto& s : spans)
      if (s["name"] == name && s["pid"] == at.pid && s["tid"] == at.tid && s["ts"].get<double>() <= at.ts &&
          at.ts <= s["ts"].get<double>() + s["dur"].get<double>())
        return true;
    return false;
  };
  for (const auto& [id, s] : starts) {
    ASSERT_EQ(s.size(), 1u) << id;
    ASSERT_EQ(finishes[id].size(), 1u) << id;
    const End& f = finishes[id].front();
    EXPECT_NE(s.front().pid, f.pid) << "an arrow goes from one rank to another";
    EXPECT_TRUE(inside(s.front(), "send")) << id;
    EXPECT_TRUE(inside(f, "receive")) << id;
  }
#else
  GTEST_SKIP() << "no mpiexec";
#endif
}

TEST_F(Views, GranulometryTraceHasASpanPerSize) {
  const std::string sample = path("s.h5");
  ASSERT_EQ(run_weft("granulometry", "--generate-sample " + sample + " --sample-size 24").code, 0);
  const Outcome o = run_weft("granulometry", "--input " + sample + ":/exchange/data --element cube --max-size 4 "
                                             "--devices cpu --output " + path("curve") + " --trace " + path("t.json"));
  ASSERT_EQ(o.code, 0) << o.output;
  const auto trace = nlohmann::json::parse(read_text(path("t.json")));
  std::vector<nlohmann::json> tasks;
  std::map<std::string, nlohmann::json> phases;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != "X") continue;
    if (e["cat"] == "task") tasks.push_back(e);
    if (e["cat"] == "phase") phases[e["name"]] = e;
  }
  for (const std::string name : {"distance to the background", "opening 1", "opening 2", "opening 3", "opening 4"}) {
    ASSERT_TRUE(phases.count(name)) << name << "\n" << trace.dump().substr(0, 4000);
    const auto& p = phases[name];
    bool within = false;  // inside its task's span, on the task's lane
    for (const auto& t : tasks)
      within = within || (t["tid"] == p["tid"] && t["ts"].get<double>() <= p["ts"].get<double>() &&
                          p["ts"].get<double>() + p["dur"].get<double>() <=
                              t["ts"].get<double>() + t["dur"].get<double>() + 1);
    EXPECT_TRUE(within) << name;
  }
  EXPECT_LT(phases["opening 1"]["ts"].get<double>(), phases["opening 4"]["ts"].get<double>());
}

}  // namespace

#include "common/graph_view.hpp"

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <tuple>
#include <vector>

#include "common/markup.hpp"
#include "weft/util/error.hpp"
#include "weft/util/output.hpp"

extern char** environ;

namespace weft::cli {

namespace {

// Fills of the places (ColorBrewer Set3: light, told apart, black text stays readable), in the
// order of the places' ranks and devices; past twelve places they repeat.
constexpr const char* kPlaceColours[] = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072", "#80b1d3", "#fdb462",
                                         "#b3de69", "#fccde5", "#d9d9d9", "#bc80bd", "#ccebc5", "#ffed6f"};

struct EdgeStyle {
  const char* colour;
  const char* width;
};
EdgeStyle style_of(Transport t) {
  switch (t) {
    case Transport::local: return {"#777777", "1"};
    case Transport::mpi: return {"#d62728", "2"};
    case Transport::nccl: return {"#2ca02c", "2"};
    case Transport::cuda_ipc: return {"#9467bd", "2"};
  }
  return {"#000000", "1"};
}
const char* meaning_of(Transport t) {
  switch (t) {
    case Transport::local: return "same rank";
    case Transport::mpi: return "host bytes over MPI";
    case Transport::nccl: return "GPU to GPU, NCCL";
    case Transport::cuda_ipc: return "GPU to GPU, one host";
  }
  return "";
}

/// Text inside an HTML-like label.
std::string html(const std::string& text) { return xml_escaped(text); }

/// A quoted DOT identifier.
std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c == '\n' ? ' ' : c;
  }
  return out + "\"";
}

/// "rank:R/cpu", "rank:R/gpu:K": the rank always written, as the frames group tasks by it.
std::string place_text(const Place& p) {
  std::string device = p.is_gpu() ? "gpu:" + std::to_string(p.device)
                                  : (p.device ? "cpu:" + std::to_string(p.device) : std::string("cpu"));
  return "rank:" + std::to_string(p.rank) + "/" + device;
}

auto place_key(const Place& p) { return std::make_tuple(p.rank, p.is_gpu(), p.device); }

/// A row of port cells, PORT="i0", "i1", ... (or "o0", ...), in a table of its own.
std::string port_row(const std::vector<PortSpec>& ports, char prefix) {
  std::string row = "<TR><TD><TABLE BORDER=\"0\" CELLBORDER=\"1\" CELLSPACING=\"0\" CELLPADDING=\"2\"><TR>";
  for (std::size_t i = 0; i < ports.size(); ++i)
    row += "<TD PORT=\"" + std::string(1, prefix) + std::to_string(i) + "\" BGCOLOR=\"white\"><FONT POINT-SIZE=\"8\">" +
           html(ports[i].name) + "</FONT></TD>";
  return row + "</TR></TABLE></TD></TR>";
}

std::string task_node(const Task& task, const Place& place, const char* fill) {
  std::string label = "<TABLE BORDER=\"1\" CELLBORDER=\"0\" CELLSPACING=\"0\" CELLPADDING=\"2\" BGCOLOR=\"" +
                      std::string(fill) + "\" COLOR=\"#444444\">";
  if (!task.inputs().empty()) label += port_row(task.inputs(), 'i');
  label += "<TR><TD><B>" + html(task.name()) + "</B></TD></TR>";
  label += "<TR><TD><FONT POINT-SIZE=\"8\">" + html(place_text(place)) + "</FONT></TD></TR>";
  if (!task.outputs().empty()) label += port_row(task.outputs(), 'o');
  label += "</TABLE>";
  return quoted(task.name()) + " [label=<" + label + ">, tooltip=" + quoted(task.name() + " on " + place_text(place)) +
         "];";
}

}  // namespace

std::string graph_dot(const Graph& graph, const Mapping& mapping, const Cluster& cluster,
                      const std::vector<Transport>& transports, const std::string& title) {
  std::vector<Place> places;
  for (const auto& t : graph.tasks()) places.push_back(mapping.at(t->name()));
  std::sort(places.begin(), places.end(), [](const Place& a, const Place& b) { return place_key(a) < place_key(b); });
  places.erase(std::unique(places.begin(), places.end()), places.end());
  auto fill = [&](const Place& p) {
    const auto at = std::find(places.begin(), places.end(), p) - places.begin();
    return kPlaceColours[static_cast<std::size_t>(at) % std::size(kPlaceColours)];
  };
  std::ostringstream dot;
  dot << "// " << title << "\n"
      << "digraph weft {\n"
      << "  graph [fontname=\"Helvetica\", fontsize=12, label=" << quoted(title)
      << ", labelloc=t, nodesep=0.3, ranksep=0.5];\n"
      << "  node [shape=plain, fontname=\"Helvetica\", fontsize=10];\n"
      << "  edge [fontname=\"Helvetica\", fontsize=9, arrowsize=0.7];\n";
  std::map<int, std::vector<const Task*>> by_rank;
  for (const auto& t : graph.tasks()) by_rank[mapping.at(t->name()).rank].push_back(t.get());
  for (const auto& [rank, tasks] : by_rank) {
    const std::string host =
        rank >= 0 && rank < cluster.size() ? cluster.ranks[static_cast<std::size_t>(rank)].host : std::string();
    dot << "  subgraph " << quoted("cluster_rank_" + std::to_string(rank)) << " {\n"
        << "    label=" << quoted("rank " + std::to_string(rank) + (host.empty() ? "" : " (" + host + ")"))
        << "; style=\"rounded,dashed\"; color=\"#999999\"; fontcolor=\"#555555\";\n";
    for (const Task* t : tasks) {
      const Place p = mapping.at(t->name());
      dot << "    " << task_node(*t, p, fill(p)) << "\n";
    }
    dot << "  }\n";
  }
  std::set<Transport> used;
  const auto& edges = graph.edges();
  for (std::size_t i = 0; i < edges.size(); ++i) {
    const Edge& e = edges[i];
    const Transport how = i < transports.size() ? transports[i] : Transport::local;
    used.insert(how);
    const EdgeStyle s = style_of(how);
    const std::string name(transport_name(how));
    dot << "  " << quoted(e.from->name()) << ":\"o" << e.from_port << "\":s -> " << quoted(e.to->name()) << ":\"i"
        << e.to_port << "\":n [label=" << quoted(name) << ", color=\"" << s.colour << "\", fontcolor=\"" << s.colour
        << "\", penwidth=" << s.width << ", tooltip="
        << quoted(e.from->name() + "." + e.from->outputs()[static_cast<std::size_t>(e.from_port)].name + " -> " +
                  e.to->name() + "." + e.to->inputs()[static_cast<std::size_t>(e.to_port)].name + ": " + name)
        << "];\n";
  }
  // The legend: every place's colour, every transport's.
  std::string legend = "<TABLE BORDER=\"0\" CELLBORDER=\"1\" CELLSPACING=\"0\" CELLPADDING=\"3\">";
  for (const Place& p : places)
    legend += "<TR><TD BGCOLOR=\"" + std::string(fill(p)) + "\"><FONT POINT-SIZE=\"8\">" + html(place_text(p)) +
              "</FONT></TD></TR>";
  for (const Transport t : used)
    legend += "<TR><TD><FONT POINT-SIZE=\"8\" COLOR=\"" + std::string(style_of(t).colour) + "\">" +
              html(std::string(transport_name(t))) + ": " + meaning_of(t) + "</FONT></TD></TR>";
  legend += "</TABLE>";
  dot << "  subgraph \"cluster_legend\" {\n    label=\"places and transports\"; style=rounded; color=\"#bbbbbb\"; "
         "fontsize=9;\n    \"legend\" [label=<"
      << legend << ">];\n  }\n}\n";
  return dot.str();
}

namespace {

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() > suffix.size() && text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// The full path of graphviz's `dot` on PATH, or empty.
std::string find_dot() {
  const char* path = std::getenv("PATH");
  std::istringstream folders(path ? path : "");
  std::string folder;
  while (std::getline(folders, folder, ':')) {
    const std::string candidate = (folder.empty() ? std::string(".") : folder) + "/dot";
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
  }
  return {};
}

}  // namespace

void check_graph_output(const std::string& path, const std::string& option) {
  if (!ends_with(path, ".dot") && !ends_with(path, ".svg"))
    throw ConfigError(option + " " + path + ": expected a .dot or .svg file");
  check_output(path, OutputKind::file, option);
  if (ends_with(path, ".svg") && find_dot().empty())
    throw ConfigError(option + " " + path +
                      ": an SVG is drawn by graphviz's `dot` program, which is not on PATH (install graphviz, "
                      "e.g. apt-get install graphviz, or write a .dot file)");
}

void write_graph(const std::string& path, const std::string& dot_text, const std::string& option) {
  OutputStage stage(path, OutputKind::file, option);
  const bool svg = ends_with(path, ".svg");
  // For an SVG the DOT text waits beside it in the stage's private folder, removed with it.
  const std::string text_file = svg ? stage.path() + ".dot" : stage.path();
  {
    std::ofstream out(text_file);
    out << dot_text;
    if (!out.flush()) throw IoError(option + " " + path + ": cannot write the graph");
  }
  if (svg) {
    const std::string dot = find_dot();
    if (dot.empty()) throw IoError(option + " " + path + ": graphviz's `dot` program is not on PATH");
    // dot's own messages go to a file of the stage: its first line ends ours, one line in all.
    const std::string errors = stage.path() + ".err";
    posix_spawn_file_actions_t files;
    posix_spawn_file_actions_init(&files);
    posix_spawn_file_actions_addopen(&files, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&files, STDERR_FILENO, errors.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    const std::string out_flag = "-o" + stage.path();
    std::vector<std::string> words{dot, "-Tsvg", out_flag, text_file};
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, dot.c_str(), &files, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&files);
    if (spawned != 0) throw IoError(option + " " + path + ": cannot start " + dot);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::ifstream in(errors);
      std::string first;
      std::getline(in, first);
      throw IoError(option + " " + path + ": `dot -Tsvg` failed" + (first.empty() ? "" : ": " + first));
    }
  }
  stage.commit();
}

}  // namespace weft::cli

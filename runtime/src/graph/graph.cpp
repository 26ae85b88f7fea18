#include "weft/graph/graph.hpp"

#include <algorithm>
#include <map>

#include "weft/util/error.hpp"

namespace weft {

Graph::Graph() = default;
Graph::~Graph() = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;

Task& Graph::add_task(std::unique_ptr<Task> task) {
  if (find(task->name())) throw ConfigError("two tasks are named '" + task->name() + "'");
  tasks_.push_back(std::move(task));
  return *tasks_.back();
}

Task* Graph::find(std::string_view name) const {
  for (const auto& t : tasks_)
    if (t->name() == name) return t.get();
  return nullptr;
}

Task& Graph::at(std::string_view name) const {
  if (Task* t = find(name)) return *t;
  throw ConfigError("no task named '" + std::string(name) + "' in the graph");
}

void Graph::connect_ports(Task* from, int from_port, Task* to, int to_port) {
  auto owned = [&](Task* t) {
    return std::any_of(tasks_.begin(), tasks_.end(), [&](const auto& u) { return u.get() == t; });
  };
  if (!from || !to || !owned(from) || !owned(to))
    throw ConfigError("connect: both tasks must have been added to this graph");
  const PortSpec& out = from->outputs().at(from_port);
  const PortSpec& in = to->inputs().at(to_port);
  std::string what = from->name() + "." + out.name + " -> " + to->name() + "." + in.name;
  if (out.kind != in.kind)
    throw ConfigError("connect " + what + ": output is " + value_kind_name(out.kind) + ", input is " +
                      value_kind_name(in.kind));
  if (out.dtype && in.dtype && *out.dtype != *in.dtype)
    throw ConfigError("connect " + what + ": output dtype " + std::string(dtype_name(*out.dtype)) +
                      ", input dtype " + std::string(dtype_name(*in.dtype)));
  if (out.ndim && in.ndim && out.ndim != in.ndim)
    throw ConfigError("connect " + what + ": output is " + std::to_string(out.ndim) + "D, input is " +
                      std::to_string(in.ndim) + "D");
  for (const Edge& e : edges_)
    if (e.to == to && e.to_port == to_port)
      throw ConfigError("connect " + what + ": input already connected to " + e.from->name());
  edges_.push_back({from, from_port, to, to_port});
}

void Graph::connect(std::string_view from, std::string_view to) {
  auto split = [&](std::string_view text, bool output) {
    auto dot = text.rfind('.');
    if (dot == std::string_view::npos)
      throw ConfigError("connect: expected 'task.port', got '" + std::string(text) + "'");
    Task& t = at(text.substr(0, dot));
    std::string_view port = text.substr(dot + 1);
    const auto& ports = output ? t.outputs() : t.inputs();
    for (std::size_t i = 0; i < ports.size(); ++i)
      if (ports[i].name == port) return std::pair<Task*, int>{&t, static_cast<int>(i)};
    throw ConfigError("connect: task '" + t.name() + "' has no " + (output ? "output" : "input") +
                      " named '" + std::string(port) + "'");
  };
  auto [a, ap] = split(from, true);
  auto [b, bp] = split(to, false);
  connect_ports(a, ap, b, bp);
}

void Graph::place(const Task& task, Place where) {
  for (auto& [t, p] : placements_)
    if (t == &task) {
      p = where;
      return;
    }
  placements_.emplace_back(&task, where);
}

void Graph::migratable(const Task& task, std::vector<Place> candidates) {
  if (std::none_of(tasks_.begin(), tasks_.end(), [&](const auto& t) { return t.get() == &task; }))
    throw ConfigError("migratable: task '" + task.name() + "' was not added to this graph");
  if (task.inputs().empty())
    throw ConfigError("migratable: task '" + task.name() + "' has no input (sources cannot migrate)");
  if (task.routes() || !task.moves_data())
    throw ConfigError("migratable: task '" + task.name() + "' only routes values (farm scatter/gather)");
  for (auto& m : migratables_)
    if (m.task == &task) {
      m.candidates = std::move(candidates);
      return;
    }
  migratables_.push_back({&task, std::move(candidates)});
}

std::optional<Place> Graph::requested_place(const Task& task) const {
  for (const auto& [t, p] : placements_)
    if (t == &task) return p;
  return std::nullopt;
}

std::vector<Edge> Graph::out_edges(const Task& task) const {
  std::vector<Edge> out;
  for (const Edge& e : edges_)
    if (e.from == &task) out.push_back(e);
  std::stable_sort(out.begin(), out.end(), [](const Edge& a, const Edge& b) { return a.from_port < b.from_port; });
  return out;
}

std::vector<Edge> Graph::in_edges(const Task& task) const {
  std::vector<Edge> in;
  for (const Edge& e : edges_)
    if (e.to == &task) in.push_back(e);
  std::stable_sort(in.begin(), in.end(), [](const Edge& a, const Edge& b) { return a.to_port < b.to_port; });
  return in;
}

void Graph::validate() const {
  if (tasks_.empty()) throw ConfigError("the graph has no task");
  for (const auto& t : tasks_) {
    auto in = in_edges(*t);
    for (std::size_t p = 0; p < t->inputs().size(); ++p)
      if (std::none_of(in.begin(), in.end(), [&](const Edge& e) { return e.to_port == static_cast<int>(p); }))
        throw ConfigError("input '" + t->name() + "." + t->inputs()[p].name + "' is not connected");
    auto out = out_edges(*t);
    for (std::size_t p = 0; p < t->outputs().size(); ++p)
      if (std::none_of(out.begin(), out.end(), [&](const Edge& e) { return e.from_port == static_cast<int>(p); }))
        throw ConfigError("output '" + t->name() + "." + t->outputs()[p].name + "' is not connected");
  }
  // Cycle check (Kahn).
  std::map<const Task*, int> indegree;
  for (const auto& t : tasks_) indegree[t.get()] = 0;
  for (const Edge& e : edges_) ++indegree[e.to];
  std::vector<const Task*> ready;
  for (auto& [t, d] : indegree)
    if (d == 0) ready.push_back(t);
  std::size_t seen = 0;
  while (!ready.empty()) {
    const Task* t = ready.back();
    ready.pop_back();
    ++seen;
    for (const Edge& e : edges_)
      if (e.from == t && --indegree[e.to] == 0) ready.push_back(e.to);
  }
  if (seen != tasks_.size()) throw ConfigError("the graph has a cycle");
}

}  // namespace weft

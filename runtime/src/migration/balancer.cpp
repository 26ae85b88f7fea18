// The load balancer's model; see balancer.hpp.
#include "migration/balancer.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "weft/util/error.hpp"

namespace weft::detail {
namespace {

template <class T> void put(std::vector<std::byte>& out, const T& v) {
  auto at = out.size();
  out.resize(at + sizeof v);
  std::memcpy(out.data() + at, &v, sizeof v);
}
template <class T> T get(const std::vector<std::byte>& in, std::size_t& at) {
  T v{};
  if (at + sizeof v > in.size()) throw Error("load balancer: truncated report");
  std::memcpy(&v, in.data() + at, sizeof v);
  at += sizeof v;
  return v;
}

}  // namespace

std::vector<std::byte> RankReport::encode() const {
  std::vector<std::byte> out;
  put(out, static_cast<std::uint32_t>(actors.size()));
  for (const auto& a : actors) put(out, a);
  put(out, static_cast<std::uint32_t>(current.size()));
  for (const auto& c : current) {
    put(out, c.first);
    put(out, c.second);
  }
  return out;
}

RankReport RankReport::decode(const std::vector<std::byte>& bytes) {
  RankReport r;
  std::size_t at = 0;
  r.actors.resize(get<std::uint32_t>(bytes, at));
  for (auto& a : r.actors) a = get<ActorSample>(bytes, at);
  r.current.resize(get<std::uint32_t>(bytes, at));
  for (auto& c : r.current) {
    c.first = get<std::int32_t>(bytes, at);
    c.second = get<std::int32_t>(bytes, at);
  }
  return r;
}

BalanceModel::BalanceModel(const RunPlan& plan, std::string mode, double threshold, double period)
    : plan_(plan), mode_(std::move(mode)), threshold_(threshold), period_(period) {}

double BalanceModel::best_of(int vertex) const {
  const Vertex& v = plan_.vertices[vertex];
  std::vector<int> same_task{vertex};
  if (v.role == Vertex::instance) same_task = plan_.groups[v.group].instances;
  double best = -1;
  for (int u : same_task)
    if (auto c = best_seen_.find(u); c != best_seen_.end() && (best < 0 || c->second < best)) best = c->second;
  return best;
}

double BalanceModel::slowdown(const Place& place) const {
  // How much slower than their best the tasks measured on this place ran there (1: not slower).
  double factor = 1;
  for (const auto& [v, c] : cost_) {
    if (!c.measured || plan_.vertices[v].place != place) continue;
    double best = best_of(v);
    if (best > 0) factor = std::max(factor, c.seconds / best);
  }
  return factor;
}

double BalanceModel::cost_at(int group, int candidate) const {
  const GroupPlan& g = plan_.groups[group];
  auto it = cost_.find(g.instances[candidate]);
  if (it != cost_.end() && it->second.measured) return it->second.seconds;
  // Never measured there: the best it did on a place of the same kind, times how much slower
  // than their best the tasks measured on that place ran there.
  double best = -1;
  for (std::size_t i = 0; i < g.instances.size(); ++i) {
    auto c = best_seen_.find(g.instances[i]);
    if (c == best_seen_.end() || g.places[i].kind != g.places[candidate].kind) continue;
    if (best < 0 || c->second < best) best = c->second;
  }
  if (best < 0) return -1;  // nothing known for this kind of place (a GPU task never measured on a CPU)
  return best * slowdown(g.places[candidate]);
}

std::string BalanceModel::view() const {
  std::string view = "load";
  char number[32];
  auto ms = [&](double seconds) {
    std::snprintf(number, sizeof number, "%.3f", seconds * 1e3);
    return number;
  };
  for (const auto& [p, l] : last_load_) view.append(" ").append(p.str()).append("=").append(ms(l));
  for (const auto& [g, cur] : last_current_) {
    const GroupPlan& gp = plan_.groups[g];
    view.append("; ").append(gp.task->name()).append(":");
    for (std::size_t i = 0; i < gp.places.size(); ++i) {
      auto it = cost_.find(gp.instances[i]);
      const bool measured = it != cost_.end() && it->second.measured;
      const double c = cost_at(g, static_cast<int>(i));
      view.append(static_cast<int>(i) == cur ? " *" : " ").append(gp.places[i].str()).append("=");
      if (c < 0) {
        view.append("?");
      } else {
        if (!measured) view.append("~");
        view.append(ms(c));
      }
    }
  }
  return view;
}

std::vector<Move> BalanceModel::step(const std::vector<ActorSample>& actors, const std::map<int, int>& current_in,
                                     double now) {
  double dt = now - last_now_;
  last_now_ = now;
  std::map<int, std::uint64_t> group_tokens;
  for (const ActorSample& a : actors) {
    if (a.vertex < 0 || a.vertex >= static_cast<int>(plan_.vertices.size())) continue;
    const Vertex& v = plan_.vertices[a.vertex];
    ActorSample& prev = last_[a.vertex];
    if (a.tokens > prev.tokens) {
      double n = static_cast<double>(a.tokens - prev.tokens);
      double c = std::max(0.0, a.busy_seconds - prev.busy_seconds) / n;
      Cost& k = cost_[a.vertex];
      k.seconds = k.measured ? 0.5 * k.seconds + 0.5 * c : c;
      k.measured = true;
      auto seen = best_seen_.find(a.vertex);
      if (seen == best_seen_.end() || c < seen->second) best_seen_[a.vertex] = c;
      bytes_per_token_[a.vertex] = static_cast<double>(a.bytes_in - prev.bytes_in) / n;
      if (v.role == Vertex::instance) group_tokens[v.group] += a.tokens - prev.tokens;
    }
    if (v.role == Vertex::instance && a.state_bytes) state_bytes_[v.group] = a.state_bytes;
    prev = a;
  }
  throughput_ = 0;
  for (const auto& [g, n] : group_tokens) throughput_ = std::max(throughput_, dt > 0 ? n / dt : 0.0);

  std::map<int, int> current = current_in;
  for (std::size_t g = 0; g < plan_.groups.size(); ++g)
    if (!current.count(static_cast<int>(g))) current[static_cast<int>(g)] = plan_.groups[g].initial;
  std::map<Place, double> load;
  for (std::size_t v = 0; v < plan_.vertices.size(); ++v) {
    const Vertex& vx = plan_.vertices[v];
    if (vx.role != Vertex::plain) continue;
    auto it = cost_.find(static_cast<int>(v));
    if (it != cost_.end() && it->second.measured) load[vx.place] += it->second.seconds;
  }
  for (const auto& [g, i] : current) load[plan_.groups[g].places[i]] += std::max(0.0, cost_at(g, i));
  auto bottleneck = [&] {
    auto it = std::max_element(load.begin(), load.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    return it == load.end() ? std::pair<Place, double>{Place{}, 0.0} : std::pair<Place, double>{it->first, it->second};
  };
  iteration_ = bottleneck().second;
  last_load_ = load;
  last_current_ = current;

  for (auto& [g, n] : cooldown_) n = std::max(0, n - 1);
  for (auto& [g, l] : left_) ++l.second;
  std::vector<Move> moves;
  if (mode_ == "off" || iteration_ <= 0) return moves;
  std::size_t budget = mode_ == "greedy" ? 1 : plan_.groups.size();
  while (moves.size() < budget) {
    auto [from_place, before] = bottleneck();
    if (before <= 0) break;
    Move best;
    best.group = -1;
    double best_gain = 0;
    for (const auto& [g, cur] : current) {
      const GroupPlan& gp = plan_.groups[g];
      if (gp.places[cur] != from_place || cooldown_[g] > 0) continue;
      auto measured = cost_.find(gp.instances[cur]);
      if (measured == cost_.end() || !measured->second.measured) continue;
      double c_from = cost_at(g, cur);
      for (std::size_t i = 0; i < gp.places.size(); ++i) {
        if (static_cast<int>(i) == cur) continue;
        const Place& to = gp.places[i];
        double transfer = to.rank != from_place.rank ? bytes_per_token_[gp.instances[cur]] / kLinkBytesPerSecond : 0;
        double estimate = cost_at(g, static_cast<int>(i));
        if (estimate < 0) continue;
        double c_to = estimate + transfer;
        double after = std::max(load[from_place] - c_from, load[to] + c_to);
        for (const auto& [p, l] : load)
          if (p != from_place && p != to) after = std::max(after, l);
        double gain = (before - after) / before;
        double move_seconds = kMoveLatency + static_cast<double>(state_bytes_[g]) / kStateBytesPerSecond;
        double amortised = move_seconds / (kHorizonPeriods * period_);
        bool back = left_.count(g) && left_[g].first == static_cast<int>(i) && left_[g].second < 5;
        double need = threshold_ * (back ? 2 : 1);
        if (gain - amortised > need && gain > best_gain) {
          best_gain = gain;
          best = Move{g, static_cast<int>(i), gain,
                  "bottleneck " + from_place.str() + " at " + std::to_string(before * 1e3) + " ms/token; " +
                      std::to_string(c_from * 1e3) + " ms here, " + std::to_string(c_to * 1e3) + " ms predicted on " +
                      to.str() + (transfer > 0 ? " (edges across ranks included)" : "") + ", move " +
                      std::to_string(move_seconds * 1e3) + " ms" + (back ? ", back to a place it left" : "")};
        }
      }
    }
    if (best.group < 0) break;
    const GroupPlan& gp = plan_.groups[best.group];
    int cur = current[best.group];
    double transfer =
        gp.places[best.to].rank != from_place.rank ? bytes_per_token_[gp.instances[cur]] / kLinkBytesPerSecond : 0;
    load[from_place] -= cost_at(best.group, cur);
    load[gp.places[best.to]] += cost_at(best.group, best.to) + transfer;
    left_[best.group] = {cur, 0};
    cooldown_[best.group] = kCooldown;
    current[best.group] = best.to;
    moves.push_back(std::move(best));
  }
  return moves;
}

}  // namespace weft::detail

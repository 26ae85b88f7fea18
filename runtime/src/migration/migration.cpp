// Live migration: the commands that reach a router, the hand-over of state, and the router's and merger's loops. See migration.hpp.
#include "migration/migration.hpp"
#include "transport/remote.hpp"

#include <algorithm>
#include <cstring>

#include "weft/util/error.hpp"
#include "weft/util/log.hpp"

namespace weft::detail {
namespace {
constexpr int kBoxesPerGroup = 256;  // box = group * 256 + (0: commands, 1 + i: state for candidate i)
}  // namespace

void Mailbox::put(Handover state) {
  {
    std::lock_guard lock(mutex_);
    messages_.push_back(std::move(state));
  }
  changed_.notify_all();
}

bool Mailbox::take(Handover& state) {
  SerialPause pause;  // overlap off: whoever puts the message may need this rank's serial lock
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return cancelled_ || !messages_.empty(); });
  if (messages_.empty()) return false;
  state = std::move(messages_.front());
  messages_.pop_front();
  return true;
}

void Mailbox::cancel() {
  {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
  }
  changed_.notify_all();
}

Migration::Migration(int id, const GroupPlan& plan, int router_rank)
    : id_(id), task_(plan.task->name()), places_(plan.places), initial_(plan.initial), router_rank_(router_rank),
      drained_(plan.places.size(), false), current_(plan.initial) {
  for (std::size_t i = 0; i < places_.size(); ++i) handovers_.push_back(std::make_unique<Mailbox>());
}

int Migration::find(const Place& place) const {
  auto it = std::find(places_.begin(), places_.end(), place);
  return it == places_.end() ? -1 : static_cast<int>(it - places_.begin());
}

void Migration::command(Command c) {
  std::lock_guard lock(mutex_);
  commands_.push_back(c);
}

int Migration::destination(int current) {
  std::lock_guard lock(mutex_);
  if (commands_.empty()) return current;
  auto log = logger("migration");
  int target = current;
  for (const Command& c : commands_) {
    if (c.instance < 0 || c.instance >= static_cast<int>(places_.size())) continue;
    if (c.kind == Command::drain) drained_[c.instance] = true;
    else if (c.kind == Command::undrain) drained_[c.instance] = false;
    else if (drained_[c.instance]) log->warn("{}: not moved to {}, which is drained", task_, places_[c.instance].str());
    else target = c.instance;
  }
  commands_.clear();
  if (drained_[target]) {
    // The nearest candidate still allowed: same rank and kind, then same kind, then any.
    const Place& from = places_[target];
    int best = -1, best_score = -1;
    for (std::size_t i = 0; i < places_.size(); ++i) {
      if (drained_[i]) continue;
      int score = (places_[i].rank == from.rank ? 2 : 0) + (places_[i].kind == from.kind ? 1 : 0);
      if (score > best_score) best = static_cast<int>(i), best_score = score;
    }
    if (best < 0) log->warn("{}: every candidate place is drained; it stays on {}", task_, from.str());
    else target = best;
  }
  if (target != current) {
    current_ = target;
    ++moves_;
  }
  return target;
}

void Migration::cancel() {
  for (auto& h : handovers_) h->cancel();
}

Migrations::Migrations(const RunPlan& plan, int rank, Post post) : rank_(rank), post_(std::move(post)) {
  for (std::size_t i = 0; i < plan.groups.size(); ++i)
    groups_.push_back(std::make_unique<Migration>(static_cast<int>(i), plan.groups[i],
                                                  plan.vertices[plan.groups[i].router].place.rank));
}

Migration* Migrations::find(const std::string& task) {
  for (auto& g : groups_)
    if (g->task() == task) return g.get();
  return nullptr;
}

void Migrations::send_command(Migration& m, Command c) {
  if (m.router_rank() == rank_ || !post_) {
    m.command(c);
    return;
  }
  std::vector<std::byte> bytes(sizeof c);
  std::memcpy(bytes.data(), &c, sizeof c);
  post_(m.router_rank(), m.id() * kBoxesPerGroup, std::move(bytes));
}

void Migrations::migrate(const std::string& task, const Place& to) {
  Migration* m = find(task);
  if (!m) throw ConfigError("migrate: task '" + task + "' is not migratable in this run");
  int i = m->find(to);
  if (i < 0) {
    std::string list;
    for (const Place& p : m->places()) list += (list.empty() ? "" : ", ") + p.str();
    throw ConfigError("migrate: " + to.str() + " is not a candidate place of task '" + task + "' (" + list + ")");
  }
  send_command(*m, {Command::move, i});
}

void Migrations::drain(const Place& place, bool drained) {
  for (auto& g : groups_)
    if (int i = g->find(place); i >= 0) send_command(*g, {drained ? Command::drain : Command::undrain, i});
}

void Migrations::hand_over(int group, int instance, Handover state) {
  Migration& m = *groups_.at(group);
  int to = m.places().at(instance).rank;
  if (to == rank_ || !post_) m.handover(instance).put(std::move(state));
  else post_(to, group * kBoxesPerGroup + 1 + instance, std::move(state.bytes));  // a state message
}

void Migrations::deliver(int box, std::vector<std::byte> bytes) {
  Migration& m = *groups_.at(box / kBoxesPerGroup);
  int sub = box % kBoxesPerGroup;
  if (sub > 0) {
    m.handover(sub - 1).put(Handover{std::move(bytes), {}, true});
  } else if (bytes.size() == sizeof(Command)) {
    Command c;
    std::memcpy(&c, bytes.data(), sizeof c);
    m.command(c);
  }
}

void Migrations::cancel() {
  for (auto& g : groups_) g->cancel();
}

void route_tokens(Migration& m, const std::vector<Channel*>& inputs, const std::vector<Channel*>& outputs) {
  const std::size_t ports = inputs.size();
  const std::size_t instances = m.places().size();
  int current = m.initial();
  std::vector<Token> tokens(ports);
  while (true) {
    bool end = false;
    std::vector<bool> ended(ports, false);
    for (std::size_t p = 0; p < ports; ++p) {
      if (!inputs[p]->pop(tokens[p])) return;
      if (tokens[p].end) end = ended[p] = true;
    }
    if (end) {
      for (std::size_t p = 0; p < ports; ++p) {
        Token t;
        while (!ended[p] && inputs[p]->pop(t) && !t.end) {
        }
      }
      // Every instance ends; the current one is told so (it may still be waiting for its state).
      for (std::size_t i = 0; i < instances; ++i)
        for (std::size_t p = 0; p < ports; ++p)
          if (!outputs[i * ports + p]->push(Token{static_cast<int>(i) == current ? 1u : 0u, true, {}, {}})) return;
      return;
    }
    int next = m.destination(current);
    if (next != current) {
      // Tokens sent to the old instance that none of its firings has started (still in the
      // channels to it, or to the link that sends them to its rank) go to the new one instead:
      // a slowed place does not work off its queue before the move takes effect.
      std::vector<Channel*> old(outputs.begin() + current * ports, outputs.begin() + (current + 1) * ports);
      auto taken = Channel::take_back(old);
      std::uint64_t first = taken[0].empty() ? tokens[0].index : taken[0].front().index;
      // The old instance's epoch ends after the tokens it keeps (channels are FIFO).
      for (std::size_t p = 0; p < ports; ++p) {
        Token marker{first, false, {}, {}, next + 1};
        if (!outputs[current * ports + p]->push(std::move(marker))) return;
      }
      logger("migration")->debug("{}: token {} onwards on {} (was {}; {} taken back from its queue)", m.task(), first,
                                 m.places()[next].str(), m.places()[current].str(), taken[0].size());
      current = next;
      for (std::size_t k = 0; k < taken[0].size(); ++k)
        for (std::size_t p = 0; p < ports; ++p)
          if (!outputs[current * ports + p]->push(std::move(taken[p][k]))) return;
    }
    for (std::size_t p = 0; p < ports; ++p)
      if (!outputs[current * ports + p]->push(std::move(tokens[p]))) return;
  }
}

void merge_tokens(Migration& m, const std::vector<Channel*>& inputs, const std::vector<std::vector<Channel*>>& outputs) {
  const std::size_t ports = outputs.size();
  const std::size_t instances = m.places().size();
  std::size_t current = static_cast<std::size_t>(m.initial());
  std::vector<Token> tokens(ports);
  while (true) {
    for (std::size_t q = 0; q < ports; ++q)
      if (!inputs[current * ports + q]->pop(tokens[q])) return;
    if (tokens[0].marker > 0) {
      current = static_cast<std::size_t>(tokens[0].marker - 1);
      continue;
    }
    if (tokens[0].end) {
      for (std::size_t i = 0; i < instances; ++i) {
        if (i == current) continue;
        for (std::size_t q = 0; q < ports; ++q) {
          Token t;
          while (inputs[i * ports + q]->pop(t) && !t.end) {
          }
        }
      }
      for (auto& consumers : outputs)
        for (Channel* c : consumers) c->push(Token{0, true, {}, {}});
      return;
    }
    for (std::size_t q = 0; q < ports; ++q) {
      auto& consumers = outputs[q];
      for (std::size_t c = 0; c < consumers.size(); ++c) {
        Token t = c + 1 == consumers.size() ? std::move(tokens[q]) : tokens[q];
        if (!consumers[c]->push(std::move(t))) return;
      }
    }
  }
}

}  // namespace weft::detail

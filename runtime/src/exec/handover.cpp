// A migratable task's hand-over between places: the old instance saves and sends its state, the
// new one takes it over (declared in firing.hpp; the plans and routing are in migration.cpp).
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "data/buffer.hpp"
#include "exec/firing.hpp"
#include "migration/migration.hpp"
#include "migration/state_transfer.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/util/log.hpp"
#include "weft/util/settings.hpp"

namespace weft::detail {

// A migratable task's instance takes the task over: it waits for the state the previous place
// handed over, starts and loads it. False if the run was cancelled first.
bool take_over(State& run, Node& node, FiringContext& ctx) {
  const auto waited = std::chrono::steady_clock::now();
  Handover state;
  if (!node.migration->handover(node.instance).take(state)) return false;
  const auto arrived = std::chrono::steady_clock::now();
  double t0 = run.trace.enabled() ? run.trace.now_us() : 0;
  std::vector<Array> arrays;
  if (state.wire) {  // from another rank: the arrays' data follows the message
    std::vector<std::byte> bytes;
    std::vector<StateArrayInfo> infos;
    int from = 0;
    decode_handover(state.bytes, bytes, infos, from);
    state.bytes = std::move(bytes);
    if (!infos.empty() && !receive_state_arrays(*run.remote, infos, from,
                                                        state_channel(node.migration->id()), node.place, arrays))
      return false;
  } else {
    arrays = move_state_arrays(std::move(state.arrays), node.place);
  }
  const auto copied = std::chrono::steady_clock::now();
  node.task->start(ctx);
  if (node.task->stateful()) {
    node.task->load(state.bytes);
    node.task->load_arrays(std::move(arrays));
  }
  node.active = true;
  logger("migration")->debug("{}: took over on {}: state waited for {:.2f} ms, its arrays in {:.2f} ms, started and "
                             "loaded in {:.2f} ms", node.task->name(), node.place.str(),
                             ms_between(waited, arrived), ms_between(arrived, copied),
                             ms_between(copied, std::chrono::steady_clock::now()));
  if (run.trace.enabled()) run.trace.add({"take over", "migration", node.lane, 0, t0, run.trace.now_us() - t0});
  return true;
}

// The end of this instance's epoch (after its last token, whose work is complete): save the
// state, stop, hand the state to candidate `to` and pass the marker on to the merger.
bool hand_over(State& run, Node& node, FiringContext& ctx, std::uint64_t index, int to) {
  const auto begun = std::chrono::steady_clock::now();
  double t0 = run.trace.enabled() ? run.trace.now_us() : 0;
  std::vector<std::byte> state;
  std::vector<Array> arrays;
  if (node.task->stateful()) {
    node.task->save(state);
    node.task->save_arrays(arrays);
  }
  node.task->stop(ctx);
  if (node.place.is_gpu()) synchronize_stream(node.place.device, ctx.stream());
  std::size_t bytes = state.size();
  for (const Array& a : arrays) {
    bytes += a.bytes();
    if (!a.memory().is_host()) release_on_home(a);  // the task's stream is not theirs any more
  }
  const Place& target = node.migration->places()[to];
  logger("migration")->debug("{}: {} hands over to {} before token {} ({} bytes of state, {} arrays)", node.task->name(),
                             node.place.str(), target.str(), index, bytes, arrays.size());
  node.state_bytes = bytes;
  const auto saved = std::chrono::steady_clock::now();
  if (target.rank != run.rank && run.remote) {
    // To a rank of this host, device arrays are offered through CUDA IPC (WEFT_STATE_IPC=0: never).
    std::optional<StateExport> exports;
    const Environment* env = Environment::current();
    if (env && target.is_gpu() && settings().state_ipc &&
        env->cluster().ranks.at(target.rank).host == env->cluster().ranks.at(run.rank).host)
      exports.emplace(arrays);
    const auto exported = std::chrono::steady_clock::now();
    const StateExport* offered = exports ? &*exports : nullptr;
    auto message = encode_handover(state, arrays, run.rank, offered);
    run.migrations->hand_over(node.migration->id(), to, Handover{std::move(message), {}, true});
    if (!arrays.empty() && !send_state_arrays(*run.remote, arrays, target.rank,
                                                      state_channel(node.migration->id()), offered))
      return false;
    logger("migration")->debug("{}: handed over to {}: saved and stopped in {:.2f} ms, exported in {:.2f} ms, sent "
                               "(or copied by the peer) in {:.2f} ms", node.task->name(), target.str(),
                               ms_between(begun, saved), ms_between(saved, exported),
                               ms_between(exported, std::chrono::steady_clock::now()));
  } else {
    run.migrations->hand_over(node.migration->id(), to, Handover{std::move(state), std::move(arrays), false});
  }
  node.active = false;
  for (auto& consumers : node.outputs)
    for (auto* c : consumers)
      if (!c->push(Token{index, false, {}, {}, to + 1})) return false;
  if (run.trace.enabled()) run.trace.add({"hand over", "migration", node.lane, index, t0, run.trace.now_us() - t0});
  return true;
}

}  // namespace weft::detail

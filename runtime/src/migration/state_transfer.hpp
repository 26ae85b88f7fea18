#pragma once
// Internal: moving a migrated task's state arrays (Task::save_arrays) to its new place. In one
// process the arrays are copied to the new place directly (a peer copy between GPUs); between
// ranks their descriptions travel with the state message; between GPUs of one host the receiving
// rank copies device arrays straight out of the sender's GPU (CUDA IPC), otherwise the data
// follows on a message channel of the migration group, device arrays staged through pinned
// buffers in chunks so that the copies out of and into the GPUs overlap the MPI transfer.
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "transport/remote.hpp"
#include "weft/data/array.hpp"
#include "weft/graph/place.hpp"

namespace weft::detail {

/// Milliseconds from a to b: the phases of a migration (hand-over, take-over, state transfer),
/// logged at debug level by the executor and here.
inline double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

/// One state array as described in the state message.
struct StateArrayInfo {
  std::int32_t dtype = 0;
  std::int32_t ndim = 0;
  std::int64_t dims[3] = {1, 1, 1};
  std::int32_t ipc = 0;  ///< 1: the data waits in GPU memory of the sender, `handle` opens it
  std::int32_t pad = 0;
  std::byte handle[64] = {};  ///< cudaIpcMemHandle_t
};

/// Device arrays offered to a rank of the same host through CUDA IPC: each copied into memory of
/// its own (cudaMalloc: the pools' memory cannot be exported) whose handle travels in the state
/// message; the peer copies it GPU to GPU (NVLink where there is one) and says when it is done,
/// or that it could not open it, and then the data is sent as for another host. Frees the
/// memory when destroyed.
class StateExport {
 public:
  StateExport() = default;
  /// Exports what it can of `arrays` (none without CUDA; an array it cannot export is sent).
  explicit StateExport(const std::vector<Array>& arrays);
  ~StateExport();
  StateExport(const StateExport&) = delete;
  StateExport& operator=(const StateExport&) = delete;
  [[nodiscard]] bool exported(std::size_t i) const { return i < entries_.size() && entries_[i].memory; }

 private:
  friend std::vector<std::byte> encode_handover(std::span<const std::byte>, const std::vector<Array>&, int,
                                                const StateExport*);
  struct Entry {
    void* memory = nullptr;
    int device = -1;
    std::byte handle[64] = {};
  };
  std::vector<Entry> entries_;
};

/// The message a rank posts for a migration to another rank: save()'s bytes, the arrays'
/// descriptions (with their IPC handles where `exports` has them) and the sending rank.
[[nodiscard]] std::vector<std::byte> encode_handover(std::span<const std::byte> bytes, const std::vector<Array>& arrays,
                                                     int from, const StateExport* exports = nullptr);
/// Throws Error on a malformed message.
void decode_handover(std::span<const std::byte> message, std::vector<std::byte>& bytes,
                     std::vector<StateArrayInfo>& arrays, int& from);

/// The message channel of a migration group's state data (beside the partitions' halo channels).
[[nodiscard]] int state_channel(int group);

/// Sends the arrays' data to `peer` (blocks until sent, or for exported arrays until the peer
/// copied them; false if the run was cancelled).
[[nodiscard]] bool send_state_arrays(RemoteLinks& remote, const std::vector<Array>& arrays, int peer, int channel,
                                     const StateExport* exports = nullptr);
/// Receives arrays described by `infos` from `peer` onto `place` (host arrays on a CPU place);
/// false if the run was cancelled.
[[nodiscard]] bool receive_state_arrays(RemoteLinks& remote, const std::vector<StateArrayInfo>& infos, int peer,
                                        int channel, const Place& place, std::vector<Array>& out);
/// Arrays of this process onto `place` (copies where they are elsewhere; complete on return).
[[nodiscard]] std::vector<Array> move_state_arrays(std::vector<Array> arrays, const Place& place);

}  // namespace weft::detail

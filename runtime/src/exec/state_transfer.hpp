#pragma once
// Internal: moving a migrated task's state arrays (Task::save_arrays) to its new place. In one
// process the arrays are copied to the new place directly (a peer copy between GPUs); between
// ranks their descriptions travel with the state message and the data follows on a message
// channel of the migration group, device arrays staged through pinned buffers in chunks so that
// the copies out of and into the GPUs overlap the MPI transfer.
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "exec/remote.hpp"
#include "weft/data/array.hpp"
#include "weft/mapping/place.hpp"

namespace weft::detail {

/// One state array as described in the state message.
struct StateArrayInfo {
  std::int32_t dtype = 0;
  std::int32_t ndim = 0;
  std::int64_t dims[3] = {1, 1, 1};
};

/// The message a rank posts for a migration to another rank: save()'s bytes, the arrays'
/// descriptions and the sending rank.
[[nodiscard]] std::vector<std::byte> encode_handover(std::span<const std::byte> bytes, const std::vector<Array>& arrays,
                                                     int from);
/// Throws Error on a malformed message.
void decode_handover(std::span<const std::byte> message, std::vector<std::byte>& bytes,
                     std::vector<StateArrayInfo>& arrays, int& from);

/// The message channel of a migration group's state data (beside the partitions' halo channels).
[[nodiscard]] int state_channel(int group);

/// Sends the arrays' data to `peer` (blocks until sent; false if the run was cancelled).
[[nodiscard]] bool send_state_arrays(RemoteLinks& remote, const std::vector<Array>& arrays, int peer, int channel);
/// Receives arrays described by `infos` from `peer` onto `place` (host arrays on a CPU place);
/// false if the run was cancelled.
[[nodiscard]] bool receive_state_arrays(RemoteLinks& remote, const std::vector<StateArrayInfo>& infos, int peer,
                                        int channel, const Place& place, std::vector<Array>& out);
/// Arrays of this process onto `place` (copies where they are elsewhere; complete on return).
[[nodiscard]] std::vector<Array> move_state_arrays(std::vector<Array> arrays, const Place& place);

}  // namespace weft::detail

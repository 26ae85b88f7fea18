#pragma once
// Internal: the bodies of an edge's sender and receiver threads between ranks (RemoteLinks
// starts them), over the edge's links (link.hpp).
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <memory>
#include <vector>

#include "transport/channel.hpp"
#include "transport/link.hpp"
#include "transport/progress.hpp"

namespace weft::detail {

/// Sends every token `source` yields until the end of its stream (or a cancellation), each
/// through the first of `links` that carries it. `serial`: overlap off.
void send_tokens(MpiProgress& mpi, Channel& source, const EdgeEnd& end, std::vector<std::unique_ptr<SendLink>>& links,
                 bool serial);
/// Receives tokens into `sink` until the end of the stream (or a cancellation), granting
/// `capacity` credits first and one per token delivered.
void receive_tokens(MpiProgress& mpi, Channel& sink, const EdgeEnd& end,
                    std::vector<std::unique_ptr<ReceiveLink>>& links, int capacity);

}  // namespace weft::detail

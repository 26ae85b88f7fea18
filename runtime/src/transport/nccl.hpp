#pragma once
// Internal: NCCL point-to-point transport between the GPUs of different ranks. One communicator
// over all ranks, created collectively (bootstrapped over MPI) the first time a run needs it,
// each rank on one device. Calls on it are serialised by a mutex and run on one NCCL stream.
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <mpi.h>

#include <memory>

#include "device/device.hpp"
#include "weft/data/array.hpp"

namespace weft::detail {

[[nodiscard]] bool nccl_compiled() noexcept;
/// Collective over `comm`: every rank calls it with its device. Idempotent for the same device.
void nccl_init(MPI_Comm comm, int device);
/// The device this rank's communicator uses, or -1 before nccl_init.
[[nodiscard]] int nccl_device() noexcept;
/// Sends a device array to `peer` after `ready`; the returned event completes with the send.
/// With `timing`, the transfer's GPU interval is recorded there (tracing).
[[nodiscard]] std::shared_ptr<Event> nccl_send(const Array& array, const Event* ready, int peer,
                                               GpuInterval* timing = nullptr);
/// Receives into a new device array from `peer`; its event completes with the receive.
[[nodiscard]] Array nccl_recv(DType type, Shape shape, int peer, std::shared_ptr<Event>& done,
                             GpuInterval* timing = nullptr);

}  // namespace weft::detail

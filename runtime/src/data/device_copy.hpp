#pragma once
// Internal: whole arrays between host and GPU memory, or between two GPUs, on the device's copy
// streams (device/device.hpp), with the events that order them against the tasks that use them.
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <memory>

#include "device/device.hpp"
#include "weft/data/array.hpp"

namespace weft::detail {

/// Host array -> new device array of `device`; the copy runs on the h2d stream and `user` (the
/// consuming task's stream) is made to wait for it. `done` is recorded after the copy (keep `src`
/// alive until then).
/// With `timing`, the copy's GPU interval is recorded there (tracing).
[[nodiscard]] Array copy_to_device(const Array& src, int device, void* user, std::shared_ptr<Event>& done,
                                   GpuInterval* timing = nullptr);
/// Device array -> new host array, after `ready` (if any); blocks until the copy completed.
[[nodiscard]] Array copy_to_host(const Array& src, const Event* ready, GpuInterval* timing = nullptr);
/// The same without blocking: `done` completes with the copy (keep `src` alive until then, read
/// the host array only after it).
[[nodiscard]] Array copy_to_host_async(const Array& src, const Event* ready, std::shared_ptr<Event>& done,
                                       GpuInterval* timing = nullptr);
/// Device array -> array on another GPU of this process (peer copy); `user` waits for it.
[[nodiscard]] Array copy_between_devices(const Array& src, int device, void* user, const Event* ready,
                                         std::shared_ptr<Event>& done, GpuInterval* timing = nullptr);

}  // namespace weft::detail

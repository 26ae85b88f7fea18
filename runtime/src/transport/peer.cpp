#include "transport/peer.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "weft/util/error.hpp"

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime.h>

#include "weft/device/cuda_check.hpp"
#include "weft/util/settings.hpp"
#endif

namespace weft::detail {

std::size_t ipc_allocation_bytes(std::size_t bytes) noexcept {
  constexpr std::size_t kBlock = std::size_t(2) << 20;
  return (std::max<std::size_t>(bytes, 1) + kBlock - 1) / kBlock * kBlock;
}

#ifdef WEFT_HAVE_CUDA

bool peer_ipc_enabled() noexcept {
  return settings().peer_ipc;
}

PeerStreams::~PeerStreams() {
  for (const auto& [device, stream] : streams_) release_task_stream(device, stream);
}

void* PeerStreams::on(int device) {
  for (const auto& [d, stream] : streams_)
    if (d == device) return stream;
  streams_.emplace_back(device, acquire_task_stream(device));
  return streams_.back().second;
}

PeerExporter::PeerExporter(int slots) : slots_(static_cast<std::size_t>(slots > 0 ? slots : 1)) {
  static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(PeerTicket::handle));
}

PeerExporter::~PeerExporter() {
  auto release = [](int device, void* memory) {
    cudaSetDevice(device);
    cudaFree(memory);
  };
  for (const Slot& s : slots_)
    if (s.memory) release(s.device, s.memory);
  for (const auto& [device, memory] : retired_) release(device, memory);
}

PeerTicket PeerExporter::stage(const Array& a, const Event* ready, GpuInterval* timing) {
  const int device = a.memory().device_index;
  const std::size_t slot_index = next_++ % slots_.size();
  Slot& s = slots_[slot_index];
  bind_device(device);
  if (!s.memory || s.device != device || s.capacity < a.bytes()) {
    // The peer may still have the old buffer open (it closes it when it sees the new generation):
    // freed at the end of the run only. Shapes rarely change along an edge.
    if (s.memory) retired_.emplace_back(s.device, s.memory);
    s.memory = nullptr;
    const std::size_t bytes = ipc_allocation_bytes(a.bytes());
    WEFT_CUDA_CHECK(cudaMalloc(&s.memory, bytes));
    s.device = device;
    s.capacity = bytes;
    ++s.generation;
    cudaIpcMemHandle_t handle;
    WEFT_CUDA_CHECK(cudaIpcGetMemHandle(&handle, s.memory));
    std::memcpy(s.handle, &handle, sizeof handle);
  }
  void* stream = streams_.on(device);
  if (ready) ready->make_wait(stream);
  if (timing) gpu_interval_start(*timing, device, stream);
  if (a.bytes())
    WEFT_CUDA_CHECK(cudaMemcpyAsync(s.memory, a.raw(), a.bytes(), cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream)));
  if (timing) gpu_interval_stop(*timing, stream);
  // The receiver may read the buffer as soon as the header arrives: the copy must be complete.
  synchronize_stream(device, stream);
  PeerTicket t;
  t.slot = static_cast<std::int32_t>(slot_index);
  t.generation = s.generation;
  t.bytes = a.bytes();
  std::memcpy(t.handle, s.handle, sizeof t.handle);
  return t;
}

PeerImporter::~PeerImporter() {
  if (last_) {
    try {
      last_->synchronize();
    } catch (...) {
    }
  }
  for (const Mapped& m : mapped_)
    if (m.pointer) {
      cudaSetDevice(m.device);
      cudaIpcCloseMemHandle(m.pointer);
    }
}

Array PeerImporter::fetch(const PeerTicket& ticket, DType type, const Shape& shape, int device, bool to_host,
                          std::shared_ptr<Event>& done, GpuInterval* timing) {
  if (ticket.slot < 0 || ticket.slot > 4096) throw Error("CUDA IPC: bad buffer number " + std::to_string(ticket.slot));
  void* stream = streams_.on(device);
  Array out = to_host ? Array::host(type, shape) : Array::device(type, shape, device, stream);
  if (out.bytes() != ticket.bytes)
    throw Error("CUDA IPC: " + std::to_string(ticket.bytes) + " bytes announced for an array of " +
                std::to_string(out.bytes()));
  if (static_cast<std::size_t>(ticket.slot) >= mapped_.size()) mapped_.resize(static_cast<std::size_t>(ticket.slot) + 1);
  Mapped& m = mapped_[static_cast<std::size_t>(ticket.slot)];
  if (!m.pointer || m.generation != ticket.generation || m.device != device) {
    if (m.pointer) {
      if (last_) last_->synchronize();  // a copy out of the old buffer may be in flight
      bind_device(m.device);
      WEFT_CUDA_CHECK(cudaIpcCloseMemHandle(m.pointer));
      m.pointer = nullptr;
    }
    bind_device(device);
    cudaIpcMemHandle_t handle;
    std::memcpy(&handle, ticket.handle, sizeof handle);
    if (cudaError_t e = cudaIpcOpenMemHandle(&m.pointer, handle, cudaIpcMemLazyEnablePeerAccess); e != cudaSuccess) {
      (void)cudaGetLastError();
      m.pointer = nullptr;
      throw CudaError(std::string("CUDA IPC: cannot open the sending rank's GPU buffer on GPU ") +
                          std::to_string(device) + " (" + cudaGetErrorString(e) +
                          "); WEFT_PEER_IPC=0 sends GPU arrays between ranks through host memory instead",
                      static_cast<int>(e));
    }
    m.device = device;
    m.generation = ticket.generation;
  }
  bind_device(device);
  if (timing) gpu_interval_start(*timing, device, stream);
  if (ticket.bytes)
    WEFT_CUDA_CHECK(cudaMemcpyAsync(out.raw(), m.pointer, ticket.bytes, cudaMemcpyDefault, static_cast<cudaStream_t>(stream)));
  if (timing) gpu_interval_stop(*timing, stream);
  last_ = Event::record(device, stream);
  if (to_host) {
    last_->synchronize();
    done.reset();
  } else {
    done = last_;
  }
  return out;
}

#else  // no CUDA: never chosen

PeerStreams::~PeerStreams() = default;
void* PeerStreams::on(int) { throw Error("this build of Weft has no CUDA support (WEFT_CUDA=OFF)"); }

bool peer_ipc_enabled() noexcept { return false; }
PeerExporter::PeerExporter(int) {}
PeerExporter::~PeerExporter() = default;
PeerTicket PeerExporter::stage(const Array&, const Event*, GpuInterval*) {
  throw Error("this build of Weft has no CUDA support (WEFT_CUDA=OFF)");
}
PeerImporter::~PeerImporter() = default;
Array PeerImporter::fetch(const PeerTicket&, DType, const Shape&, int, bool, std::shared_ptr<Event>&, GpuInterval*) {
  throw Error("this build of Weft has no CUDA support (WEFT_CUDA=OFF)");
}

#endif

}  // namespace weft::detail

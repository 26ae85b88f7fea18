#include "migration/state_transfer.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>

#include "data/buffer.hpp"
#include "data/copy.hpp"
#include "data/device_copy.hpp"
#include "transport/peer.hpp"
#include "cluster/tags.hpp"
#include "weft/util/error.hpp"
#include "weft/util/log.hpp"

#ifdef WEFT_HAVE_CUDA
#include <cuda_runtime.h>

#include "weft/device/cuda_check.hpp"
#endif

namespace weft::detail {
namespace {

constexpr std::uint32_t kMagic = 0x57535431;  // "WST1"
constexpr std::size_t kChunk = std::size_t(16) << 20;  // staging chunk of device arrays

struct WireHeader {
  std::uint32_t magic = kMagic;
  std::int32_t from = 0;
  std::uint64_t bytes = 0;  // save()'s bytes, after the array descriptions
  std::uint32_t arrays = 0;
  std::uint32_t pad = 0;
};

// Two pinned staging buffers, with what still uses each: the send of its chunk (sending side)
// or the copy of its chunk into the GPU (receiving side).
struct Staging {
  Array buffer[2];
  std::shared_ptr<Event> copied[2];
  std::shared_ptr<RemoteLinks::Message> message[2];
  void* take(int slot) {
    if (!buffer[slot].raw()) buffer[slot] = Array::host(DType::u8, Shape(static_cast<std::int64_t>(kChunk)));
    return buffer[slot].raw();
  }
};

}  // namespace

int state_channel(int group) { return tags::kFirstStateChannel + group; }

#ifdef WEFT_HAVE_CUDA
StateExport::StateExport(const std::vector<Array>& arrays) : entries_(arrays.size()) {
  static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(Entry::handle));
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const Array& a = arrays[i];
    const Memory m = a.memory();
    if (a.bytes() == 0 || m.is_host()) continue;
    Entry& e = entries_[i];
    bind_device(m.device_index);
    const auto begun = std::chrono::steady_clock::now();
    void* memory = nullptr;
    if (cudaMalloc(&memory, ipc_allocation_bytes(a.bytes())) != cudaSuccess) {
      (void)cudaGetLastError();
      continue;  // sent through the host instead
    }
    const auto allocated = std::chrono::steady_clock::now();
    e.memory = memory;
    e.device = m.device_index;
    void* stream = device_streams(m.device_index).compute;
    WEFT_CUDA_CHECK(cudaMemcpyAsync(memory, a.raw(), a.bytes(), cudaMemcpyDeviceToDevice, static_cast<cudaStream_t>(stream)));
    WEFT_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
    logger("migration")->debug("CUDA IPC export of {} bytes: allocated in {:.2f} ms, copied in {:.2f} ms", a.bytes(),
                               ms_between(begun, allocated), ms_between(allocated, std::chrono::steady_clock::now()));
    cudaIpcMemHandle_t handle;
    if (cudaIpcGetMemHandle(&handle, memory) != cudaSuccess) {
      (void)cudaGetLastError();
      WEFT_CUDA_CHECK(cudaFree(memory));
      e.memory = nullptr;
      continue;
    }
    std::memcpy(e.handle, &handle, sizeof handle);
  }
}

StateExport::~StateExport() {
  for (const Entry& e : entries_)
    if (e.memory) {
      cudaSetDevice(e.device);
      cudaFree(e.memory);
    }
}
#else
StateExport::StateExport(const std::vector<Array>&) {}
StateExport::~StateExport() = default;
#endif

namespace {
// Opens a peer's exported array and copies it into `to` (a device array of this rank); false if
// CUDA IPC refuses (the peer then sends the data).
bool copy_exported(const StateArrayInfo& info, Array& to, int device) {
#ifdef WEFT_HAVE_CUDA
  cudaIpcMemHandle_t handle;
  std::memcpy(&handle, info.handle, sizeof handle);
  bind_device(device);
  const auto begun = std::chrono::steady_clock::now();
  void* from = nullptr;
  if (cudaError_t e = cudaIpcOpenMemHandle(&from, handle, cudaIpcMemLazyEnablePeerAccess); e != cudaSuccess) {
    (void)cudaGetLastError();
    logger("migration")->warn("CUDA IPC: cannot open a peer's state array ({}); it comes through the host",
                              cudaGetErrorString(e));
    return false;
  }
  const auto opened = std::chrono::steady_clock::now();
  void* stream = device_streams(device).h2d;
  WEFT_CUDA_CHECK(cudaMemcpyAsync(to.raw(), from, to.bytes(), cudaMemcpyDefault, static_cast<cudaStream_t>(stream)));
  WEFT_CUDA_CHECK(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)));
  const auto copied = std::chrono::steady_clock::now();
  WEFT_CUDA_CHECK(cudaIpcCloseMemHandle(from));
  logger("migration")->debug("CUDA IPC: {} bytes opened in {:.2f} ms, copied in {:.2f} ms, closed in {:.2f} ms",
                             to.bytes(), ms_between(begun, opened), ms_between(opened, copied),
                             ms_between(copied, std::chrono::steady_clock::now()));
  return true;
#else
  (void)info, (void)to, (void)device;
  return false;
#endif
}
}  // namespace

std::vector<std::byte> encode_handover(std::span<const std::byte> bytes, const std::vector<Array>& arrays, int from,
                                       const StateExport* exports) {
  WireHeader h;
  h.from = from;
  h.bytes = bytes.size();
  h.arrays = static_cast<std::uint32_t>(arrays.size());
  std::vector<std::byte> out(sizeof h + arrays.size() * sizeof(StateArrayInfo) + bytes.size());
  std::memcpy(out.data(), &h, sizeof h);
  std::byte* p = out.data() + sizeof h;
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    const Array& a = arrays[k];
    StateArrayInfo info;
    info.dtype = static_cast<std::int32_t>(a.dtype());
    info.ndim = a.shape().ndim();
    for (int i = 0; i < info.ndim; ++i) info.dims[i] = a.shape()[i];
    if (exports && exports->exported(k)) {
      info.ipc = 1;
      std::memcpy(info.handle, exports->entries_[k].handle, sizeof info.handle);
    }
    std::memcpy(p, &info, sizeof info);
    p += sizeof info;
  }
  if (!bytes.empty()) std::memcpy(p, bytes.data(), bytes.size());
  return out;
}

void decode_handover(std::span<const std::byte> message, std::vector<std::byte>& bytes,
                     std::vector<StateArrayInfo>& arrays, int& from) {
  WireHeader h;
  if (message.size() < sizeof h) throw Error("migration: state message of " + std::to_string(message.size()) + " bytes");
  std::memcpy(&h, message.data(), sizeof h);
  const std::size_t expected = sizeof h + std::size_t(h.arrays) * sizeof(StateArrayInfo) + h.bytes;
  if (h.magic != kMagic || message.size() != expected)
    throw Error("migration: malformed state message (" + std::to_string(message.size()) + " bytes)");
  from = h.from;
  arrays.resize(h.arrays);
  const std::byte* p = message.data() + sizeof h;
  for (auto& info : arrays) {
    std::memcpy(&info, p, sizeof info);
    p += sizeof info;
  }
  bytes.assign(p, p + h.bytes);
}

bool send_state_arrays(RemoteLinks& remote, const std::vector<Array>& arrays, int peer, int channel,
                       const StateExport* exports) {
  Staging st;
  int slot = 0;
  auto wait_slot = [&](int s) {
    if (st.message[s] && !remote.wait(*st.message[s])) return false;
    st.message[s].reset();
    return true;
  };
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    const Array& a = arrays[k];
    if (a.bytes() == 0) continue;
    if (exports && exports->exported(k)) {  // the peer copies it, then says so (0: send it)
      std::uint8_t copied = 0;
      if (!remote.wait(*remote.receive(&copied, 1, peer, channel))) return false;
      if (copied) continue;
    }
    const Memory m = a.memory();
    if (m.is_host()) {  // straight from the array
      auto msg = remote.send(a.raw(), a.bytes(), peer, channel);
      if (!remote.wait(*msg)) return false;
      continue;
    }
    bind_device(m.device_index);
    void* stream = device_streams(m.device_index).d2h;
    const auto* src = static_cast<const std::byte*>(a.raw());
    // Chunk k: copied out into buffer k % 2 while chunk k - 1 is on the wire.
    for (std::size_t off = 0; off < a.bytes(); off += kChunk) {
      const std::size_t n = std::min(kChunk, a.bytes() - off);
      if (!wait_slot(slot)) return false;
      void* buffer = st.take(slot);
      copy_bytes(buffer, Memory::on_host(), src + off, m, n, stream);
      Event::record(m.device_index, stream)->synchronize();
      st.message[slot] = remote.send(buffer, n, peer, channel);
      slot ^= 1;
    }
  }
  return wait_slot(0) && wait_slot(1);
}

bool receive_state_arrays(RemoteLinks& remote, const std::vector<StateArrayInfo>& infos, int peer, int channel,
                          const Place& place, std::vector<Array>& out) {
  out.clear();
  Staging st;
  int slot = 0;
  for (const auto& info : infos) {
    const Shape shape = shape_from(info.ndim, info.dims, "migration state message");
    const auto type = static_cast<DType>(info.dtype);
    if (!place.is_gpu()) {
      Array a = Array::host(type, shape);
      if (info.ipc && a.bytes()) {  // onto a CPU: through the host as ever
        const std::uint8_t copied = 0;
        if (!remote.wait(*remote.send(&copied, 1, peer, channel))) return false;
      }
      if (a.bytes()) {
        auto msg = remote.receive(a.raw(), a.bytes(), peer, channel);
        if (!remote.wait(*msg)) return false;
      }
      out.push_back(std::move(a));
      continue;
    }
    bind_device(place.device);
    void* stream = device_streams(place.device).h2d;
    const auto begun = std::chrono::steady_clock::now();
    Array a = Array::device(type, shape, place.device, stream);
    logger("migration")->debug("state array of {} bytes allocated on {} in {:.2f} ms", a.bytes(), place.str(),
                               ms_between(begun, std::chrono::steady_clock::now()));
    if (info.ipc) {
      const std::uint8_t copied = copy_exported(info, a, place.device) ? 1 : 0;
      const auto acked = std::chrono::steady_clock::now();
      if (!remote.wait(*remote.send(&copied, 1, peer, channel))) return false;
      logger("migration")->debug("CUDA IPC: the copy acknowledged in {:.2f} ms",
                                 ms_between(acked, std::chrono::steady_clock::now()));
      if (copied) {
        release_on_home(a);
        out.push_back(std::move(a));
        continue;
      }
    }
    auto* dst = static_cast<std::byte*>(a.raw());
    // Chunk k arrives in buffer k % 2 while chunk k - 1 is copied in.
    for (std::size_t off = 0; off < a.bytes(); off += kChunk) {
      const std::size_t n = std::min(kChunk, a.bytes() - off);
      if (st.copied[slot]) st.copied[slot]->synchronize();  // the buffer's previous chunk is in
      void* buffer = st.take(slot);
      auto msg = remote.receive(buffer, n, peer, channel);
      if (!remote.wait(*msg)) return false;
      copy_bytes(dst + off, Memory::on_device(place.device), buffer, Memory::on_host(), n, stream);
      st.copied[slot] = Event::record(place.device, stream);
      slot ^= 1;
    }
    synchronize_stream(place.device, stream);
    release_on_home(a);
    out.push_back(std::move(a));
  }
  return true;
}

std::vector<Array> move_state_arrays(std::vector<Array> arrays, const Place& place) {
  for (Array& a : arrays) {
    const Memory m = a.memory();
    if (!place.is_gpu()) {
      if (!m.is_host()) a = copy_to_host(a, nullptr);
      continue;
    }
    if (!m.is_host() && m.device_index == place.device) continue;
    bind_device(place.device);
    const auto begun = std::chrono::steady_clock::now();
    std::shared_ptr<Event> done;
    void* stream = device_streams(place.device).h2d;
    Array moved = m.is_host() ? copy_to_device(a, place.device, stream, done)
                              : copy_between_devices(a, place.device, stream, nullptr, done);
    const auto queued = std::chrono::steady_clock::now();
    done->synchronize();
    logger("migration")->debug("state array of {} bytes onto {}: allocated and queued in {:.2f} ms, copied in {:.2f} ms",
                               a.bytes(), place.str(), ms_between(begun, queued),
                               ms_between(queued, std::chrono::steady_clock::now()));
    release_on_home(moved);
    a = std::move(moved);
  }
  return arrays;
}

}  // namespace weft::detail

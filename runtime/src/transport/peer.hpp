#pragma once
// Internal: CUDA IPC between the ranks of one host (the "peer" transport). A cross-rank edge
// between two ranks of one host hands each array it finds on a GPU over GPU memory instead of
// staging it through pinned host buffers and MPI: the sender copies the array into one of a ring
// of exportable buffers (cudaMalloc: the pools' memory cannot be exported) and sends that buffer's
// IPC handle in the token's header; the receiver opens the handle once per buffer and copies the
// array out, GPU to GPU (NVLink where there is one), or through its GPU into pinned host memory
// for a consumer on a CPU. Unlike NCCL nothing is matched between the two ranks, so edges in
// both directions between two ranks (a farm's frames out and results back) need no order.
//
// Reuse of a buffer: the ring has more buffers than the edge's credits, and a receiver grants a
// credit back only after its copy out of a buffer completed, so a buffer is never written while
// the peer may still read it (the proof is in remote.cpp, add_sender).
#ifndef WEFT_BUILDING_RUNTIME
static_assert(false, "runtime/src headers are internal to the weft library");
#endif
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "device/device.hpp"
#include "weft/data/array.hpp"

namespace weft::detail {

/// Whether this build can hand arrays over CUDA IPC (CUDA compiled, WEFT_PEER_IPC not "0").
[[nodiscard]] bool peer_ipc_enabled() noexcept;

/// The size to cudaMalloc for memory exported over CUDA IPC: `bytes` rounded up to 2 MiB. Smaller
/// allocations may be carved out of one larger block, and IPC maps (and a close unmaps) the whole
/// block in the peer, so two exported buffers, or a buffer and a migrated state, would share one
/// mapping there (CUDA's programming guide recommends 2 MiB-aligned sizes for this reason).
[[nodiscard]] std::size_t ipc_allocation_bytes(std::size_t bytes) noexcept;

/// Streams of this transport's copies, one per GPU, taken from the task stream pool and given back
/// when destroyed: the devices' shared copy streams also carry other tasks' copies (a farm's 8 MB
/// results going to the host), which a token's hand-over would otherwise wait for.
class PeerStreams {
 public:
  PeerStreams() = default;
  ~PeerStreams();
  PeerStreams(const PeerStreams&) = delete;
  PeerStreams& operator=(const PeerStreams&) = delete;
  [[nodiscard]] void* on(int device);

 private:
  std::vector<std::pair<int, void*>> streams_;
};

/// What the header of a token carries for an array handed over CUDA IPC.
struct PeerTicket {
  std::int32_t slot = -1;         ///< which buffer of the sender's ring
  std::uint32_t generation = 0;   ///< changes when the sender replaced that buffer (larger array, other GPU)
  std::uint64_t bytes = 0;
  std::byte handle[64] = {};      ///< cudaIpcMemHandle_t of the buffer
};

/// Sender side of one edge: the ring of exportable buffers. Frees them when destroyed, which must
/// be after the receiving rank closed its handles (the end of the run: RemoteLinks keeps the
/// exporters until it is destroyed, after the ranks' closing agreement).
class PeerExporter {
 public:
  explicit PeerExporter(int slots);
  ~PeerExporter();
  PeerExporter(const PeerExporter&) = delete;
  PeerExporter& operator=(const PeerExporter&) = delete;
  /// Copies the device array `a` into the next buffer once `ready` (if any) completed; returns
  /// when the copy is done. With `timing`, the copy's GPU interval is recorded there.
  [[nodiscard]] PeerTicket stage(const Array& a, const Event* ready, GpuInterval* timing = nullptr);

 private:
  struct Slot {
    void* memory = nullptr;
    int device = -1;
    std::size_t capacity = 0;
    std::uint32_t generation = 0;
    std::byte handle[64] = {};
  };
  std::vector<Slot> slots_;
  std::vector<std::pair<int, void*>> retired_;  // replaced buffers: the peer may have them open
  std::size_t next_ = 0;
  PeerStreams streams_;
};

/// Receiver side of one edge: the sender's buffers opened so far (closed when destroyed).
class PeerImporter {
 public:
  PeerImporter() = default;
  ~PeerImporter();
  PeerImporter(const PeerImporter&) = delete;
  PeerImporter& operator=(const PeerImporter&) = delete;
  /// Copies the array of `ticket` into a new array of this rank, through GPU `device` (which
  /// opens the sender's buffer): onto that GPU, ordered on a stream of this edge (`done`
  /// completes with the copy), or, `to_host`, into pinned host memory (complete on return; `done`
  /// is null).
  [[nodiscard]] Array fetch(const PeerTicket& ticket, DType type, const Shape& shape, int device, bool to_host,
                            std::shared_ptr<Event>& done, GpuInterval* timing = nullptr);

 private:
  struct Mapped {
    void* pointer = nullptr;
    int device = -1;
    std::uint32_t generation = 0;
  };
  std::vector<Mapped> mapped_;
  PeerStreams streams_;
  std::shared_ptr<Event> last_;  // the latest copy: complete before any handle closes
};

}  // namespace weft::detail

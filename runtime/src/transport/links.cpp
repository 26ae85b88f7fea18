// Which links an edge between ranks has (link.hpp), from the transport chosen for it
// (transports.cpp): the first link of the list that carries a token takes it.
#include "transport/link.hpp"

namespace weft::detail {

std::vector<std::unique_ptr<SendLink>> make_send_links(const EdgeTransport& how, const EdgeEnd& end, int capacity,
                                                       NcclShared& nccl,
                                                       std::vector<std::shared_ptr<PeerExporter>>& exporters) {
  std::vector<std::unique_ptr<SendLink>> links;
  if (how.nccl) links.push_back(make_nccl_send(end, nccl));
  if (how.peer) links.push_back(make_ipc_send(end, how, capacity, exporters));
  links.push_back(make_host_array_send(end));
  links.push_back(make_bytes_send(end));
  return links;
}

std::vector<std::unique_ptr<ReceiveLink>> make_receive_links(
    const EdgeTransport& how, const EdgeEnd& end, NcclShared& nccl,
    const std::function<void(std::function<void()>)>& start_thread) {
  std::vector<std::unique_ptr<ReceiveLink>> links;
  if (how.nccl) links.push_back(make_nccl_receive(end, nccl, start_thread));
  if (how.peer) links.push_back(make_ipc_receive(end, how));
  links.push_back(make_host_array_receive(end));
  links.push_back(make_bytes_receive(end));
  return links;
}

void trace_copy(TraceRecorder& trace, const std::string& what, int lane, std::uint64_t token, double c0,
                const GpuInterval& gpu) {
  trace.add({what, "copy", lane, token, c0, trace.now_us() - c0});
  trace.add_gpu({what, "copy", gpu_lane(lane), token, gpu});
}

}  // namespace weft::detail

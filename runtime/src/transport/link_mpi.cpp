// The MPI links: arrays in host memory (device arrays staged to the host first, since MPI
// carries host memory here) and the bytes of scalar values, both sent on the edge's payload tag
// after the header.
#include <cstring>
#include <string>
#include <type_traits>

#include "cluster/tags.hpp"
#include "data/buffer.hpp"
#include "data/device_copy.hpp"
#include "transport/link.hpp"
#include "weft/util/error.hpp"

namespace weft::detail {
namespace {

using tags::EdgePart;

class HostArraySend final : public SendLink {
 public:
  explicit HostArraySend(const EdgeEnd& end) : end_(end) {}

  [[nodiscard]] bool carries(const Token& t) const override { return std::holds_alternative<Array>(t.value); }

  StagedBytes stage(const Token& t, Header& h) override {
    const Array& a = std::get<Array>(t.value);
    Array host = a;
    if (!a.memory().is_host()) {  // staged through the host: MPI carries host memory
      GpuInterval interval;
      TraceRecorder* trace = end_.trace;
      const double c0 = trace ? trace->now_us() : 0;
      host = copy_to_host(a, t.ready.get(), trace ? &interval : nullptr);
      if (trace) trace_copy(*trace, "copy to host for rank " + std::to_string(end_.peer), end_.lane, t.index, c0, interval);
    }
    h.describe(host);
    h.bytes = host.bytes();
    return {host.raw(), std::make_shared<Array>(host)};
  }

 private:
  EdgeEnd end_;
};

class HostArrayReceive final : public ReceiveLink {
 public:
  explicit HostArrayReceive(const EdgeEnd& end) : end_(end) {}

  [[nodiscard]] bool carries(const Header& h) const override { return h.kind == 1 && !h.peer && !h.nccl; }

  bool take(const Header& h, Token& t) override {
    Array a = Array::host(static_cast<DType>(h.dtype), shape_from(h.ndim, h.dims, "token header"));
    MpiProgress& mpi = *end_.mpi;
    if (h.bytes && !mpi.recv_bytes(a.raw(), h.bytes, end_.peer, tags::edge(mpi.run, end_.edge, EdgePart::payload),
                                   std::make_shared<Array>(a)))
      return false;
    t.value = std::move(a);
    return true;
  }

 private:
  EdgeEnd end_;
};

// Value kinds by their index in Value (graph/value.hpp): 0 none (a migration marker), 2 int64,
// 3 double, 4 string, 5 vector<double>, 6 vector<int64>.
class BytesSend final : public SendLink {
 public:
  explicit BytesSend(const EdgeEnd& end) : end_(end) {}

  [[nodiscard]] bool carries(const Token& t) const override { return !std::holds_alternative<Array>(t.value); }

  StagedBytes stage(const Token& t, Header& h) override {
    auto bytes = std::make_shared<std::vector<char>>();
    std::visit([&](const auto& v) {
      using V = std::decay_t<decltype(v)>;
      if constexpr (std::is_same_v<V, std::int64_t> || std::is_same_v<V, double>) {
        bytes->resize(sizeof v);
        std::memcpy(bytes->data(), &v, sizeof v);
      } else if constexpr (std::is_same_v<V, std::string>) {
        bytes->assign(v.begin(), v.end());
      } else if constexpr (std::is_same_v<V, std::vector<double>> || std::is_same_v<V, std::vector<std::int64_t>>) {
        bytes->resize(v.size() * sizeof(typename V::value_type));
        if (!v.empty()) std::memcpy(bytes->data(), v.data(), bytes->size());
      }
    }, t.value);
    h.bytes = bytes->size();
    return {bytes->data(), bytes};
  }

 private:
  EdgeEnd end_;
};

class BytesReceive final : public ReceiveLink {
 public:
  explicit BytesReceive(const EdgeEnd& end) : end_(end) {}

  [[nodiscard]] bool carries(const Header& h) const override { return h.kind != 1; }

  bool take(const Header& h, Token& t) override {
    auto kept = std::make_shared<std::vector<char>>(h.bytes);
    std::vector<char>& bytes = *kept;
    MpiProgress& mpi = *end_.mpi;
    if (h.bytes && !mpi.recv_bytes(bytes.data(), h.bytes, end_.peer, tags::edge(mpi.run, end_.edge, EdgePart::payload),
                                   kept))
      return false;
    const auto numbers = [&](auto zero) {
      std::vector<decltype(zero)> v(h.bytes / sizeof zero);
      if (h.bytes) std::memcpy(v.data(), bytes.data(), h.bytes);
      return v;
    };
    switch (h.kind) {
      case 0: break;  // no value: a migration marker
      case 2: { std::int64_t v; std::memcpy(&v, bytes.data(), 8); t.value = v; break; }
      case 3: { double v; std::memcpy(&v, bytes.data(), 8); t.value = v; break; }
      case 4: t.value = std::string(bytes.begin(), bytes.end()); break;
      case 5: t.value = numbers(0.0); break;
      case 6: t.value = numbers(std::int64_t{0}); break;
      default: throw Error("received a token of unknown kind " + std::to_string(h.kind));
    }
    return true;
  }

 private:
  EdgeEnd end_;
};

}  // namespace

std::unique_ptr<SendLink> make_host_array_send(const EdgeEnd& end) { return std::make_unique<HostArraySend>(end); }
std::unique_ptr<ReceiveLink> make_host_array_receive(const EdgeEnd& end) {
  return std::make_unique<HostArrayReceive>(end);
}
std::unique_ptr<SendLink> make_bytes_send(const EdgeEnd& end) { return std::make_unique<BytesSend>(end); }
std::unique_ptr<ReceiveLink> make_bytes_receive(const EdgeEnd& end) { return std::make_unique<BytesReceive>(end); }

}  // namespace weft::detail

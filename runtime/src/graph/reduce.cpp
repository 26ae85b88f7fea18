// Reductions: one task combining a value from each of its inputs, elementwise, in input order (so
// a sum of doubles is the same on every run). The inputs come over ordinary edges, so sources on
// other ranks or GPUs reach it as any token does; arrays are reduced on the host.
#include <algorithm>

#include "weft/graph/graph.hpp"
#include "weft/util/error.hpp"

namespace weft {
namespace {

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return "sum";
    case ReduceOp::min: return "min";
    case ReduceOp::max: return "max";
  }
  return "?";
}

template <class T> T combine(T a, T b, ReduceOp op) {
  switch (op) {
    case ReduceOp::sum: return static_cast<T>(a + b);
    case ReduceOp::min: return std::min(a, b);
    case ReduceOp::max: return std::max(a, b);
  }
  return a;
}

class Reduction final : public Task {
 public:
  Reduction(std::string name, const PortSpec& spec, int inputs, ReduceOp op) : Task(std::move(name)), op_(op) {
    for (int i = 0; i < inputs; ++i) add_input({"in." + std::to_string(i), spec.kind, spec.dtype, spec.ndim});
    add_output({"out", spec.kind, spec.dtype, spec.ndim});
  }
  void run(Context& ctx) override {
    const int n = static_cast<int>(inputs().size());
    Value acc = ctx.take_value(0);
    if (auto* a = std::get_if<Array>(&acc)) {  // a fresh array: the input may be shared with other consumers
      Array copy = ctx.alloc(a->dtype(), a->shape());
      std::copy_n(static_cast<const char*>(a->raw()), a->bytes(), static_cast<char*>(copy.raw()));
      acc = std::move(copy);
    }
    for (int i = 1; i < n; ++i) {
      Value v = ctx.take_value(i);
      std::visit([&](auto& into) { fold(into, v, i); }, acc);
    }
    ctx.put_value_at(0, std::move(acc));
  }

 private:
  [[noreturn]] void mismatch(int input, const std::string& what) const {
    throw Error("reduction '" + name() + "' (" + op_name(op_) + "): input " + std::to_string(input) + " " + what);
  }
  void fold(std::monostate&, Value&, int) const {}
  void fold(std::string&, Value&, int i) const { mismatch(i, "is a string, which cannot be reduced"); }
  template <class T> void fold(T& into, Value& v, int) const
    requires(std::is_arithmetic_v<T>) {
    into = combine(into, std::get<T>(v), op_);
  }
  template <class T> void fold(std::vector<T>& into, Value& v, int i) const {
    const auto& x = std::get<std::vector<T>>(v);
    if (x.size() != into.size())
      mismatch(i, "has " + std::to_string(x.size()) + " elements, input 0 has " + std::to_string(into.size()));
    for (std::size_t k = 0; k < x.size(); ++k) into[k] = combine(into[k], x[k], op_);
  }
  void fold(Array& into, Value& v, int i) const {
    const Array& x = std::get<Array>(v);
    if (x.dtype() != into.dtype() || !(x.shape() == into.shape()))
      mismatch(i, "is " + std::string(dtype_name(x.dtype())) + " " + x.shape().str() + ", input 0 is " +
                      std::string(dtype_name(into.dtype())) + " " + into.shape().str());
    const std::int64_t n = x.size();
    auto each = [&](auto* out, const auto* in) {
      for (std::int64_t k = 0; k < n; ++k) out[k] = combine(out[k], in[k], op_);
    };
    switch (x.dtype()) {
      case DType::u8: each(into.data<std::uint8_t>(), x.data<std::uint8_t>()); break;
      case DType::u16: each(into.data<std::uint16_t>(), x.data<std::uint16_t>()); break;
      case DType::i32: each(into.data<std::int32_t>(), x.data<std::int32_t>()); break;
      case DType::f32: each(into.data<float>(), x.data<float>()); break;
      case DType::f64: each(into.data<double>(), x.data<double>()); break;
      case DType::f16: {
        Half* out = into.data<Half>();
        const Half* in = x.data<Half>();
        for (std::int64_t k = 0; k < n; ++k)
          out[k] = float_to_half(combine(half_to_float(out[k]), half_to_float(in[k]), op_));
        break;
      }
    }
  }
  ReduceOp op_;
};

}  // namespace

Reduce Graph::add_reduce(const std::string& name, const std::vector<std::pair<Task*, int>>& sources, ReduceOp op) {
  if (sources.empty()) throw ConfigError("reduction '" + name + "': needs at least one source");
  for (const auto& [task, port] : sources)
    if (!task || port < 0 || port >= static_cast<int>(task->outputs().size()))
      throw ConfigError("reduction '" + name + "': a source is not an output of a task");
  const PortSpec& spec = sources.front().first->outputs()[sources.front().second];
  if (spec.kind == ValueKind<std::string>::index)
    throw ConfigError("reduction '" + name + "': strings cannot be reduced (source " + sources.front().first->name() +
                      "." + spec.name + ")");
  Reduce r;
  r.task = &add_task(std::make_unique<Reduction>(name, spec, static_cast<int>(sources.size()), op));
  for (std::size_t i = 0; i < sources.size(); ++i)
    connect_ports(sources[i].first, sources[i].second, r.task, static_cast<int>(i));
  return r;
}

}  // namespace weft

#pragma once
/// Tasks: user code with named, typed ports, a CPU implementation and optionally a CUDA one.
///
///   class Scale : public weft::Task {
///    public:
///     Scale() : Task("scale") {}
///     weft::In<weft::Array> in = input<weft::Array>("in");
///     weft::Out<weft::Array> out = output<weft::Array>("out");
///     void run(weft::Context& ctx) override { ctx.put(out, scale_on_host(ctx.take(in))); }
///   };
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "weft/graph/value.hpp"
#include "weft/graph/place.hpp"

namespace weft {

/// Tokens that reached each input of a task (see Task::input_arrivals), readable by other tasks of
/// the same process: a least-loaded farm's scatter counts the results back from each replica.
class InputArrivals {
 public:
  explicit InputArrivals(int inputs) : counts_(static_cast<std::size_t>(inputs)) {}
  void arrived(int input) noexcept { counts_[static_cast<std::size_t>(input)].fetch_add(1, std::memory_order_release); }
  [[nodiscard]] std::uint64_t count(int input) const noexcept {
    return counts_[static_cast<std::size_t>(input)].load(std::memory_order_acquire);
  }

 private:
  std::vector<std::atomic<std::uint64_t>> counts_;
};

class Task;
class Context;

/// Declared type of a port: a value kind and, for arrays, optionally a dtype and a rank.
struct PortSpec {
  std::string name;
  int kind = 0;                     ///< ValueKind<T>::index
  std::optional<DType> dtype;       ///< arrays: required element type, if any
  int ndim = 0;                     ///< arrays: required number of dimensions, 0 = any
};

/// Handle to an input port of type T (held as a member of the task).
template <class T> struct In {
  Task* task = nullptr;
  int index = -1;
};
/// Handle to an output port of type T.
template <class T> struct Out {
  Task* task = nullptr;
  int index = -1;
};

/// Base class of every task. A task fires once per token: it takes one value from each input
/// and puts exactly one value on each output. A task without inputs is a source: it fires until
/// it calls ctx.end_stream(). A task never talks to MPI, NCCL or another device itself.
class Task {
 public:
  explicit Task(std::string name);
  virtual ~Task();
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;

  [[nodiscard]] const std::string& name() const noexcept { return name_; }
  [[nodiscard]] const std::vector<PortSpec>& inputs() const noexcept { return inputs_; }
  [[nodiscard]] const std::vector<PortSpec>& outputs() const noexcept { return outputs_; }

  /// CPU implementation: arrays taken from ctx are on the host.
  virtual void run(Context& ctx) = 0;
  /// Whether run_cuda exists; a task without it can only be placed on a CPU.
  [[nodiscard]] virtual bool has_cuda() const { return false; }
  /// CUDA implementation: arrays taken from ctx are on ctx.place()'s GPU; enqueue work on
  /// weft::cuda_stream(ctx) and return without synchronising.
  virtual void run_cuda(Context& ctx);
  /// Whether run() may be skipped on a CPU place (a GPU-only task); default false.
  [[nodiscard]] virtual bool has_cpu() const { return true; }

  /// Called once on the task's place before the first token and after the last one.
  virtual void start(Context& ctx) {}
  virtual void stop(Context& ctx) {}

  /// State for migration: a stateful task saves and loads its state at a token boundary.
  [[nodiscard]] virtual bool stateful() const { return false; }
  virtual void save(std::vector<std::byte>& out) const {}
  virtual void load(std::span<const std::byte> in) {}
  /// State kept in arrays on the task's place (device memory on a GPU), handed over beside
  /// save()'s bytes at the same token boundary: the runtime moves them itself (a peer copy
  /// between GPUs of one process, a copy to or from the host when the task moves between a CPU
  /// and a GPU, a GPU-to-GPU copy through CUDA IPC between ranks of one host, pinned copies
  /// pipelined with MPI between hosts), so that a large device-resident
  /// state never goes through a byte vector. After save_arrays() the task no longer owns them;
  /// load_arrays() receives them, in the same order, on the new place (host arrays on a CPU),
  /// after load(). Ready to use: the copies are complete.
  virtual void save_arrays(std::vector<Array>& out) {}
  virtual void load_arrays(std::vector<Array> in) {}

  /// Rough relative cost per token, used by the automatic mapper before measurements exist.
  [[nodiscard]] virtual double cost_hint() const { return 1.0; }

  /// Routing tasks (a farm's scatter) may leave outputs empty in a firing: no token is sent.
  [[nodiscard]] virtual bool routes() const { return false; }
  /// A routing task that gathers several tokens into one (renumbers() true) numbers the tokens it
  /// sends 0, 1, 2, ... in the order of its firings that put them, instead of passing on its
  /// inputs' index, so that the tasks downstream see consecutive tokens (a farm's scatter keeps
  /// the index: its gather re-orders by it).
  [[nodiscard]] virtual bool renumbers() const { return false; }
  /// Input ports to read in the n-th firing; empty means all (a farm's gather reads one replica).
  [[nodiscard]] virtual std::vector<int> inputs_for_firing(std::uint64_t firing) const { return {}; }
  /// With a non-empty inputs_for_firing: further inputs of this firing, chosen from the value
  /// read on the first of those (a least-loaded farm's gather reads the route its scatter chose,
  /// then that replica's outputs). Empty: none.
  [[nodiscard]] virtual std::vector<int> inputs_after(const Value& first) const { return {}; }
  /// If not null, the executor counts there every token that reaches each input's edge (pushed
  /// by the producer or by the receiver of a cross-rank edge), before this task takes it.
  [[nodiscard]] virtual std::shared_ptr<InputArrivals> input_arrivals() const { return nullptr; }
  /// False for tasks that only forward values: arrays reach them where they are, not copied.
  [[nodiscard]] virtual bool moves_data() const { return true; }

 protected:
  int add_input(PortSpec spec) {
    inputs_.push_back(std::move(spec));
    return static_cast<int>(inputs_.size()) - 1;
  }
  int add_output(PortSpec spec) {
    outputs_.push_back(std::move(spec));
    return static_cast<int>(outputs_.size()) - 1;
  }
  template <class T> In<T> input(std::string name, std::optional<DType> dtype = {}, int ndim = 0) {
    inputs_.push_back({std::move(name), ValueKind<T>::index, dtype, ndim});
    return {this, static_cast<int>(inputs_.size()) - 1};
  }
  template <class T> Out<T> output(std::string name, std::optional<DType> dtype = {}, int ndim = 0) {
    outputs_.push_back({std::move(name), ValueKind<T>::index, dtype, ndim});
    return {this, static_cast<int>(outputs_.size()) - 1};
  }

 private:
  std::string name_;
  std::vector<PortSpec> inputs_;
  std::vector<PortSpec> outputs_;
};

/// What a task sees while it fires: its inputs, its outputs, its place and (on a GPU) its stream.
class Context {
 public:
  virtual ~Context() = default;
  template <class T> [[nodiscard]] T take(const In<T>& port) {
    Value& v = input_value(port.index);
    if (v.index() != ValueKind<T>::index) throw_kind_mismatch(port.index, ValueKind<T>::index);
    return std::get<T>(std::move(v));
  }
  template <class T> void put(const Out<T>& port, T value) { put_value(port.index, Value(std::move(value))); }
  /// Untyped access for tasks whose ports are not known at compile time (farms, user routers).
  [[nodiscard]] Value take_value(int port) { return std::move(input_value(port)); }
  void put_value_at(int port, Value value) { put_value(port, std::move(value)); }

  /// An array on this task's memory (host pool, or the GPU's pool ordered on its stream).
  [[nodiscard]] virtual Array alloc(DType type, Shape shape) = 0;
  /// A source calls this instead of putting outputs: the stream has ended.
  virtual void end_stream() = 0;
  /// Index of the token being processed (0, 1, 2, ...).
  [[nodiscard]] virtual std::uint64_t index() const = 0;
  [[nodiscard]] virtual const Place& place() const = 0;
  /// The GPU's compute stream (a cudaStream_t) for a task on a GPU, else nullptr.
  [[nodiscard]] virtual void* stream() const = 0;
  [[nodiscard]] virtual const Task& task() const = 0;
  /// Whether the run is being cancelled (an error here or on another rank): a task that waits for
  /// something outside the graph polls it, so that it does not keep the run from ending.
  [[nodiscard]] virtual bool cancelled() const { return false; }

  class Phase;
  /// A named step of this firing, from now until the returned Phase is destroyed: a span inside
  /// the task's own in --trace (on a GPU, with the work queued on its stream meanwhile). Does
  /// nothing without a trace.
  ///   for (int n = 1; n <= last; ++n) { auto p = ctx.phase("size " + std::to_string(n)); step(n); }
  [[nodiscard]] Phase phase(std::string name);

 protected:
  /// Tracing contexts record phases: begin_phase returns an id that end_phase receives (-1: none).
  virtual int begin_phase(std::string /*name*/) { return -1; }
  virtual void end_phase(int /*id*/) {}

  virtual Value& input_value(int index) = 0;
  virtual void put_value(int index, Value value) = 0;
  [[noreturn]] void throw_kind_mismatch(int port, int asked) const;
};

/// A phase of a firing (Context::phase); ends when destroyed, or earlier with end().
class Context::Phase {
 public:
  Phase(Context& context, std::string name) : context_(&context), id_(context.begin_phase(std::move(name))) {}
  Phase(Phase&& other) noexcept : context_(other.context_), id_(other.id_) { other.context_ = nullptr; }
  Phase& operator=(Phase&&) = delete;
  Phase(const Phase&) = delete;
  Phase& operator=(const Phase&) = delete;
  ~Phase() { end(); }
  void end() {
    if (context_ && id_ >= 0) context_->end_phase(id_);
    context_ = nullptr;
  }

 private:
  Context* context_;
  int id_;
};

inline Context::Phase Context::phase(std::string name) { return Phase(*this, std::move(name)); }

}  // namespace weft

// Partitions: a split copies each slab (owned rows plus halo rows) out of the whole array, and a
// join copies the owned rows back. Both run on the CPU or on a GPU (row copies on the task's
// stream). The halo exchange itself is in exec/halo.cpp.
#include "weft/graph/partition.hpp"

#include "data/copy.hpp"
#include "weft/graph/graph.hpp"
#include "weft/util/error.hpp"

namespace weft {

std::int64_t partition_rows(std::int64_t rows, int parts, int part) noexcept {
  return rows / parts + (part < rows % parts ? 1 : 0);
}

std::int64_t partition_first_row(std::int64_t rows, int parts, int part) noexcept {
  return part * (rows / parts) + std::min<std::int64_t>(part, rows % parts);
}

namespace {

Shape with_rows(const Shape& s, std::int64_t rows) {
  switch (s.ndim()) {
    case 1: return Shape(rows);
    case 2: return Shape(rows, s[1]);
    default: return Shape(rows, s[1], s[2]);
  }
}

bool compiled_with_cuda() {
#ifdef WEFT_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

class Split final : public Task {
 public:
  Split(std::string name, const PortSpec& slab, int parts, int halo)
      : Task(std::move(name)), parts_(parts), halo_(halo) {
    add_input({"in", slab.kind, slab.dtype, slab.ndim});
    for (int i = 0; i < parts; ++i) {
      add_output({"slab." + std::to_string(i), slab.kind, slab.dtype, slab.ndim});
      add_output({"where." + std::to_string(i), ValueKind<std::vector<std::int64_t>>::index, {}, 0});
    }
  }
  void run(Context& ctx) override {
    Array a = std::get<Array>(ctx.take_value(0));
    if (a.shape().ndim() < 1) throw Error("partition split '" + name() + "': the array has no rows");
    const std::int64_t n = a.shape()[0];
    const std::size_t row = detail::row_bytes(a);
    if (n < parts_)
      throw Error("partition split '" + name() + "': " + std::to_string(n) + " rows cannot be split over " +
                  std::to_string(parts_) + " parts");
    for (int i = 0; i < parts_; ++i) {
      Slab s{i, parts_, partition_first_row(n, parts_, i), partition_rows(n, parts_, i), i > 0 ? halo_ : 0,
             i + 1 < parts_ ? halo_ : 0, n};
      if (parts_ > 1 && s.rows < halo_)
        throw Error("partition split '" + name() + "': slab " + std::to_string(i) + " has " + std::to_string(s.rows) +
                    " rows, fewer than the halo width " + std::to_string(halo_) + " (" + std::to_string(n) +
                    " rows over " + std::to_string(parts_) + " parts)");
      Array out = ctx.alloc(a.dtype(), with_rows(a.shape(), s.total_rows()));
      detail::copy_bytes(out.raw(), out.memory(), detail::row_address(a, s.first_row - s.halo_before), a.memory(),
                         static_cast<std::size_t>(s.total_rows()) * row, ctx.stream());
      ctx.put_value_at(2 * i, std::move(out));
      ctx.put_value_at(2 * i + 1, std::vector<std::int64_t>{s.part, s.parts, s.first_row, s.rows, s.halo_before,
                                                            s.halo_after, s.global_rows});
    }
  }
  bool has_cuda() const override { return compiled_with_cuda(); }
  void run_cuda(Context& ctx) override { run(ctx); }

 private:
  int parts_, halo_;
};

class Join final : public Task {
 public:
  Join(std::string name, const PortSpec& slab, int parts, int halo)
      : Task(std::move(name)), parts_(parts), halo_(halo) {
    for (int i = 0; i < parts; ++i) add_input({"slab." + std::to_string(i), slab.kind, slab.dtype, slab.ndim});
    add_output({"out", slab.kind, slab.dtype, slab.ndim});
  }
  void run(Context& ctx) override {
    std::vector<Array> slabs;
    std::int64_t rows = 0;
    for (int i = 0; i < parts_; ++i) {
      slabs.push_back(std::get<Array>(ctx.take_value(i)));
      const Array& a = slabs.back();
      const Array& first = slabs.front();
      std::int64_t owned = (a.shape().ndim() ? a.shape()[0] : 0) - before(i) - after(i);
      if (owned < 0 || a.dtype() != first.dtype() || a.shape().ndim() != first.shape().ndim() ||
          (a.shape().ndim() > 1 && a.shape()[1] != first.shape()[1]) ||
          (a.shape().ndim() > 2 && a.shape()[2] != first.shape()[2]))
        throw Error("partition join '" + name() + "': slab " + std::to_string(i) + " is " +
                    std::string(dtype_name(a.dtype())) + " " + a.shape().str() + ", expected " +
                    std::string(dtype_name(first.dtype())) + " with " + std::to_string(before(i) + after(i)) +
                    " halo rows or more and the other slabs' row shape (a slab task puts its slab's shape)");
      rows += owned;
    }
    Array out = ctx.alloc(slabs.front().dtype(), with_rows(slabs.front().shape(), rows));
    std::int64_t at = 0;
    for (int i = 0; i < parts_; ++i) {
      const Array& a = slabs[i];
      std::int64_t owned = a.shape()[0] - before(i) - after(i);
      detail::copy_bytes(detail::row_address(out, at), out.memory(), detail::row_address(a, before(i)), a.memory(),
                         static_cast<std::size_t>(owned) * detail::row_bytes(a), ctx.stream());
      at += owned;
    }
    ctx.put_value_at(0, std::move(out));
  }
  bool has_cuda() const override { return compiled_with_cuda(); }
  void run_cuda(Context& ctx) override { run(ctx); }

 private:
  std::int64_t before(int i) const { return i > 0 ? halo_ : 0; }
  std::int64_t after(int i) const { return i + 1 < parts_ ? halo_ : 0; }
  int parts_, halo_;
};

}  // namespace

Partition Graph::add_partition(const std::string& name, int parts,
                               const std::function<std::unique_ptr<SlabTask>(int)>& make, PartitionOptions options) {
  if (parts < 1)
    throw ConfigError("partition '" + name + "': needs at least one part, got " + std::to_string(parts));
  if (options.halo < 0)
    throw ConfigError("partition '" + name + "': halo width must be 0 or more, got " + std::to_string(options.halo));
  Partition p;
  p.name = name;
  p.halo = options.halo;
  for (int i = 0; i < parts; ++i) {
    std::unique_ptr<SlabTask> task = make(i);
    if (!task) throw ConfigError("partition '" + name + "': make(" + std::to_string(i) + ") returned no task");
    p.slabs.push_back(static_cast<SlabTask*>(&add_task(std::move(task))));
  }
  const SlabTask& model = *p.slabs.front();
  p.split = &add_task(std::make_unique<Split>(name + ".split", model.inputs()[model.in.index], parts, options.halo));
  for (int i = 0; i < parts; ++i) {
    connect_ports(p.split, 2 * i, p.slabs[i], p.slabs[i]->in.index);
    connect_ports(p.split, 2 * i + 1, p.slabs[i], p.slabs[i]->where.index);
  }
  if (options.join) {
    p.join = &add_task(std::make_unique<Join>(name + ".join", model.outputs()[model.out.index], parts, options.halo));
    for (int i = 0; i < parts; ++i) connect_ports(p.slabs[i], p.slabs[i]->out.index, p.join, i);
  }
  partitions_.push_back(p);
  return p;
}

}  // namespace weft

// A project outside Weft, built against an installed package: the README's task (Scale, its CPU
// implementation; without has_cuda it runs on a CPU) in the README's graph, every token checked,
// then the results written and read back through weft::io (HDF5 and PNG).
//   consumer [DIR]                  one rank; files in DIR (default: the current directory)
//   mpiexec -n 2 consumer [DIR]     the same graph on both ranks, Scale on rank 1
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <weft/tasks/demo/demo.hpp>
#include <weft/tasks/io/hdf5.hpp>
#include <weft/tasks/io/image.hpp>
#include <weft/weft.hpp>

// From README.md, "Writing a task".
class Scale : public weft::Task {
 public:
  explicit Scale(float factor) : Task("scale"), factor_(factor) {}
  weft::In<weft::Array> in = input<weft::Array>("in", weft::DType::f32);
  weft::Out<weft::Array> out = output<weft::Array>("out", weft::DType::f32);

  void run(weft::Context& ctx) override {             // CPU: arrays are on the host
    weft::Array x = ctx.take(in);
    weft::Array y = ctx.alloc(weft::DType::f32, x.shape());
    for (std::int64_t i = 0; i < x.size(); ++i) y.data<float>()[i] = factor_ * x.data<float>()[i];
    ctx.put(out, std::move(y));
  }

 private:
  float factor_;
};

namespace {

constexpr std::uint64_t kTokens = 40;
constexpr std::int64_t kLength = 1000;
constexpr float kFactor = 2.0f;

int failures = 0;
void fail(const std::string& what) {
  std::fprintf(stderr, "consumer: %s\n", what.c_str());
  ++failures;
}

float expected(std::uint64_t k, std::int64_t i) { return kFactor * weft::tasks::ArraySource::value(k, i, kLength); }

// Every token arrived once, each value as Scale computes it; returns them as one [tokens, length] array.
weft::Array check_tokens(const weft::tasks::Collect::Record& record) {
  weft::Array all = weft::Array::host(weft::DType::f32, weft::Shape(kTokens, kLength));
  std::vector<bool> seen(kTokens, false);
  if (record.indices.size() != kTokens || record.arrays.size() != kTokens)
    fail("the sink saw " + std::to_string(record.indices.size()) + " tokens, not " + std::to_string(kTokens));
  for (std::size_t j = 0; j < record.indices.size() && j < record.arrays.size(); ++j) {
    std::uint64_t k = record.indices[j];
    const std::vector<float>& values = record.arrays[j];
    if (k >= kTokens || seen[k] || values.size() != static_cast<std::size_t>(kLength)) {
      fail("token " + std::to_string(k) + ": unexpected, repeated or of " + std::to_string(values.size()) + " values");
      continue;
    }
    seen[k] = true;
    for (std::int64_t i = 0; i < kLength; ++i) {
      if (values[static_cast<std::size_t>(i)] != expected(k, i)) {
        fail("token " + std::to_string(k) + " value " + std::to_string(i) + ": " +
             std::to_string(values[static_cast<std::size_t>(i)]) + ", expected " + std::to_string(expected(k, i)));
        break;
      }
      all.data<float>()[k * kLength + i] = values[static_cast<std::size_t>(i)];
    }
  }
  return all;
}

// The results through HDF5 (exact) and an 8-bit PNG (truncated), each read back.
void check_io(const weft::Array& all, const std::filesystem::path& dir) {
  std::string h5 = (dir / "consumer.h5").string();
  weft::io::H5Writer writer(h5);
  writer.write("/scaled", all);
  writer.commit();
  weft::Array back = weft::io::read_dataset(weft::io::parse_dataset_ref(h5 + ":/scaled"));
  if (back.dtype() != weft::DType::f32 || !(back.shape() == all.shape()))
    return fail("HDF5: read back " + back.shape().str() + ", wrote " + all.shape().str());
  for (std::int64_t i = 0; i < all.size(); ++i)
    if (back.data<float>()[i] != all.data<float>()[i]) return fail("HDF5: element " + std::to_string(i) + " differs");

  weft::Array grey = weft::Array::host(weft::DType::u8, all.shape());
  for (std::int64_t i = 0; i < all.size(); ++i) grey.data<std::uint8_t>()[i] = static_cast<std::uint8_t>(all.data<float>()[i]);
  std::string png = (dir / "consumer.png").string();
  weft::io::write_png(png, grey);
  weft::Array image = weft::io::read_image(png);
  if (image.dtype() != weft::DType::u8 || !(image.shape() == grey.shape()))
    return fail("PNG: read back " + image.shape().str() + ", wrote " + grey.shape().str());
  for (std::int64_t i = 0; i < grey.size(); ++i)
    if (image.data<std::uint8_t>()[i] != grey.data<std::uint8_t>()[i]) return fail("PNG: pixel " + std::to_string(i) + " differs");
}

}  // namespace

int main(int argc, char** argv) {
  weft::Environment env(argc, argv);  // first: MPI when launched by mpiexec, then the devices
  std::filesystem::path dir = argc > 1 ? argv[1] : ".";
  try {
    auto record = std::make_shared<weft::tasks::Collect::Record>();

    // From README.md, "Building and running a graph"; Scale goes to the last rank's CPU instead of
    // a GPU, so that under two ranks every token crosses between them twice.
    weft::Graph g;
    auto& src = g.add<weft::tasks::ArraySource>("source", kTokens, kLength);
    auto& scale = g.add<Scale>(kFactor);
    auto& sink = g.add<weft::tasks::Collect>("sink", record);
    g.connect(src.out, scale.in);
    g.connect(scale.out, sink.in);
    g.place(scale, weft::Place::host(env.size() - 1));

    weft::ApiMapper api;
    weft::AutoMapper automatic;
    weft::Mapping mapping = weft::map_graph(g, env.cluster(), {&api, &automatic});
    weft::Executor executor({.channel_capacity = 4});
    executor.run(g, mapping).wait();

    if (mapping.at("sink").rank == env.rank()) {
      weft::Array all = check_tokens(*record);
      if (failures == 0) check_io(all, dir);
      if (failures == 0)
        std::printf("consumer: %llu tokens of %lld values checked on rank %d of %d, scale on %s; HDF5 and PNG read back\n",
                    static_cast<unsigned long long>(kTokens), static_cast<long long>(kLength), env.rank(), env.size(),
                    mapping.at("scale").str().c_str());
    } else if (!record->indices.empty()) {
      fail("rank " + std::to_string(env.rank()) + " does not run the sink but it saw tokens");
    }
  } catch (const std::exception& e) {
    fail(e.what());
  }
  return failures == 0 ? 0 : 1;
}

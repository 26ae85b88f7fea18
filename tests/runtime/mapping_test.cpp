#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "weft/tasks/demo/demo.hpp"
#include "weft/weft.hpp"

using namespace weft;

namespace {

/// A copy on the CPU that declares a CUDA implementation (never run here), so that a mapping
/// test can place it on a GPU in a build without CUDA as well as with it.
class Relay final : public Task {
 public:
  explicit Relay(std::string name) : Task(std::move(name)) {}
  In<Array> in = input<Array>("in", DType::f32);
  Out<Array> out = output<Array>("out", DType::f32);
  void run(Context& ctx) override { ctx.put(out, ctx.take(in)); }
  [[nodiscard]] bool has_cuda() const override { return true; }
};

/// read -> gabor.0, gabor.1 -> sum -> write. The gabor tasks are Affine (a CUDA implementation
/// only in a build with CUDA), or Relay with `cuda_gabors`.
Graph demo(bool cuda_gabors = false) {
  Graph g;
  auto& src = g.add<tasks::ArraySource>("read", 3, 4);
  auto gabor = [&](const std::string& name) -> std::pair<In<Array>, Out<Array>> {
    if (cuda_gabors) {
      auto& t = g.add<Relay>(name);
      return {t.in, t.out};
    }
    auto& t = g.add<tasks::Affine>(name, 1, 0);
    return {t.in, t.out};
  };
  auto [a_in, a_out] = gabor("gabor.0");
  auto [b_in, b_out] = gabor("gabor.1");
  auto& s = g.add<tasks::Add>("sum");
  auto& sink = g.add<tasks::Collect>("write", std::make_shared<tasks::Collect::Record>());
  g.connect(src.out, a_in);
  g.connect(src.out, b_in);
  g.connect(a_out, s.lhs);
  g.connect(b_out, s.rhs);
  g.connect(s.out, sink.in);
  return g;
}

Cluster cluster(int ranks, int gpus) {
  Cluster c;
  for (int r = 0; r < ranks; ++r) {
    RankInfo info;
    info.rank = r;
    for (int g = 0; g < gpus; ++g) info.gpus.push_back({g, "test gpu", 1 << 30, 9, 0, 1});
    c.ranks.push_back(info);
  }
  return c;
}

std::string write(const std::string& name, const std::string& text) {
  auto path = std::filesystem::temp_directory_path() / ("weft_mapping_" + name + ".yaml");
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace

TEST(FileMapper, ExactNamesWinOverPatterns) {
  Graph g = demo(true);
  FileMapper m(write("ok", "ranks: 2\nplaces:\n  read: {rank: 0, device: cpu}\n  \"gabor.*\": {rank: 1, device: gpu:0}\n"
                           "  gabor.0: {rank: 0, device: gpu:0}\n  write: rank:1/cpu\n"));
  Cluster c = cluster(2, 1);
  EXPECT_NO_THROW(m.check(g, c));
  EXPECT_EQ(m.place(g.at("gabor.1"), g, c)->str(), "rank:1/gpu:0");
  EXPECT_EQ(m.place(g.at("gabor.0"), g, c)->str(), "gpu:0");
  EXPECT_EQ(m.place(g.at("write"), g, c)->str(), "rank:1/cpu");
  EXPECT_FALSE(m.place(g.at("sum"), g, c).has_value());
  ApiMapper api;
  AutoMapper automatic(DeviceChoice::cpu);
  g.place(g.at("sum"), Place::host(1));
  Mapping mapping = map_graph(g, c, {&api, &m, &automatic});
  EXPECT_EQ(mapping.at("sum").str(), "rank:1/cpu");
  EXPECT_NE(mapping.to_yaml(2).find("\"gabor.1\": {rank: 1, device: gpu:0}"), std::string::npos);
}

TEST(FileMapper, ErrorsNameTheFileLineAndValue) {
  Graph g = demo();
  Cluster c = cluster(1, 1);
  auto message = [&](const std::string& text) {
    try {
      FileMapper m(write("bad", text));
      m.check(g, c);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("places:\n  reed: {rank: 0, device: cpu}\n").find("unknown task"), std::string::npos);
  EXPECT_NE(message("places:\n  read: {rank: 0, device: tpu:0}\n").find("tpu:0"), std::string::npos);
  EXPECT_NE(message("places:\n  read: {rank: 0, device: gpu:3}\n").find("no such GPU"), std::string::npos);
  EXPECT_NE(message("places:\n  read: {rank: 0, device: gpu:0}\n").find("no CUDA implementation"), std::string::npos);
  EXPECT_NE(message("places:\n  read: {rank: 5, device: cpu}\n").find("rank 5 does not exist"), std::string::npos);
  std::string malformed = message("places:\n  read: {rank: 0, device: cpu\n  x: [\n");
  EXPECT_NE(malformed.find("malformed YAML"), std::string::npos) << malformed;
  EXPECT_NE(malformed.find(".yaml:"), std::string::npos) << malformed;
  EXPECT_NE(message("places:\n  \"nothing*\": {rank: 0, device: cpu}\n").find("pattern matches no task"), std::string::npos);
  EXPECT_THROW(FileMapper("/nonexistent/mapping.yaml"), ConfigError);
}

TEST(FileMapper, WithoutRequiringCudaChecksEverythingElse) {
  Graph g = demo();  // Affine has a CUDA implementation only in a build with CUDA; ArraySource in none
  Cluster c = cluster(1, 1);
  FileMapper gpu(write("gpu", "places:\n  \"gabor.*\": gpu:0\n"));
  if (g.at("gabor.0").has_cuda()) EXPECT_NO_THROW(gpu.check(g, c));
  else EXPECT_THROW(gpu.check(g, c), ConfigError);
  EXPECT_NO_THROW(gpu.check(g, c, true, /*require_cuda=*/false));
  FileMapper read(write("read", "places:\n  read: gpu:0\n"));
  EXPECT_THROW(read.check(g, c), ConfigError);
  EXPECT_NO_THROW(read.check(g, c, true, false));  // what `weft mapping check` says it did not check
  auto message = [&](const std::string& text) {
    try {
      FileMapper m(write("bad", text));
      m.check(g, c, true, false);
    } catch (const ConfigError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message("places:\n  gabbor.0: gpu:0\n").find("unknown task"), std::string::npos);
  EXPECT_NE(message("places:\n  gabor.0: gpu:1\n").find("no such GPU"), std::string::npos);
  EXPECT_NE(message("places:\n  gabor.0: {rank: 2, device: gpu:0}\n").find("rank 2 does not exist"),
            std::string::npos);
  EXPECT_NE(message("ranks: 2\nplaces:\n  gabor.0: gpu:0\n").find("field 'ranks' is 2"), std::string::npos);
}

TEST(AutoMapper, UsesGpusOnlyForTasksWithCuda) {
  Graph g = demo();
  AutoMapper automatic;
  Cluster c = cluster(1, 2);
  Mapping m = map_graph(g, c, {&automatic});
  EXPECT_EQ(m.at("read").str(), "cpu");
  EXPECT_EQ(m.at("gabor.0").is_gpu(), g.at("gabor.0").has_cuda());
  AutoMapper cpu_only(DeviceChoice::cpu), gpu_only(DeviceChoice::gpu);
  Mapping cpu = map_graph(g, c, {&cpu_only});
  EXPECT_EQ(cpu.at("gabor.0").str(), "cpu");
  EXPECT_THROW((void)map_graph(g, cluster(1, 0), {&gpu_only}), ConfigError);
}

/// A slab task with a CUDA implementation only (never run here).
class GpuOnlySlab final : public SlabTask {
 public:
  explicit GpuOnlySlab(std::string name) : SlabTask(std::move(name), DType::f32) {}
  [[nodiscard]] bool has_cpu() const override { return false; }
  [[nodiscard]] bool has_cuda() const override { return true; }
  void run_slab(Context&, Halo&) override {}
};

// Slabs with no CPU implementation go to the GPUs even when the mapper was asked for CPUs (it
// divided by the number of GPU places of the CPU choice, zero, before), and are refused with a
// clear error where no GPU exists.
TEST(AutoMapper, PutsGpuOnlySlabsOnGpusWhateverTheChoice) {
  Graph g;
  auto& src = g.add<tasks::ArraySource>("read", 1, 8);
  Partition p = g.add_partition("part", 2, [](int i) { return std::make_unique<GpuOnlySlab>("part." + std::to_string(i)); });
  auto& sink = g.add<tasks::Collect>("write", std::make_shared<tasks::Collect::Record>());
  g.connect(src.out, p.in());
  g.connect(p.out(), sink.in);
  AutoMapper cpu_only(DeviceChoice::cpu);
  const Mapping m = map_graph(g, cluster(1, 2), {&cpu_only});
  EXPECT_EQ(m.at("part.0"), Place::cuda(0));
  EXPECT_EQ(m.at("part.1"), Place::cuda(1));
  EXPECT_EQ(m.at("read").str(), "cpu");
  EXPECT_THROW((void)map_graph(g, cluster(1, 0), {&cpu_only}), ConfigError);
}

TEST(AutoMapper, SpreadsFarmReplicasOverEachPhysicalGpuOnce) {
  Cluster shared;  // mpirun -np 4 on one host without CUDA_VISIBLE_DEVICES: every rank sees 4 GPUs
  for (int r = 0; r < 4; ++r) {
    RankInfo info;
    info.rank = r;
    info.host = "node";
    for (int d = 0; d < 4; ++d) info.gpus.push_back({d, "H200", 1, 9, 0, 132, "uuid" + std::to_string(d)});
    shared.ranks.push_back(info);
  }
  const std::vector<Place> places = spread_places(shared, DeviceChoice::automatic);
  ASSERT_EQ(places.size(), 4u);
  for (int r = 0; r < 4; ++r) EXPECT_EQ(places[static_cast<std::size_t>(r)], Place::cuda(r, r));
  EXPECT_EQ(automatic_farm_width(shared, DeviceChoice::automatic), 8);  // two per GPU
  EXPECT_EQ(automatic_farm_width(shared, DeviceChoice::cpu), 4);        // one per rank
  EXPECT_EQ(automatic_farm_width(cluster(1, 0), DeviceChoice::automatic), 0);  // one CPU rank: staged
  EXPECT_EQ(automatic_farm_width(cluster(1, 3), DeviceChoice::gpu, 1), 3);

  Graph g;
  auto& src = g.add<tasks::ArraySource>("read", 3, 4);
  auto& sink = g.add<tasks::Collect>("write", std::make_shared<tasks::Collect::Record>());
  const int width = automatic_farm_width(shared, DeviceChoice::automatic);
  const Farm farm = g.add_farm("work", width, [](int i) {
    return std::make_unique<tasks::Affine>("work." + std::to_string(i), 1, 0);
  });
  g.connect(src.out, farm.in());
  g.connect(farm.out(), sink.in);
  AutoMapper automatic;
  const Mapping m = map_graph(g, shared, {&automatic});
  EXPECT_EQ(m.at("read"), Place::host(0));
  for (int i = 0; i < width; ++i) {
    const Place p = m.at("work." + std::to_string(i));
    if (g.at("work.0").has_cuda()) EXPECT_EQ(p, Place::cuda(i % 4, i % 4)) << i;
    else EXPECT_EQ(p, Place::host(i % 4)) << i;
  }
}

// Granulometry over several GPUs: a 2048³ volume of overlapping balls (radii 2–40, ~40 %
// foreground), N = 50, split into slabs over 1, 2 and 4 GPUs (of one rank, or one per rank
// under mpirun), through the same graph as `weft granulometry` (tasks/morphology/slab_tasks.hpp)
// with the volume in host memory on every rank: each worker reads its slab's planes as the program
// reads a RAW file or a contiguous HDF5 dataset (pieces on every core, packed to foreground bits
// as they come, unpacked on the GPU), a memcpy from the volume standing for each piece's pread.
// Reports the run's wall time and the slowest worker's compute time (over every rank) per GPU
// count, the parallel efficiency T1 / (g · Tg) of both, the bytes floor per GPU, and the read
// phase timed alone (each worker's slab read as bits into pinned chunks, uploaded and unpacked by
// a hand-written loop, all workers at once) with the wall efficiency it leaves when reading overlaps nothing; merges them
// into bench/results/granulometry.json (metrics.slabs_2048, or slabs_2048_ranksN under mpirun,
// and a target per element on compute time, the wall time's beside it) keeping the rest of the file.
// Usage: [mpirun -np 4] granulometry_slabs_bench [--size 2048] [--max-size 50] [--gpus 1,2,4]
//        [--elements octahedron,cube,ball] [--repeats 1] [--emulate] [--tag NAME]
// --emulate (one rank): each GPU count's slabs one after the other on GPU 0, timed alone.
// --tag NAME: the results key gets _NAME (slabs_2048[_ranksN or _emulated]_NAME), e.g. runs on two GPUs.
#include <cuda_runtime.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "gpu.hpp"
#include "result.hpp"
#include "weft/cuda.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/exec/executor.hpp"
#include "weft/util/parallel_for.hpp"
#include "weft/tasks/morphology/slab_tasks.hpp"
#include "weft/tasks/morphology/synthetic.hpp"
#include "weft/tasks/morphology/threshold.hpp"

namespace {

using namespace weft;
using morphology::Element;
using Clock = std::chrono::steady_clock;

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> v;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) v.push_back(part);
  return v;
}

/// Sums the rounds' curves (rank 0); size maps are not asked.
class CurveSink final : public Task {
 public:
  CurveSink(int workers, std::shared_ptr<std::vector<std::int64_t>> total)
      : Task("report"), total_(std::move(total)) {
    for (int i = 0; i < workers; ++i) maps.push_back(input<Array>("map." + std::to_string(i)));
  }
  In<std::vector<std::int64_t>> remaining = input<std::vector<std::int64_t>>("remaining");
  In<std::vector<std::int64_t>> spectrum = input<std::vector<std::int64_t>>("spectrum");
  std::vector<In<Array>> maps;
  void run(Context& ctx) override {
    const auto r = ctx.take(remaining);
    (void)ctx.take(spectrum);
    for (const auto& m : maps) (void)ctx.take(m);
    total_->resize(std::max(total_->size(), r.size()), 0);
    for (std::size_t n = 0; n < r.size(); ++n) (*total_)[n] += r[n];
  }

 private:
  std::shared_ptr<std::vector<std::int64_t>> total_;
};

struct Measure {
  double wall = 0, compute = 0;
  std::vector<double> compute_each;  // each worker's openings (over every rank)
  // Seconds from the run's start (on the worker's rank): each worker's slab read to its end
  // (volume.i's last firing), its openings' first start and last end; -1 where none.
  std::vector<double> read_end_each, start_each, end_each;
  std::vector<std::int64_t> curve;
  int slabs = 0, rounds = 0;
  std::int64_t planes = 0;
  bool halo_handover = false;  // the halos between ranks of a host handed over (SlabReadTurns::handover)
  double setup = 0;       // the slowest rank's host turns, halo slots and graph (before the run)
  double start_skew = 0;  // how much later than the first the last rank began its run
};

/// The slabs of the volume over `places` of `budget` bytes each, as `weft granulometry --max-size`
/// plans them for a u8 volume (balance_gpu_slabs, the ranks of a host reading in turns where
/// `host_turns`, handing their halos over where `handover`); `read_cost` ≥ 0 replaces the app's
/// SlabPlan::read_cost (--read-cost).
morphology::SlabPlan plan_for(const Shape& s, Element e, int last, const std::vector<Place>& places,
                              const Cluster& cluster, double budget, bool host_turns, bool handover,
                              double read_cost) {
  auto plan = morphology::plan_slabs(s[0], s[1], s[2], morphology::halo_for(last), static_cast<int>(places.size()),
                                     0, budget, morphology::slab_bytes_per_voxel(e, last, false, true));
  morphology::balance_gpu_slabs(plan, places, cluster, e, last, 1, false, host_turns, handover, true, read_cost);
  return plan;
}

/// Foreground bits of planes [first, first + count) of the host volume, read as `weft granulometry`
/// reads a RAW file or a contiguous HDF5 dataset (read_foreground_planes: pieces fetched on every
/// core and packed as they come), each piece's fetch a memcpy from the volume standing for the
/// pread from the page cache. Into `bits` (count · foreground_plane_bytes(Y, X) bytes).
void read_bits(const Array& volume, std::int64_t first, std::int64_t count, std::uint8_t* bits) {
  const Shape& s = volume.shape();
  const std::uint8_t* base = volume.data<std::uint8_t>() + first * s[1] * s[2];
  morphology::read_foreground_bits(
      [base](std::int64_t voxel, std::int64_t voxels, void* to) {
        std::memcpy(to, base + voxel, static_cast<std::size_t>(voxels));
      },
      morphology::ValueType::u8, count, s[1], s[2], std::nullopt, bits);
}

/// The read phase alone, written by hand as an MPI+CUDA program would: this rank's workers at once,
/// each reading its first slab's planes (with halo) as foreground bits (read_bits, the graph's
/// reader) kSlabChunkBytes of voxels at a time into two pinned buffers in turn, uploading each and
/// unpacking it on its GPU while the next is read. The slowest worker's time (over every rank):
/// a floor for what the graph's wall adds to its compute where reading does not overlap the openings.
double read_upload_seconds(const Environment& env, const Array& volume, const morphology::SlabPlan& plan,
                           const std::vector<Place>& places) {
  const Shape& s = volume.shape();
  const std::size_t plane = static_cast<std::size_t>(s[1] * s[2]);
  const auto row = static_cast<std::size_t>(morphology::foreground_plane_bytes(s[1], s[2]));
  const std::int64_t chunk_planes = std::max<std::int64_t>(1, morphology::kSlabChunkBytes / static_cast<std::int64_t>(plane));
  struct Worker {
    int device = 0;
    morphology::Slab slab;
    void* dev = nullptr;
    void* pinned[2] = {nullptr, nullptr};
    void* dev_bits[2] = {nullptr, nullptr};
    cudaStream_t stream = nullptr;
    cudaEvent_t done[2] = {nullptr, nullptr};
  };
  std::vector<Worker> workers;
  for (int i = 0; i < plan.workers && i < static_cast<int>(places.size()); ++i) {
    const Place& p = places[static_cast<std::size_t>(i)];
    if (p.rank != env.rank() || !p.is_gpu() || plan.slab(0, i).empty()) continue;
    Worker w;
    w.device = p.device;
    w.slab = plan.slab(0, i);
    WEFT_CUDA_CHECK(cudaSetDevice(w.device));
    WEFT_CUDA_CHECK(cudaMalloc(&w.dev, static_cast<std::size_t>(w.slab.read_planes()) * plane));
    for (int b = 0; b < 2; ++b) {
      WEFT_CUDA_CHECK(cudaHostAlloc(&w.pinned[b], chunk_planes * row, cudaHostAllocDefault));  // page-locked: resident
      WEFT_CUDA_CHECK(cudaMalloc(&w.dev_bits[b], chunk_planes * row));
      WEFT_CUDA_CHECK(cudaEventCreateWithFlags(&w.done[b], cudaEventDisableTiming));
    }
    WEFT_CUDA_CHECK(cudaStreamCreateWithFlags(&w.stream, cudaStreamNonBlocking));
    workers.push_back(w);
  }
  std::vector<double> seconds(workers.size(), 0);
  if (env.distributed()) MPI_Barrier(MPI_COMM_WORLD);
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < workers.size(); ++k)
    threads.emplace_back([&, k] {
      Worker& w = workers[k];
      WEFT_CUDA_CHECK(cudaSetDevice(w.device));
      int b = 0;
      for (std::int64_t at = 0; at < w.slab.read_planes(); at += chunk_planes, b ^= 1) {
        const std::int64_t n = std::min(chunk_planes, w.slab.read_planes() - at);
        WEFT_CUDA_CHECK(cudaEventSynchronize(w.done[b]));  // its previous upload and unpacking have finished
        read_bits(volume, w.slab.read_first + at, n, static_cast<std::uint8_t*>(w.pinned[b]));
        WEFT_CUDA_CHECK(cudaMemcpyAsync(w.dev_bits[b], w.pinned[b], n * row, cudaMemcpyHostToDevice, w.stream));
        morphology::unpack_foreground_gpu(w.dev_bits[b], static_cast<std::uint8_t*>(w.dev) + at * plane, n, s[1], s[2],
                                          w.stream);
        WEFT_CUDA_CHECK(cudaEventRecord(w.done[b], w.stream));
      }
      WEFT_CUDA_CHECK(cudaStreamSynchronize(w.stream));
      seconds[k] = std::chrono::duration<double>(Clock::now() - start).count();
    });
  for (auto& t : threads) t.join();
  double slowest = seconds.empty() ? 0 : *std::max_element(seconds.begin(), seconds.end());
  for (Worker& w : workers) {
    WEFT_CUDA_CHECK(cudaSetDevice(w.device));
    WEFT_CUDA_CHECK(cudaStreamDestroy(w.stream));
    for (int b = 0; b < 2; ++b) {
      WEFT_CUDA_CHECK(cudaEventDestroy(w.done[b]));
      WEFT_CUDA_CHECK(cudaFreeHost(w.pinned[b]));
      WEFT_CUDA_CHECK(cudaFree(w.dev_bits[b]));
    }
    WEFT_CUDA_CHECK(cudaFree(w.dev));
  }
  if (env.distributed()) MPI_Allreduce(MPI_IN_PLACE, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return slowest;
}

/// Slab budget of a set of places: 70 % of the smallest GPU's memory.
double budget_for(const Environment& env, const std::vector<Place>& places) {
  double budget = 0;
  for (const Place& p : places)
    for (const auto& g : env.cluster().ranks[static_cast<std::size_t>(p.rank)].gpus)
      if (g.index == p.device && (budget == 0 || 0.7 * static_cast<double>(g.memory_bytes) < budget))
        budget = 0.7 * static_cast<double>(g.memory_bytes);
  return budget;
}

/// One run of the slab graph over `plan` (plan_for the places); `trim`: give the device pools back
/// after it (else the next run of the same configuration reuses them, as the warm-up intends).
Measure run_once(const Environment& env, const Array& volume, Element e, int last, const morphology::SlabPlan& plan,
                 const std::vector<Place>& places, bool trim, std::int64_t read_chunk, bool host_turns,
                 bool handover) {
  const Shape& s = volume.shape();
  // The reading of a worker's first slab overlaps only its own transfers (chunk by chunk; its GPU
  // waits for the whole slab).
  morphology::MaskReader reader = [&volume, s](std::int64_t first, std::int64_t count) {
    Array out = Array::host(DType::u8, Shape(count, morphology::foreground_plane_bytes(s[1], s[2])));
    read_bits(volume, first, count, out.data<std::uint8_t>());
    return out;
  };
  auto total = std::make_shared<std::vector<std::int64_t>>();
  Graph g;
  // Fresh host turns for this run, as the program makes them (collective; none within one rank),
  // and the halo slots between ranks (HostHalos): timed, as the setup the run's wall leaves out.
  const auto setup_start = Clock::now();
  const auto turns = host_turns ? morphology::slab_read_turns(places, env.cluster(), handover) : nullptr;
  const auto slabs = morphology::add_slab_granulometry(g, plan, {e, last, false, {}}, reader, read_chunk, turns);
  double setup = std::chrono::duration<double>(Clock::now() - setup_start).count();
  auto& sink = g.add<CurveSink>(plan.workers, total);
  g.connect(slabs.remaining, sink.remaining);
  g.connect(slabs.spectrum, sink.spectrum);
  for (int i = 0; i < plan.workers; ++i) g.connect(slabs.size_maps[i], sink.maps[i]);
  morphology::SlabMapper mapper(places);
  AutoMapper automatic(DeviceChoice::gpu);
  Executor ex({.channel_capacity = 2, .trim_pools = trim});
  const Mapping mapping = map_graph(g, env.cluster(), {&mapper, &automatic});
  // When this rank's run began on the host's steady clock, which the ranks of one host share: the
  // workers' times below are put on the clock of the rank that began first.
  const double begun = std::chrono::duration<double>(Clock::now().time_since_epoch()).count();
  RunHandle run = ex.run(g, mapping);
  run.wait();
  Measure m;
  double first = begun;
  if (env.distributed()) MPI_Allreduce(&begun, &first, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  const double offset = begun - first;
  const RunStats stats = run.stats();
  m.wall = stats.seconds;
  const auto workers = static_cast<std::size_t>(plan.workers);
  m.compute_each.assign(workers, 0.0);
  m.read_end_each.assign(workers, -1.0);
  m.start_each.assign(workers, -1.0);
  m.end_each.assign(workers, -1.0);
  // The worker of a task named prefix + i ("openings.3"), `workers` for another task.
  auto worker_of = [&](const std::string& task, const std::string& prefix) {
    return task.rfind(prefix, 0) == 0 ? static_cast<std::size_t>(std::stoi(task.substr(prefix.size()))) : workers;
  };
  for (const auto& t : stats.tasks)
    if (t.task.rfind("openings.", 0) == 0) {
      m.compute = std::max(m.compute, t.busy_seconds);
      if (const std::size_t i = worker_of(t.task, "openings."); i < workers) {
        m.compute_each[i] = std::max(m.compute_each[i], t.busy_seconds);
        m.start_each[i] = std::max(m.start_each[i], t.first_start + offset);
        m.end_each[i] = std::max(m.end_each[i], t.last_end + offset);
      }
    } else if (const std::size_t i = worker_of(t.task, "volume."); i < workers) {
      m.read_end_each[i] = std::max(m.read_end_each[i], t.last_end + offset);
    }
  if (std::getenv("WEFT_SLABS_VERBOSE")) {  // every task's busy time on this rank, for the breakdown
    std::string line = "  rank " + std::to_string(env.rank()) + " (" + std::string(morphology::element_name(e)) + ", " +
                       std::to_string(places.size()) + " GPUs, wall " + std::to_string(stats.seconds) + " s):";
    for (const auto& t : stats.tasks)
      if (t.busy_seconds > 0.001) line += " " + t.task + " " + std::to_string(t.busy_seconds).substr(0, 5);
    std::printf("%s\n", line.c_str());
    std::fflush(stdout);
  }
  // Under mpirun each rank sees its own workers' tasks: the slowest over every rank.
  if (env.distributed()) {
    MPI_Allreduce(MPI_IN_PLACE, &m.compute, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    for (auto* each : {&m.compute_each, &m.read_end_each, &m.start_each, &m.end_each})
      MPI_Allreduce(MPI_IN_PLACE, each->data(), static_cast<int>(each->size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    double late = offset;
    MPI_Allreduce(&late, &m.start_skew, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, &setup, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  }
  m.setup = setup;
  m.curve = *total;
  m.halo_handover = slabs.halos_handed_over;  // asked for, and slots to hand over, on every rank
  m.slabs = plan.slabs();
  m.rounds = plan.rounds();
  m.planes = plan.planes;
  return m;
}

/// --emulate: the slabs of a g-way plan computed one after the other on one GPU (each uploaded,
/// then timed alone from the first kernel to its counts on the host): the compute time each GPU
/// of g would take without the others, where no g GPUs are at hand. Not the g-GPU run itself: no
/// reading, no uploads overlapping, no host threads shared.
struct Emulated {
  std::vector<double> seconds;  // per slab
  std::vector<std::int64_t> own, curve;
};

Emulated emulate(const Environment& env, const Array& volume, Element e, int last, int g, double budget,
                 double read_cost) {
  const Shape& s = volume.shape();
  // As one rank driving g GPUs plans them.
  std::vector<Place> places;
  for (int i = 0; i < g; ++i) places.push_back(Place::cuda(i));
  const auto plan = plan_for(s, e, last, places, env.cluster(), budget, false, false, read_cost);
  const std::size_t plane = static_cast<std::size_t>(s[1] * s[2]);
  cudaStream_t stream = nullptr;
  WEFT_CUDA_CHECK(cudaStreamCreate(&stream));
  Emulated out;
  for (int round = 0; round < plan.rounds(); ++round)
    for (int w = 0; w < plan.workers; ++w) {
      const morphology::Slab slab = plan.slab(round, w);
      if (slab.empty()) continue;
      double best = 0;
      morphology::GranulometryResult r;
      {
        Array mask = Array::device(DType::u8, Shape(slab.read_planes(), s[1], s[2]), 0, stream);
        WEFT_CUDA_CHECK(cudaMemcpyAsync(mask.raw(), volume.data<std::uint8_t>() + slab.read_first * plane, mask.bytes(),
                                        cudaMemcpyHostToDevice, stream));
        morphology::GranulometryOptions o{e, last, false, {}};
        o.first_plane = slab.first - slab.read_first;
        o.end_plane = slab.end - slab.read_first;
        for (int k = 0; k < 2; ++k) {  // the first warms the pools
          WEFT_CUDA_CHECK(cudaStreamSynchronize(stream));
          const auto t0 = Clock::now();
          r = morphology::granulometry_gpu(mask, o, stream);
          const double t = std::chrono::duration<double>(Clock::now() - t0).count();
          if (k == 1) best = t;
        }
      }
      WEFT_CUDA_CHECK(cudaStreamSynchronize(stream));
      out.seconds.push_back(best);
      out.own.push_back(slab.end - slab.first);
      out.curve.resize(std::max(out.curve.size(), r.remaining.size()), 0);
      for (std::size_t n = 0; n < r.remaining.size(); ++n) out.curve[n] += r.remaining[n];
    }
  WEFT_CUDA_CHECK(cudaStreamDestroy(stream));
  return out;
}

/// Merges this run into the results file: metrics.slabs_<size> and the efficiency targets (one per
/// element), keeping every other key (the single-GPU entries may come from another machine).
void merge_results(bench::Result& result, const nlohmann::json& slabs, const std::string& key,
                   const nlohmann::json& targets) {
  const char* dir = std::getenv("WEFT_RESULTS_DIR");
  const std::filesystem::path file =
      std::filesystem::path(dir ? dir : std::string(WEFT_SOURCE_DIR) + "/bench/results") / "granulometry.json";
  nlohmann::json doc = result.json();
  if (std::ifstream in(file); in) {
    nlohmann::json old = nlohmann::json::parse(in, nullptr, false);
    if (old.is_object() && old.value("benchmark", "") == "granulometry") doc = old;
  }
  nlohmann::json run = slabs;
  run["device"] = result.device();  // this run's GPUs (the file's own device is that of its first entries)
  for (const char* k : {"commit", "date", "command"})
    if (result.json().contains(k)) run[k] = result.json()[k];
  doc["metrics"][key] = run;
  // The single target of earlier versions (octahedron only) gives way to one per element.
  if (!targets.empty())
    for (const char* old : {"parallel_efficiency_2048_4gpu", "parallel_efficiency_2048_4ranks"}) doc["targets"].erase(old);
  for (const auto& [name, value] : targets.items()) doc["targets"][name] = value;
  result.json() = doc;
}

}  // namespace

int main(int argc, char** argv) {
  Environment env(argc, argv);
  const bool root = env.rank() == 0;
  std::int64_t size = 2048;
  int last = 50, repeats = 1;
  double read_cost = -1;  // -1: the app's (gpu_read_cost where the places read in turns, else 0)
  std::int64_t read_chunk = morphology::kSlabChunkBytes;  // voxels a slab's source reads at a time
  bool emulated = false;
  std::string tag;  // appended to the results key (a run on other machines than the 4-GPU one)
  std::string gpus_text = "1,2,4", elements_text = "octahedron,cube,ball";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--size") size = std::stoll(next());
    else if (a == "--max-size") last = std::stoi(next());
    else if (a == "--gpus") gpus_text = next();
    else if (a == "--elements") elements_text = next();
    else if (a == "--repeats") repeats = std::max(1, std::stoi(next()));
    else if (a == "--emulate") emulated = true;
    else if (a == "--tag") tag = next();
    else if (a == "--read-cost") read_cost = std::stod(next());
    else if (a == "--read-chunk") read_chunk = std::stoll(next());
    else if (a == "--help" || a == "-h") {
      if (root)
        std::printf(
            "usage: granulometry_slabs_bench [--size 2048] [--max-size 50] [--gpus 1,2,4]\n"
            "       [--elements octahedron,cube,ball] [--repeats 1] [--tag NAME] [--read-cost R]\n"
            "       [--read-chunk VOXELS] [--emulate]\n"
            "The slab granulometry of a SIZE^3 volume of overlapping balls over 1, 2, 4 ... GPU places\n"
            "(every GPU of every rank; run alone or under mpirun), best of REPEATS runs after a warm one:\n"
            "wall, the slowest worker's openings, each worker's planes and times, the wall efficiency\n"
            "T1 / (g Tg), merged into granulometry.json (WEFT_RESULTS_DIR, else bench/results) under\n"
            "slabs_SIZE[_ranksN][_TAG]. --emulate: the slabs of each plan one after the other on one GPU.\n"
            "WEFT_HOST_TURNS=0: the ranks of a host read at once; WEFT_HALO_HANDOVER=1 on every rank:\n"
            "their shared halos handed over through /dev/shm instead of read by both.\n");
      return 0;
    } else { std::fprintf(stderr, "unknown option %s (--help lists them)\n", a.c_str()); return 2; }
  }
  const auto all = morphology::slab_places(env.cluster(), DeviceChoice::automatic);
  if (all.empty() || !all.front().is_gpu()) {
    if (root) std::printf("granulometry_slabs_bench: no GPU, nothing measured\n");
    return 0;
  }
  bench::Result result("granulometry", argc, argv);
  auto t0 = Clock::now();
  if (root) std::printf("generating %lld^3 overlapping balls on every rank...\n", static_cast<long long>(size)), std::fflush(stdout);
  const Array volume = morphology::overlapping_balls(Shape(size, size, size), 2, 40, 0.4, 7);
  // As the program decides it: the ranks of a host read their slabs in turns (WEFT_HOST_TURNS=0:
  // at once), each with the reading threads of a rank alone on the host.
  const bool host_turns = morphology::ranks_read_in_turns(all, env.cluster());
  morphology::read_in_host_turns(host_turns);
  const bool handover = host_turns && morphology::halo_handover_requested();  // collective
  if (root) std::printf("  %.1f s; %zu GPU place(s) over %d rank(s)%s; %d reading threads per rank\n",
                        std::chrono::duration<double>(Clock::now() - t0).count(), all.size(), env.size(),
                        host_turns ? ", the ranks of a host reading in turns" : "", morphology::read_threads());
  double bandwidth = 0;
  {
    cudaStream_t stream = nullptr;
    WEFT_CUDA_CHECK(cudaStreamCreate(&stream));
    bandwidth = bench::device_copy_bandwidth(stream);
    WEFT_CUDA_CHECK(cudaStreamDestroy(stream));
  }
  if (emulated) {
    if (env.size() > 1) {
      if (root) std::fprintf(stderr, "--emulate runs on one rank\n");
      return 2;
    }
    const double budget = 0.7 * static_cast<double>(env.cluster().ranks[0].gpus[0].memory_bytes);
    nlohmann::json erows = nlohmann::json::array();
    std::printf("%-10s %4s  %-40s %9s %9s %8s\n", "element", "gpus", "own planes", "max s", "sum s", "eff gpu");
    for (const std::string& name : split(elements_text)) {
      const Element e = morphology::parse_element(name);
      double whole = 0;
      std::vector<std::int64_t> reference;
      for (const std::string& gtext : split(gpus_text)) {
        const int g = std::stoi(gtext);
        const Emulated m = emulate(env, volume, e, last, g, budget, read_cost);
        const double slowest = *std::max_element(m.seconds.begin(), m.seconds.end());
        double sum = 0;
        std::string own;
        for (std::size_t i = 0; i < m.seconds.size(); ++i) sum += m.seconds[i], own += std::to_string(m.own[i]) + " ";
        if (g == 1 || whole == 0) whole = slowest, reference = m.curve;
        const double eff = whole / (g * slowest);
        std::printf("%-10s %4d  %-40s %9.3f %9.3f %8.2f%s\n", name.c_str(), g, own.c_str(), slowest, sum, eff,
                    m.curve == reference ? "" : "  CURVE DIFFERS");
        std::fflush(stdout);
        erows.push_back({{"element", name}, {"gpus", g}, {"slab_seconds", m.seconds}, {"own_planes", m.own},
                         {"compute_seconds", slowest}, {"efficiency_compute", eff},
                         {"curve_identical_to_first", m.curve == reference}});
      }
    }
    nlohmann::json doc = {{"volume", size}, {"max_size", last}, {"runs", erows},
                          {"read_cost", read_cost},
                          {"note", "emulated: the slabs of the g-GPU plan computed one after the other on one GPU, "
                                   "each timed alone (granulometry_gpu, counts on the host); efficiency "
                                   "T1 / (g max slab). Not a g-GPU run. read_cost: --read-cost (-1: the "
                                   "app's; 0: slabs balanced for their compute alone)"}};
    merge_results(result, doc, "slabs_" + std::to_string(size) + "_emulated" + (tag.empty() ? "" : "_" + tag),
                  nlohmann::json::object());
    (void)result.write();  // prints where
    return 0;
  }
  nlohmann::json rows = nlohmann::json::array(), targets = nlohmann::json::object();
  if (root)
    std::printf("%-10s %4s %6s %6s %7s %9s %9s %9s %7s %8s %8s %8s\n", "element", "gpus", "slabs", "rounds", "planes",
                "wall s", "compute s", "floor s", "read s", "eff wall", "bound", "eff gpu"), std::fflush(stdout);
  for (const std::string& name : split(elements_text)) {
    Element e{};
    try {
      e = morphology::parse_element(name);
    } catch (const std::exception& ex) {
      if (root) std::printf("%s\n", ex.what());
      continue;
    }
    Measure base;
    std::vector<std::int64_t> reference;
    for (const std::string& gtext : split(gpus_text)) {
      const int g = std::stoi(gtext);
      nlohmann::json row = {{"element", name}, {"gpus", g}, {"ranks", env.size()}};
      if (g < 1 || g > static_cast<int>(all.size())) {
        row["skipped"] = "only " + std::to_string(all.size()) + " GPU places";
        if (root) std::printf("%-10s %4d skipped (%zu GPUs)\n", name.c_str(), g, all.size());
        rows.push_back(row);
        continue;
      }
      try {
        const std::vector<Place> places(all.begin(), all.begin() + g);
        const auto plan = plan_for(volume.shape(), e, last, places, env.cluster(), budget_for(env, places),
                                   host_turns, handover, read_cost);
        const auto read_twice = std::count(plan.rereads.begin(), plan.rereads.end(), true);
        std::vector<std::int64_t> own_each;
        for (int w = 0; w < plan.workers; ++w) own_each.push_back(plan.slab(0, w).end - plan.slab(0, w).first);
        // Warm: device pools (kept for the timed runs, given back after the last of them, so that
        // the next element or GPU count starts from empty pools), pinned host memory.
        // The warm run is this configuration's first graph: where it is the process's first with
        // halos between ranks (the first element's), its setup gives and maps their pages, as a
        // `weft granulometry` run's single graph does.
        const Measure warm = run_once(env, volume, e, last, plan, places, false, read_chunk, host_turns, handover);
        Measure best;
        for (int r = 0; r < repeats; ++r) {
          Measure m = run_once(env, volume, e, last, plan, places, r + 1 == repeats, read_chunk, host_turns, handover);
          if (r == 0 || m.wall < best.wall) best = m;
        }
        // The read phase alone, by hand (best of 2): the wall a run gets if reading does not overlap.
        double read = 0;
        for (int k = 0; k < 2; ++k) {
          const double t = read_upload_seconds(env, volume, plan, places);
          read = k == 0 ? t : std::min(read, t);
        }
        int computed = 0;
        for (std::size_t n = 1; n < best.curve.size() && best.curve[n] > 0; ++n) ++computed;
        // Bytes the kernels move per voxel and size (granulometry_bench.cpp), shared by g GPUs.
        const double floor = static_cast<double>(volume.size()) * (name == "ball" ? 28.0 : 14.0) * (computed + 2) /
                             bandwidth / g;
        if (g == 1 || base.wall == 0) base = best, reference = best.curve;
        const double eff_wall = base.wall / (best.wall * g);
        const double eff_gpu = base.compute > 0 && best.compute > 0 ? base.compute / (best.compute * g) : -1;
        const double eff_bound = base.wall / ((best.compute + read) * g);
        row.update({{"slabs", best.slabs}, {"rounds", best.rounds}, {"own_planes", best.planes},
                    {"read_cost", plan.read_cost}, {"read_balanced", plan.read_cost > 0 && plan.balanced()},
                    {"host_turns", host_turns && morphology::ranks_share_a_host(places, env.cluster())},
                    {"halo_handover", best.halo_handover},
                    {"halos_read_twice", read_twice}, {"setup_seconds", best.setup},
                    {"warm_setup_seconds", warm.setup}, {"warm_wall_seconds", warm.wall},
                    {"run_start_skew_seconds", best.start_skew},
                    {"own_planes_each", own_each}, {"compute_seconds_each", best.compute_each},
                    {"read_end_seconds_each", best.read_end_each}, {"openings_start_seconds_each", best.start_each},
                    {"openings_end_seconds_each", best.end_each},
                    {"wall_seconds", best.wall}, {"compute_seconds", best.compute}, {"floor_seconds", floor},
                    {"read_upload_seconds", read}, {"efficiency_wall_bound", eff_bound},
                    {"ratio", best.compute / floor}, {"efficiency_wall", eff_wall}, {"efficiency_compute", eff_gpu},
                    {"curve_identical_to_first", best.curve == reference}, {"foreground", best.curve.empty() ? 0 : best.curve[0]}});
        if (root)
          std::printf("%-10s %4d %6d %6d %7lld %9.3f %9.3f %9.3f %7.3f %8.2f %8.2f %8.2f%s\n", name.c_str(), g,
                      best.slabs, best.rounds, static_cast<long long>(best.planes), best.wall, best.compute, floor,
                      read, eff_wall, eff_bound, eff_gpu, best.curve == reference ? "" : "  CURVE DIFFERS"),
              std::fflush(stdout);
        // The target, one per element: the wall time's efficiency (reading, uploads and
        // openings, as a user's run), the slowest worker's compute efficiency beside it.
        if (g == 4 && size == 2048 && eff_gpu > 0) {
          const std::string key = std::string("parallel_efficiency_2048_") + (env.size() > 1 ? "4ranks_" : "4gpu_") + name;
          targets[key] = {{"value", eff_wall}, {"goal", 0.85}, {"met", eff_wall >= 0.85},
                          {"basis", "wall (T1 / (4 T4), reading included)"}, {"efficiency_compute", eff_gpu},
                          {"efficiency_wall_bound", eff_bound}, {"read_cost", plan.read_cost},
                          {"halo_handover", best.halo_handover},
                          {"halos_read_twice", read_twice}, {"commit", result.json().value("commit", "")},
                          {"tag", tag}};
        }
      } catch (const std::exception& ex) {
        row["error"] = ex.what();
        if (root) std::printf("%-10s %4d failed: %s\n", name.c_str(), g, ex.what()), std::fflush(stdout);
      }
      rows.push_back(row);
    }
  }
  if (!root) return 0;
  nlohmann::json slabs = {{"volume", size}, {"max_size", last}, {"copy_bandwidth_GBps", bandwidth / 1e9},
                          {"ranks", env.size()}, {"gpu_places", all.size()}, {"read_threads_per_rank", morphology::read_threads()},
                          {"runs", rows},
                          {"note", "wall: the graph's run (slabs read from host memory as foreground bits by "
                                   "pieces on every core, uploads, unpacking, openings, sums); "
                                   "compute: the slowest worker's time in its openings (over every rank under "
                                   "mpirun); efficiency T1 / (g Tg); read_upload: the first round's slabs "
                                   "read the same way into pinned chunks, uploaded and unpacked by a hand-written "
                                   "loop, every worker at once (slowest worker); efficiency_wall_bound: "
                                   "T1 wall / (g (compute + read_upload)), the wall efficiency of a run whose "
                                   "reading overlaps no opening; read_cost > 0 (one host): the workers read their "
                                   "slabs in turns (host_turns: between ranks too), each slab's leading halo "
                                   "taken from the slab before when both are on one rank, or on two ranks of "
                                   "one host through shared memory (halo_handover, WEFT_HALO_HANDOVER=1), else "
                                   "read again by the second (halos_read_twice: the slabs after it get fewer "
                                   "planes for it), and "
                                   "the first slabs, which start their openings earlier, get more planes "
                                   "(own_planes_each), so that the slowest worker's compute is longer than in "
                                   "an even split by design; read_end / openings_start / openings_end_seconds_each: "
                                   "from the run's start on the rank that began first (RunStats first_start, last_end, "
                                   "shifted by each rank's later start on the host's steady clock: one host), "
                                   "host side; run_start_skew: the last rank's later start; setup: the slowest "
                                   "rank's host turns, halo slots and graph before the run, outside the wall; "
                                   "warm_setup / warm_wall: the same for the untimed first run of the "
                                   "configuration (the first element's pays for the halo slots' pages)"}};
  // One rank with every GPU, or mpirun: separate keys, so that both runs can be kept.
  const std::string suffix = (env.size() > 1 ? "_ranks" + std::to_string(env.size()) : "") + (tag.empty() ? "" : "_" + tag);
  merge_results(result, slabs, "slabs_" + std::to_string(size) + suffix, targets);
  (void)result.write();  // prints where
  std::printf("total %.0f s\n", std::chrono::duration<double>(Clock::now() - t0).count());
  return 0;
}

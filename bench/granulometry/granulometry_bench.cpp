// Granulometry on one GPU: 512³ and 1024³ volumes of overlapping balls (radii 2–40, ~40 %
// foreground), N = 50, each element. Reports GPU compute time, end-to-end time (the HDF5 file,
// chunked 64³, read from the page cache as the program reads it: by pieces on every core,
// thresholded and packed to bits; upload, unpacking, openings), the bytes the kernels move against the measured
// device copy bandwidth (and, for balls, the window arithmetic against the integer peak), and
// scipy / CuPy peers (peers.py) on the same files.
// Usage: granulometry_bench [--sizes 512,1024] [--elements octahedron,cube,ball] [--max-size 50]
//                           [--workdir /tmp] [--python PY] [--no-peers]
// With --sizes or --elements, the rows and peers of the others stay in granulometry.json as they were.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "result.hpp"
#include "gpu.hpp"
#include "weft/cuda.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/tasks/morphology/granulometry.hpp"
#include "weft/tasks/morphology/synthetic.hpp"
#include "weft/tasks/morphology/threshold.hpp"
#include "volume_input.hpp"

namespace {

using namespace weft;
using morphology::Element;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

/// Bytes per voxel the kernels move for one opening + count of octahedra and cubes (sizes < 255,
/// distance_gpu.cu, on u8): row pass 5 (u8 copy of the erosion distances read by both scans,
/// left distance written, read and the result written), two column passes of 4 (forward and
/// backward scans read and write each word), count 1.
constexpr double kU8BytesPerVoxelPerSize = 14.0;

/// Octahedra on bits (octahedron_bits_gpu.cu; X % 32 == 0, radii up to kBitMaxRadius = 128):
/// bytes per voxel over sizes 1..computed + 1, DRAM traffic only (the neighbour words of a
/// launch are read again from L1/L2): the u8 erosion distances read and 1/8 written by the pack,
/// then ⌈n/2⌉ launches that each read and write 1/8 byte per voxel; plus the erosion distances
/// once (as the distance method's two extra sizes).
double octahedron_bit_bytes_per_voxel(int computed) {
  double bytes = 2.0 * kU8BytesPerVoxelPerSize;
  for (int n = 1; n <= computed + 1; ++n) bytes += 1.0 + 0.125 + ((n + 1) / 2) * 0.25;
  return bytes;
}

/// Window half-width of the ball's shell passes for size n (ball_shell_gpu.cu): W = ⌈(n + 1) / 8⌉·8.
int shell_window(int n) { return (n + 1 + 7) / 8 * 8; }

/// Balls by the shell method (ball_shell_gpu.cu, sizes up to 63), DRAM bytes per voxel over sizes
/// 1..computed + 1: the pack reads the u8 levels ⌈√D⌉ and writes two bit planes; the y pass reads
/// the E bits of its 128-line tiles and their 2W halo (6 words for the tile's 2) and writes the
/// u16 reach; the z pass walks each column once, reading the reach and the P bits. Plus, once,
/// the bounded erosion distances (a row pass and two windowed passes of u16: about 12 bytes) and
/// the levels made from them (3 bytes). The pack reads the u8 levels, not the u16 distances: a
/// model counting those would put one byte per voxel and size too many.
double ball_shell_bytes_per_voxel(int computed) {
  double bytes = 12.0 + 3.0;
  for (int n = 1; n <= computed + 1; ++n) {
    const double halo = (128.0 + 2.0 * shell_window(n)) / 128.0;
    bytes += (1.0 + 0.25) + (3.0 / 8.0 * halo + 2.0) + (2.0 + 0.125);
  }
  return bytes;
}

/// Add+min steps per voxel of the ball's y pass for sizes 1..computed + 1 if it ran its whole
/// window, 2W offsets, each step one u16x2 lane of __viaddmin_u16x2. The y pass stops early and
/// skips offsets whose rows hold no erosion voxel near, so this is an estimate of the arithmetic
/// without those savings, reported beside the times, not a floor.
double ball_window_steps_per_voxel(int computed) {
  double steps = 0;
  for (int n = 1; n <= computed + 1; ++n) steps += 2.0 * shell_window(n);
  return steps;
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) v.push_back(std::stoi(part));
  return v;
}

/// Peers' estimated time for sizes 0..N from their measured sizes: octahedron and cube repeat an
/// elementary pass 2n times for size n (Σ 2n = N(N+1) passes); a ball opening costs the same at every n.
/// The median over the measured sizes: one size that also paid a warm-up (a CuPy ball opening of
/// 1024³ once took 2.9 s at n = 1, then 0.145 s at n = 2 and 4) would otherwise inflate the peer.
double extrapolate(const nlohmann::json& rows, Element e, int last) {
  if (!rows.is_array() || rows.empty()) return -1;
  std::vector<double> per;
  for (const auto& r : rows)
    per.push_back(e == Element::ball ? r["seconds"].get<double>()
                                     : r["seconds"].get<double>() / (2.0 * r["size"].get<int>()));
  std::sort(per.begin(), per.end());
  const std::size_t m = per.size() / 2;
  const double median = per.size() % 2 ? per[m] : 0.5 * (per[m - 1] + per[m]);
  return e == Element::ball ? median * last : median * last * (last + 1.0);
}

/// Metrics and targets of an existing granulometry.json that this run does not write (the
/// multi-GPU entries of granulometry_slabs_bench) stay in the file.
void keep_other_entries(bench::Result& result) {
  const char* dir = std::getenv("WEFT_RESULTS_DIR");
  const std::filesystem::path file =
      std::filesystem::path(dir ? dir : std::string(WEFT_SOURCE_DIR) + "/bench/results") / "granulometry.json";
  std::ifstream in(file);
  if (!in) return;
  const nlohmann::json old = nlohmann::json::parse(in, nullptr, false);
  if (!old.is_object() || old.value("benchmark", "") != "granulometry") return;
  nlohmann::json& doc = result.json();
  for (const char* section : {"metrics", "targets"}) {
    if (!old.contains(section) || !old[section].is_object()) continue;
    for (const auto& [key, value] : old[section].items())
      if (!doc[section].contains(key)) doc[section][key] = value;
  }
  for (const auto& [key, value] : old["metrics"].items()) {  // peers of elements not run now
    if (key.rfind("peers_", 0) != 0 || !value.is_object()) continue;
    auto& now = doc["metrics"][key];
    for (const auto& [lib, by_element] : value.items()) {
      if (!by_element.is_object()) continue;
      for (const auto& [element, entry] : by_element.items())
        if (!now.contains(lib) || !now[lib].is_object() || !now[lib].contains(element)) now[lib][element] = entry;
    }
  }
  // With --elements or --sizes, the rows of volumes and elements this run did not measure stay
  // (each keeps the commit, date and device it was measured at).
  const auto& old_runs = old["metrics"].value("runs", nlohmann::json::array());
  auto& runs = doc["metrics"]["runs"];
  for (const auto& row : old_runs) {
    bool measured = false;
    for (const auto& now : runs)
      measured = measured || (now.value("volume", 0) == row.value("volume", 0) &&
                              now.value("element", "") == row.value("element", ""));
    if (!measured) {
      nlohmann::json kept = row;
      if (!kept.contains("commit")) kept["commit"] = old.value("commit", "");
      if (!kept.contains("date")) kept["date"] = old.value("date", "");
      if (!kept.contains("device")) kept["device"] = old.value("device", "");
      runs.push_back(kept);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string sizes_text = "512,1024", elements_text = "octahedron,cube,ball", workdir = "/tmp", python = "python3";
  if (std::filesystem::exists("/usr/bin/python3")) python = "/usr/bin/python3";
  int last = 50;
  bool peers = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--sizes") sizes_text = next();
    else if (a == "--max-size") last = std::stoi(next());
    else if (a == "--elements") elements_text = next();
    else if (a == "--workdir") workdir = next();
    else if (a == "--python") python = next();
    else if (a == "--no-peers") peers = false;
    else { std::fprintf(stderr, "unknown option %s\n", a.c_str()); return 2; }
  }
  if (cuda_device_count() == 0) {
    std::printf("granulometry_bench: no GPU, nothing measured\n");
    return 0;
  }
  bench::Result result("granulometry", argc, argv);
  cudaStream_t stream = nullptr;
  WEFT_CUDA_CHECK(cudaStreamCreate(&stream));
  const double bandwidth = bench::device_copy_bandwidth(stream);
  result.metric("copy_bandwidth_GBps", bandwidth / 1e9);
  result.metric("max_size", last);
  // Integer peak for the ball's window arithmetic: 64 INT32 lanes per SM per clock (sm_90), two
  // u16 voxels per lane and instruction.
  int sms = 0, clock_khz = 0;
  WEFT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  WEFT_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0));
  const double voxel_steps_per_second = 64.0 * 2.0 * sms * clock_khz * 1e3;
  result.metric("ball_voxel_steps_per_second_peak", voxel_steps_per_second);
  std::printf("device copy bandwidth %.0f GB/s (read + write)\n", bandwidth / 1e9);
  std::printf("%-6s %-10s %9s %9s %10s %9s %7s %10s %10s %8s\n", "volume", "element", "gpu s", "e2e s", "GB moved",
              "floor s", "ratio", "cupy s*", "scipy s*", "speedup");
  nlohmann::json rows = nlohmann::json::array();
  std::vector<Element> elements;
  {
    std::stringstream ss(elements_text);
    std::string part;
    while (std::getline(ss, part, ',')) {
      if (part == "octahedron") elements.push_back(Element::octahedron);
      else if (part == "cube") elements.push_back(Element::cube);
      else if (part == "ball") elements.push_back(Element::ball);
      else {
        std::fprintf(stderr, "granulometry_bench: --elements: unknown element '%s' (octahedron, cube, ball)\n",
                     part.c_str());
        return 2;
      }
    }
  }
  for (int size : parse_list(sizes_text)) {
    const std::string file = workdir + "/weft_granulometry_" + std::to_string(size) + ".h5";
    const io::DatasetRef ref{file, "/exchange/data"};
    {
      Array volume = morphology::overlapping_balls(Shape(size, size, size), 2, 40, 0.4, 7);
      io::H5Writer h5(file);
      h5.write(ref.path, volume, {64, 64, 64}, false);
      h5.write("/gzip", volume, {64, 64, 64}, true);  // the same, gzip level 4 (for the read times)
      h5.commit();
    }
    (void)io::read_dataset(ref);  // page cache warm
    {
      // Reading alone, to foreground bits on the host: the library's path (H5Dread of the whole
      // dataset on one thread, then packing) against the program's (chunks by pread on the reading threads,
      // inflated and packed as they come), on the plain and the gzip chunks. Best of 2 each.
      const Shape shape(size, size, size);
      nlohmann::json read = nlohmann::json::object();
      for (const char* path : {"/exchange/data", "/gzip"}) {
        const io::DatasetRef r{file, path};
        double library = 1e30, direct = 1e30;
        for (int k = 0; k < 2; ++k) {
          auto t = Clock::now();
          const Array a = morphology::foreground_bits(io::read_dataset(r), std::nullopt);
          library = std::min(library, seconds_since(t));
          t = Clock::now();
          const auto b = granulometry::read_foreground_direct(granulometry::direct_source({r.str()}), shape, 0, size,
                                                              std::nullopt);
          direct = std::min(direct, seconds_since(t));
          if (!b || std::memcmp(a.raw(), b->raw(), a.bytes()) != 0)
            std::printf("read %s: the direct path %s\n", path, b ? "DIFFERS" : "was not taken");
        }
        const std::string key = std::string(path) == "/gzip" ? "gzip" : "plain";
        read[key] = {{"h5dread_seconds", library}, {"direct_seconds", direct}, {"speedup", library / direct},
                     {"threads", morphology::read_threads()}};
        std::printf("read %d^3 %s chunks to bits: H5Dread + pack %.3f s, by chunks on %d reading threads %.3f s (%.1fx)\n",
                    size, key.c_str(), library, morphology::read_threads(), direct, library / direct);
      }
      result.metric("read_" + std::to_string(size), read);
    }
    nlohmann::json peer;
    if (peers) {
      const std::string out = workdir + "/weft_granulometry_peers_" + std::to_string(size) + ".json";
      // scipy only on the smaller volume (its 512³ ball opening alone takes over 100 s). Three
      // sizes each, so that the median per size drops one slow outlier (CuPy took 3.1-4.2 s for a
      // 512³ octahedron at n = 1 on fresh H100s after its warm-ups, 0.011 s at n = 2).
      const std::string args = std::string(" --sizes 1,2,4 --budget 15") + (size <= 512 ? "" : " --no-scipy");
      const std::string cmd = python + " " + WEFT_PEERS_SCRIPT + " --input " + ref.str() + " --json " + out + args +
                              " --elements " + elements_text;
      std::printf("peers: %s\n", cmd.c_str());
      if (std::system(cmd.c_str()) == 0) {
        std::ifstream f(out);
        peer = nlohmann::json::parse(f, nullptr, false);
      }
    }
    for (Element e : elements) {
      const std::string name(morphology::element_name(e));
      morphology::GranulometryOptions options{e, last, false, {}};
      // End to end, as `weft granulometry` reads: the chunks read from the page cache by pieces on
      // every core and packed to foreground bits as they come (read_foreground_direct), the bits
      // uploaded and unpacked on the GPU, openings, curve on the host.
      auto t0 = Clock::now();
      const Shape shape(size, size, size);
      std::optional<Array> packed =
          granulometry::read_foreground_direct(granulometry::direct_source({ref.str()}), shape, 0, size, std::nullopt);
      if (!packed) packed = morphology::foreground_bits(io::read_dataset(ref), std::nullopt);  // (the file is unfiltered)
      Array d_bits = Array::device(DType::u8, packed->shape(), 0, stream);
      Array d_mask = Array::device(DType::u8, shape, 0, stream);
      WEFT_CUDA_CHECK(cudaMemcpyAsync(d_bits.raw(), packed->raw(), packed->bytes(), cudaMemcpyHostToDevice, stream));
      morphology::unpack_foreground_gpu(d_bits.raw(), d_mask.raw(), size, size, size, stream);
      auto first = morphology::granulometry_gpu(d_mask, options, stream);
      const double end_to_end = seconds_since(t0);
      // GPU compute alone (second run, the mask already on the device, pools warm).
      t0 = Clock::now();
      auto again = morphology::granulometry_gpu(d_mask, options, stream);
      WEFT_CUDA_CHECK(cudaStreamSynchronize(stream));
      const double gpu = seconds_since(t0);
      int computed = 0;
      for (int n = 1; n <= last && first.remaining[n] > 0; ++n) ++computed;
      const double voxels = static_cast<double>(shape.size());
      const bool bits = e == Element::octahedron && size % 32 == 0 && computed + 1 <= 128;
      const bool shell = e == Element::ball && size % 2 == 0 && size >= 32 && computed + 1 <= 63;
      const double moved = bits    ? voxels * octahedron_bit_bytes_per_voxel(computed)
                           : shell ? voxels * ball_shell_bytes_per_voxel(computed)
                                   : voxels * kU8BytesPerVoxelPerSize * (computed + 2);
      const double bytes_floor = moved / bandwidth;
      const double compute_floor = 0.0;  // no data-independent bound on the passes' arithmetic
      const double floor = bytes_floor;
      nlohmann::json row = {{"volume", size}, {"element", name}, {"gpu_seconds", gpu},
                            {"end_to_end_seconds", end_to_end}, {"sizes_computed", computed},
                            {"method", bits    ? "bit-packed openings (1 cross step per launch)"
                                       : shell ? "shell passes (bits, windowed y to reaches, z sweeps of the reach intervals)"
                                               : "distance passes"},
                            {"bytes_moved", moved}, {"bytes_floor_seconds", bytes_floor},
                            {"compute_floor_seconds", compute_floor}, {"floor_seconds", floor}, {"ratio", gpu / floor},
                            {"foreground", first.remaining[0]}, {"curve", first.remaining},
                            {"bitpacked_ideal_seconds", voxels / 8.0 * 2.0 * 2.0 * last / bandwidth},
                            {"repeatable", first.remaining == again.remaining}};
      if (shell)
        row["y_window_seconds_at_peak_without_stops"] =
            voxels * ball_window_steps_per_voxel(computed) / voxel_steps_per_second;
      // Another method on the same mask: its GPU time and whether it gives the same curve.
      auto variant = [&](const morphology::GranulometryOptions& o, const std::string& label) {
        const auto t = Clock::now();
        const auto run = morphology::granulometry_gpu(d_mask, o, stream);
        WEFT_CUDA_CHECK(cudaStreamSynchronize(stream));
        const double seconds = seconds_since(t);
        const bool same = run.remaining == first.remaining;
        std::printf("       %s: %.3f s%s\n", label.c_str(), seconds, same ? "" : "  CURVE DIFFERS");
        return nlohmann::json{{"gpu_seconds", seconds}, {"same_curve", same}};
      };
      if (bits) {  // the fusion depth of the bit path: GPU compute with 1..4 cross steps per launch
        nlohmann::json by_steps = nlohmann::json::object();
        for (int steps = 1; steps <= 4; ++steps) {
          morphology::GranulometryOptions o = options;
          o.bit_steps = steps;
          by_steps[std::to_string(steps)] =
              variant(o, "octahedron bits, " + std::to_string(steps) + " cross step(s) per launch");
        }
        row["bit_steps"] = by_steps;
      }
      if (shell) {  // the former method on the same volume: row pass, two windowed passes, count
        morphology::GranulometryOptions o = options;
        o.ball_windowed = true;
        row["windowed_passes"] = variant(o, "ball by the windowed passes instead");
      }
      double cupy = -1, scipy = -1;
      for (const char* lib : {"cupy", "scipy"}) {
        if (!peer.is_object() || !peer.contains(lib) || !peer[lib].contains(name)) continue;
        const auto& measured = peer[lib][name]["sizes"];
        bool agree = true;
        for (const auto& r : measured) {
          const int n = r["size"].get<int>();
          if (n <= last) agree = agree && r["remaining"].get<std::int64_t>() == first.remaining[n];
        }
        const double estimate = extrapolate(measured, e, computed);
        row[lib] = {{"measured", measured}, {"estimated_seconds_N", estimate}, {"curves_agree", agree}};
        (std::string(lib) == "cupy" ? cupy : scipy) = estimate;
      }
      if (cupy > 0) row["speedup_vs_cupy"] = cupy / gpu;
      std::printf("%-6d %-10s %9.3f %9.3f %10.1f %9.3f %7.2f %10.2f %10.1f %8.1f\n", size, name.c_str(), gpu,
                  end_to_end, moved / 1e9, floor, gpu / floor, cupy, scipy, cupy > 0 ? cupy / gpu : -1.0);
      if (size == 1024) {
        if (e == Element::octahedron) result.target("octahedron_1024_gpu_seconds", gpu, 0.3, false);
        if (e == Element::ball) result.target("ball_1024_gpu_seconds", gpu, 1.0, false);
        result.target(name + "_1024_end_to_end_seconds", end_to_end, 2.0, false);
        if (cupy > 0) result.target(name + "_1024_speedup_vs_cupy", cupy / gpu, 30.0, true);
      }
      rows.push_back(row);
    }
    if (peer.is_object()) result.metric("peers_" + std::to_string(size), peer);
    std::filesystem::remove(file);
  }
  std::printf("* peers: estimated for sizes 0..N from the sizes they finished (see JSON)\n");
  result.metric("runs", rows);
  keep_other_entries(result);
  std::printf("wrote %s\n", result.write().c_str());
  WEFT_CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}

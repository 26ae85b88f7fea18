#pragma once
/// Measurements every GPU benchmark needs (built only with CUDA).
namespace weft::bench {

/// Device-to-device copy bandwidth of the current GPU, in bytes read plus bytes written per
/// second: the median of 5 event-timed 1 GiB copies on `stream` (a cudaStream_t) after a warm-up.
/// Benchmarks divide their bytes by it to print their floor.
[[nodiscard]] double device_copy_bandwidth(void* stream);

}  // namespace weft::bench

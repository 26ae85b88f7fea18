#pragma once
// The dynamic and fused pathways in the saliency benchmark: one-GPU rows and the multi-GPU /
// multi-rank scaling table (fused.cpp).
#include <nlohmann/json.hpp>

#include "result.hpp"
#include "weft/cluster/environment.hpp"

namespace weft::saliency_bench {

/// Dynamic and fused pathways at 512×512, 720×576, 1920×1080 on GPU 0: rows appended to `rows`,
/// target fused_1920x1080_graph_fps (≥ 200).
void run_one_gpu(bench::Result& result, nlohmann::json& rows, double bandwidth);
/// The fused 1080p graph over 1, 2, 4 GPUs of this process, or over the ranks under mpirun:
/// farm, pipeline and automatic mappings; table "scaling" (or "scaling_ranks") and target
/// fused_4gpu_speedup (or fused_4rank_speedup) ≥ 3.6, merged into the existing results file.
/// Returns false when there is nothing to measure (fewer than 2 GPUs / ranks).
bool run_scaling(bench::Result& result, const Environment& env, int frames);
/// Frames per second of the fused 720×576 graph on CPU places (checks the harness without a GPU).
void cpu_smoke();

}  // namespace weft::saliency_bench

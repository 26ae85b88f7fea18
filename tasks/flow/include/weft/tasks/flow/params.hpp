#pragma once
/// Parameters of the optical flow methods (Horn–Schunck, TV-L1, CLG) shared by CPU and GPU paths.
#include <string>
#include <string_view>

namespace weft::flow {

enum class Method { hs, tvl1, clg };
enum class Precision { fp32, fp16 };

/// Every knob of the three methods. Intensity-dependent weights (lambda, alpha) are given for
/// intensities normalised to [0, 255] (the IPOL convention); the solvers rescale them internally.
struct FlowParams {
  Method method = Method::tvl1;
  Precision precision = Precision::fp32;  ///< GPU only; the CPU float path ignores fp16
  int scales = 5;            ///< pyramid levels (fewer when the coarsest would be < 16 pixels)
  double zoom = 0.5;         ///< size ratio between consecutive levels, in (0, 1)
  double antialias = 0.0;    ///< Gaussian sigma before each zoom-out: antialias * sqrt(1/zoom^2 - 1) (IPOL 0.6)
  int warps = 5;             ///< linearisations (warps) per level
  int iterations = 300;      ///< most inner iterations per warp
  double epsilon = 0.01;     ///< stop a warp when the mean squared update < epsilon^2
  double presmooth = 0.0;    ///< Gaussian sigma applied to both frames before the pyramid
  double texture = 0.95;     ///< frames replaced by their texture part f - texture * ROF(f) (Wedel et al. 2009); 0: off (hs, clg) ...
  double texture_threshold = 0.18;  ///< ... only for pairs whose brightness_change (flow.hpp) exceeds this; 0: every pair
  int median = 5;            ///< median filter window (0/1: off) applied to the flow ...
  int median_interval = 30;  ///< ... at the start of each warp and every this many iterations
  double tau = 0.25;         ///< tvl1: dual time step
  double lambda = 0.15;      ///< tvl1: data attachment weight
  double theta = 0.3;        ///< tvl1: coupling between u and v
  double alpha = 12.0;       ///< hs, clg: smoothness weight
  double rho = 1.5;          ///< clg: Gaussian scale of the structure tensor
};

/// FlowParams with the defaults of `method` (tvl1 as IPOL/OpenCV plus the structure-texture
/// split for pairs whose brightness changes; hs and clg without it). The one place defaults live:
/// the command line, Python and the GPU path all start from it.
[[nodiscard]] FlowParams default_params(Method method);
/// "hs" | "tvl1" | "clg"; throws ConfigError naming `what` otherwise.
[[nodiscard]] Method parse_method(std::string_view text, std::string_view what = "--method");
/// "fp32" | "fp16"; throws ConfigError naming `what` otherwise.
[[nodiscard]] Precision parse_precision(std::string_view text, std::string_view what = "--precision");
[[nodiscard]] std::string_view method_name(Method m) noexcept;
[[nodiscard]] std::string_view precision_name(Precision p) noexcept;
/// Throws ConfigError when a parameter is out of its range (message names it and its value).
void validate(const FlowParams& params);

}  // namespace weft::flow

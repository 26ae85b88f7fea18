#include <cmath>
#include <string>

#include "weft/tasks/flow/params.hpp"
#include "weft/util/error.hpp"

namespace weft::flow {

FlowParams default_params(Method method) {
  FlowParams p;
  p.method = method;
  if (method == Method::tvl1) {
    // Chosen on the tune half of bench/flow's evaluation set (docs/flow.md): anti-aliasing the
    // pyramid (IPOL's 0.6) took small textures from 0.84 to 0.23 px mean EPE and large motion
    // from 0.67 to 0.44; pre-smoothing 0.5 took noise from 0.18 to 0.17. The texture split stays
    // for pairs whose brightness changes (texture_threshold, brightness.cpp).
    p.antialias = 0.6;
    p.presmooth = 0.5;
  } else {
    // Measured on RubberWhale/Hydrangea at these settings (tests/flow states the EPE bounds).
    p.iterations = 200;
    p.epsilon = 0.001;
    p.alpha = method == Method::hs ? 12.0 : 10.0;
    p.texture = 0.0;
  }
  return p;
}

Method parse_method(std::string_view text, std::string_view what) {
  if (text == "hs") return Method::hs;
  if (text == "tvl1") return Method::tvl1;
  if (text == "clg") return Method::clg;
  throw ConfigError(std::string(what) + ": unknown method '" + std::string(text) + "' (expected hs, tvl1 or clg)");
}

Precision parse_precision(std::string_view text, std::string_view what) {
  if (text == "fp32") return Precision::fp32;
  if (text == "fp16") return Precision::fp16;
  throw ConfigError(std::string(what) + ": unknown precision '" + std::string(text) + "' (expected fp32 or fp16)");
}

std::string_view method_name(Method m) noexcept {
  switch (m) {
    case Method::hs: return "hs";
    case Method::tvl1: return "tvl1";
    case Method::clg: return "clg";
  }
  return "?";
}

std::string_view precision_name(Precision p) noexcept { return p == Precision::fp16 ? "fp16" : "fp32"; }

namespace {
void require(bool ok, const char* name, double value, const char* range) {
  if (!ok) throw ConfigError(std::string("flow parameter --") + name + " = " + std::to_string(value) + ": must be " + range);
}
}  // namespace

void validate(const FlowParams& p) {
  require(p.scales >= 1 && p.scales <= 20, "scales", p.scales, "in [1, 20]");
  require(p.zoom > 0 && p.zoom < 1, "zoom", p.zoom, "in (0, 1)");
  require(p.antialias >= 0 && p.antialias <= 2, "antialias", p.antialias, "in [0, 2]");
  require(p.warps >= 1, "warps", p.warps, ">= 1");
  require(p.iterations >= 1, "iterations", p.iterations, ">= 1");
  require(p.epsilon >= 0 && std::isfinite(p.epsilon), "epsilon", p.epsilon, ">= 0");
  require(p.presmooth >= 0 && p.presmooth <= 5, "presmooth", p.presmooth, "in [0, 5]");
  require(p.texture >= 0 && p.texture <= 1, "texture", p.texture, "in [0, 1]");
  require(p.texture_threshold >= 0 && std::isfinite(p.texture_threshold), "texture-threshold", p.texture_threshold, ">= 0");
  require(p.median == 0 || p.median == 1 || p.median == 3 || p.median == 5, "median", p.median, "0, 1, 3 or 5");
  require(p.median_interval >= 1, "median-interval", p.median_interval, ">= 1");
  require(p.tau > 0 && p.tau <= 0.25, "tau", p.tau, "in (0, 0.25] (stability)");
  require(p.lambda > 0, "lambda", p.lambda, "> 0");
  require(p.theta > 0, "theta", p.theta, "> 0");
  require(p.alpha > 0, "alpha", p.alpha, "> 0");
  require(p.rho >= 0 && p.rho <= 5, "rho", p.rho, "in [0, 5]");
}

}  // namespace weft::flow

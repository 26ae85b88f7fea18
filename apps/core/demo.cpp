// weft demo: the demo graph source → affine → affine → check, on CPUs or GPUs. The sink checks
// every element of every token against what the two affine steps must give (CPU and GPU agree
// bit for bit: both use one fused multiply-add), and that every token arrived once, in order.
#include <cmath>
#include <cstdio>
#include <limits>

#include "common/cli.hpp"
#include "common/job_check.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/tasks/demo/demo.hpp"
#include "weft/util/error.hpp"

namespace weft::cli {
namespace {

constexpr float kScaleA = 2.0f, kScaleB = 1.0f, kShiftA = 0.5f, kShiftB = -0.5f;

/// The demo's sink: a wrong value, a token out of order or a missing token is an internal fault.
class CheckTokens final : public Task {
 public:
  CheckTokens(std::string name, std::uint64_t tokens, std::int64_t length)
      : Task(std::move(name)), tokens_(tokens), length_(length) {}
  In<Array> in = input<Array>("in", DType::f32);

  void run(Context& ctx) override {
    const Array a = ctx.take(in);
    const std::uint64_t k = ctx.index();
    if (k != seen_)
      throw Error("demo: token " + std::to_string(k) + " arrived where token " + std::to_string(seen_) +
                  " was expected");
    if (a.size() != length_)
      throw Error("demo: token " + std::to_string(k) + " has " + std::to_string(a.size()) + " elements, expected " +
                  std::to_string(length_));
    const float* p = a.data<float>();
    for (std::int64_t i = 0; i < length_; ++i) {
      const float x = tasks::ArraySource::value(k, i, length_);
      const float want = std::fma(kShiftA, std::fma(kScaleA, x, kScaleB), kShiftB);
      if (p[i] != want)
        throw Error("demo: token " + std::to_string(k) + " element " + std::to_string(i) + " is " +
                    std::to_string(p[i]) + ", expected " + std::to_string(want));
    }
    ++seen_;
  }
  void stop(Context&) override {
    if (seen_ != tokens_)
      throw Error("demo: " + std::to_string(seen_) + " of " + std::to_string(tokens_) + " tokens arrived");
  }

 private:
  std::uint64_t tokens_;
  std::int64_t length_;
  std::uint64_t seen_ = 0;
};

Graph demo_graph(std::uint64_t tokens, std::int64_t length) {
  Graph g;
  auto& src = g.add<tasks::ArraySource>("source", tokens, length);
  auto& scale = g.add<tasks::Affine>("scale", kScaleA, kScaleB);
  auto& shift = g.add<tasks::Affine>("shift", kShiftA, kShiftB);
  auto& sink = g.add<CheckTokens>("sink", tokens, length);
  g.connect(src.out, scale.in);
  g.connect(scale.out, shift.in);
  g.connect(shift.out, sink.in);
  return g;
}

int demo_main(int argc, char** argv) {
  CommonOptions common;
  std::int64_t tokens = 0;
  std::int64_t length = 0;
  po::options_description desc("Demo options");
  desc.add_options()("tokens", po::value(&tokens)->default_value(1000), "number of tokens (0 or more)")
      ("length", po::value(&length)->default_value(1 << 16), "floats per token (1 to 2^28)");
  add_common_options(desc, common);
  po::variables_map vm;
  if (!parse(argc, argv, desc, vm,
             "usage: weft demo [--tokens N] [--length L] [--devices cpu|gpu|all] [--mapping FILE]\n"
             "Runs source -> scale -> shift -> sink; the sink checks every element of every token and\n"
             "that every token arrived once, in order (a wrong value stops the run with exit code 1)."))
    return 0;
  check_job(argc, argv, common, [&] {
    if (tokens < 0) throw ConfigError("--tokens: expected a count >= 0, got " + std::to_string(tokens));
    if (length < 1 || length > (std::int64_t{1} << 28))
      throw ConfigError("--length: expected 1 to 268435456 floats, got " + std::to_string(length));
    return JobFields{};
  });
  Graph g = demo_graph(static_cast<std::uint64_t>(tokens), length);
  RunStats stats = run_graph(g, common);
  const Environment* env = Environment::current();
  if (!env || env->rank() == 0) {
    std::printf("demo: %lld tokens of %lld floats checked in %.3f s\n", static_cast<long long>(tokens),
                static_cast<long long>(length), stats.seconds);
    for (const auto& t : stats.tasks)
      std::printf("  %-8s on %-14s %8llu tokens  busy %.3f s\n", t.task.c_str(), t.place.str().c_str(),
                  static_cast<unsigned long long>(t.tokens), t.busy_seconds);
  }
  return 0;
}

const Registrar reg{{"demo", "run the demo graph (source -> scale -> shift -> sink), checking every token", &demo_main}};
const GraphRegistrar graph{{"demo", [] { return demo_graph(1, 1); }}};

}  // namespace
}  // namespace weft::cli

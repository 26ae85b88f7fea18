// The StarPU peer, as Task Bench's own StarPU implementation does it: one data handle (a 16-byte
// variable) per (step, point), every task submitted with starpu_task_insert, reading its
// dependencies' handles (STARPU_R) and writing its own (STARPU_W), so that StarPU's sequential
// data consistency infers the graph. All tasks are submitted, then starpu_task_wait_for_all.
//
// Workers: `width` CPU workers, no CUDA/OpenCL/MIC/MPI-MS workers. Scheduler: eager by default (one
// central queue). The workers are identical CPUs and the tasks have no performance model, so the
// model-based schedulers (dmda, ...) would only add their calibration runs and prediction cost;
// eager is also what StarPU itself picks without models. STARPU_SCHED in the environment, or
// --starpu-sched, picks another (lws, ws, prio, ...). The workers are paused (starpu_pause) outside
// the peer's runs and resumed before the clock starts. Handles are registered before the clock
// starts and unregistered after it stops, as Task Bench does.
#include <starpu.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "pattern.hpp"

namespace taskbench {
namespace {

struct Args {
  int t, i;
  double work_us;
};

bool started = false;
std::string description = "StarPU not started";

// Buffers: the inputs (deps order), then the task's own output last.
void body(void* buffers[], void* cl_arg) {
  const Args* a = static_cast<const Args*>(cl_arg);
  const unsigned n = STARPU_TASK_GET_NBUFFERS(starpu_task_get_current());
  std::uint64_t in[64];  // deps never exceed the width, and --width is capped at 64
  for (unsigned k = 0; k + 1 < n; ++k) {
    const auto* p = reinterpret_cast<const Payload*>(STARPU_VARIABLE_GET_PTR(buffers[k]));
    if (p->step != static_cast<std::uint64_t>(a->t - 1)) std::abort();  // a missed dependency
    in[k] = p->value;
  }
  busy(a->work_us);
  auto* out = reinterpret_cast<Payload*>(STARPU_VARIABLE_GET_PTR(buffers[n - 1]));
  *out = {mix(a->t, a->i, in, n - 1), static_cast<std::uint64_t>(a->t)};
}

starpu_codelet make_codelet() {
  starpu_codelet cl;
  starpu_codelet_init(&cl);
  cl.cpu_funcs[0] = body;
  cl.cpu_funcs_name[0] = "taskbench_body";
  cl.nbuffers = STARPU_VARIABLE_NBUFFERS;
  cl.name = "taskbench";
  return cl;
}
starpu_codelet codelet = make_codelet();

void set_default(const char* var, const char* value) { setenv(var, value, 0); }

}  // namespace

bool starpu_start(int width, const std::string& scheduler) {
  // Before starpu_init: the environment wins over starpu_conf, so it is set here unless the user
  // already set it.
  const std::string ncpu = std::to_string(width);
  set_default("STARPU_NCPU", ncpu.c_str());
  set_default("STARPU_NCUDA", "0");
  set_default("STARPU_NOPENCL", "0");
  set_default("STARPU_NMIC", "0");
  set_default("STARPU_NMPI_MS", "0");
  set_default("STARPU_CALIBRATE", "0");
  set_default("STARPU_SILENT", "1");
  set_default("STARPU_SCHED", scheduler.c_str());
  starpu_conf conf;
  starpu_conf_init(&conf);
  conf.ncpus = width;
  conf.ncuda = 0;
  conf.nopencl = 0;
  if (starpu_init(&conf) != 0) {
    description = "StarPU found but starpu_init failed";
    return false;
  }
  // Idle StarPU workers poll for tasks in a tight loop: paused between runs, they leave the cores
  // to the other peers (unpaused, they took 93 % of both cores while Weft and the threads ran).
  starpu_pause();
  started = true;
  int major = 0, minor = 0, release = 0;
  starpu_get_version(&major, &minor, &release);
  description = "StarPU " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(release) + ", " +
                std::getenv("STARPU_SCHED") + " scheduler, " + std::to_string(starpu_cpu_worker_get_count()) +
                " CPU workers";
  return true;
}

void starpu_stop() {
  if (started) {
    starpu_resume();
    starpu_shutdown();
  }
  started = false;
}

std::string starpu_description() { return description; }

Run run_starpu(const Graph& g) {
  if (!started) throw std::runtime_error("StarPU is not started");
  std::vector<Payload> data(static_cast<std::size_t>(g.steps) * g.width);
  std::vector<starpu_data_handle_t> h(data.size());
  for (std::size_t k = 0; k < data.size(); ++k)
    starpu_variable_data_register(&h[k], STARPU_MAIN_RAM, reinterpret_cast<uintptr_t>(&data[k]), sizeof(Payload));
  std::vector<Args> args(data.size());
  std::vector<starpu_data_descr> descr;
  starpu_resume();
  const auto t0 = std::chrono::steady_clock::now();
  for (int t = 0; t < g.steps; ++t) {
    for (int i = 0; i < g.width_at(t); ++i) {
      descr.clear();
      for (int j : g.deps(t, i)) descr.push_back({h[static_cast<std::size_t>(t - 1) * g.width + j], STARPU_R});
      descr.push_back({h[static_cast<std::size_t>(t) * g.width + i], STARPU_W});
      Args& a = args[static_cast<std::size_t>(t) * g.width + i];
      a = {t, i, g.work_us};
      // STARPU_CL_ARGS hands the pointer over without a copy (STARPU_VALUE would pack it).
      const int rc = starpu_task_insert(&codelet, STARPU_DATA_MODE_ARRAY, descr.data(), static_cast<int>(descr.size()),
                                        STARPU_CL_ARGS_NFREE, &a, sizeof(Args), 0);
      if (rc != 0) throw std::runtime_error("starpu_task_insert failed: " + std::to_string(rc));
    }
  }
  starpu_task_wait_for_all();
  Run r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  starpu_pause();
  for (auto& handle : h) starpu_data_unregister(handle);
  for (int t = 0; t < g.steps; ++t)
    for (int i = 0; i < g.width_at(t); ++i) r.checksum += data[static_cast<std::size_t>(t) * g.width + i].value;
  return r;
}

}  // namespace taskbench

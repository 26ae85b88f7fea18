#pragma once
// Other processes' share of the machine's CPU time, from /proc: the development machine's two
// cores are shared (builds, test suites), and a neighbour that wakes up in the middle of a
// measurement lowers every peer's efficiency at once (all three fell to 0.3-0.5 at d = 50-100 µs
// in one run). taskbench redoes a repetition that ran beside foreign work, after waiting for quiet.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>

namespace taskbench {

class CpuShare {
 public:
  CpuShare() : at_(sample()) {}
  /// CPU time of other processes (and of the hypervisor: steal) since construction or the last
  /// call, as a share of every core's time.
  double foreign() {
    const Sample now = sample();
    const double all = static_cast<double>(now.total - at_.total);
    const double foreign = static_cast<double>((now.busy - at_.busy) - (now.self - at_.self));
    at_ = now;
    return all > 0 ? std::max(0.0, foreign / all) : 0.0;
  }
  /// Waits (at most `max_seconds`) until a quarter-second window where other processes used under
  /// 2 % of the machine; returns whether it came.
  static bool wait_quiet(double max_seconds) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(max_seconds);
    CpuShare share;
    while (std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(250));
      if (share.foreign() < 0.02) return true;
    }
    return false;
  }

 private:
  struct Sample {
    long long total = 0, busy = 0, self = 0;  // clock ticks
  };
  static Sample sample() {
    Sample s;
    if (FILE* f = std::fopen("/proc/stat", "r")) {
      long long user, nice, system, idle, iowait, irq, softirq, steal;
      if (std::fscanf(f, "cpu %lld %lld %lld %lld %lld %lld %lld %lld", &user, &nice, &system, &idle, &iowait, &irq,
                      &softirq, &steal) == 8) {
        s.busy = user + nice + system + irq + softirq + steal;
        s.total = s.busy + idle + iowait;
      }
      std::fclose(f);
    }
    if (FILE* f = std::fopen("/proc/self/stat", "r")) {
      // Fields 14 and 15 (utime, stime) follow the command name in parentheses, which may hold spaces.
      char buf[1024];
      const std::size_t n = std::fread(buf, 1, sizeof buf - 1, f);
      buf[n] = 0;
      const char* p = buf;
      for (const char* q = buf; *q; ++q)
        if (*q == ')') p = q + 1;
      long long utime = 0, stime = 0;
      if (std::sscanf(p, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lld %lld", &utime, &stime) == 2)
        s.self = utime + stime;
      std::fclose(f);
    }
    return s;
  }
  Sample at_;
};

}  // namespace taskbench

// Environment's collective checks: the ranks agree on their inputs and errors, or all stop.
#include "cluster/agreement.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "cluster/liveness.hpp"
#include "cluster/mpi_check.hpp"
#include "weft/cluster/environment.hpp"
#include "weft/util/error.hpp"

namespace weft {
namespace detail {

MPI_Comm agreement_comm() {
  static const MPI_Comm comm = duplicate_world();
  return comm;
}

namespace {

/// Every rank's string, on every rank.
std::vector<std::string> all_gather(const std::string& mine, int size) {
  const MPI_Comm comm = agreement_comm();
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(static_cast<std::size_t>(size)), offsets(static_cast<std::size_t>(size));
  mpi_check(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm), "MPI_Allgather");
  int total = 0;
  for (int i = 0; i < size; ++i) offsets[static_cast<std::size_t>(i)] = total, total += lens[static_cast<std::size_t>(i)];
  std::string all(static_cast<std::size_t>(total), '\0');
  mpi_check(MPI_Allgatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, comm),
            "MPI_Allgatherv");
  std::vector<std::string> out;
  for (int i = 0; i < size; ++i)
    out.push_back(all.substr(static_cast<std::size_t>(offsets[static_cast<std::size_t>(i)]),
                             static_cast<std::size_t>(lens[static_cast<std::size_t>(i)])));
  return out;
}

}  // namespace
}  // namespace detail

void Environment::check_everywhere(const std::function<void()>& check) const {
  std::exception_ptr error;
  try {
    check();
  } catch (...) {
    error = std::current_exception();
  }
  if (!mpi_ || size_ == 1) {
    if (error) std::rethrow_exception(error);
    return;
  }
  const std::vector<std::string> all = detail::all_gather(error ? encode_failure(error) : std::string(), size_);
  if (error) std::rethrow_exception(error);  // this rank's own error, as it was
  for (int r = 0; r < size_; ++r) {
    if (all[static_cast<std::size_t>(r)].empty()) continue;
    const DecodedFailure failure = decode_failure(all[static_cast<std::size_t>(r)]);
    throw RemoteError("rank " + std::to_string(r) + ": " + failure.message, failure.exit_code);
  }
}

void Environment::agree_on(const std::vector<std::pair<std::string, std::string>>& fields) const {
  if (!mpi_ || size_ == 1) return;
  // Compared field by field, so the message can say which field differs on which ranks.
  std::string mine;
  for (const auto& [name, value] : fields) mine += name + '\x1f' + value + '\x1e';
  const std::vector<std::string> all = detail::all_gather(mine, size_);
  const auto split = [](const std::string& text) {
    std::vector<std::pair<std::string, std::string>> out;
    std::size_t at = 0;
    while (at < text.size()) {
      const std::size_t unit = text.find('\x1f', at), end = text.find('\x1e', at);
      if (unit == std::string::npos || end == std::string::npos || unit > end) break;
      out.emplace_back(text.substr(at, unit - at), text.substr(unit + 1, end - unit - 1));
      at = end + 1;
    }
    return out;
  };
  const auto reference = split(all[0]);
  for (int r = 1; r < size_; ++r) {
    if (all[static_cast<std::size_t>(r)] == all[0]) continue;
    const auto theirs = split(all[static_cast<std::size_t>(r)]);
    std::string what = "the ranks were given different jobs";
    for (std::size_t i = 0; i < std::max(reference.size(), theirs.size()); ++i) {
      const std::string name = i < reference.size() ? reference[i].first : theirs[i].first;
      const std::string a = i < reference.size() ? reference[i].second : "(none)";
      const std::string b = i < theirs.size() ? theirs[i].second : "(none)";
      if (a == b && i < reference.size() && i < theirs.size() && reference[i].first == theirs[i].first) continue;
      what = "the ranks disagree on " + name + ": rank 0 has '" + a + "', rank " + std::to_string(r) + " has '" + b + "'";
      break;
    }
    throw ConfigError(what + "; every rank must run the same job");
  }
}

void Environment::exit_after_error(int code) {
  if (mpi_ && size_ > 1) {
    // Every rank that met the error comes here; when all do within a few seconds, MPI ends
    // cleanly. A rank still at work (the error was this rank's alone) is ended by MPI_Abort.
    MPI_Request barrier = MPI_REQUEST_NULL;
    int done = 0;
    if (MPI_Ibarrier(detail::agreement_comm(), &barrier) == MPI_SUCCESS) {
      const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(3);
      while (!done && std::chrono::steady_clock::now() < until) {
        MPI_Test(&barrier, &done, MPI_STATUS_IGNORE);
        if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
    if (!done) abort_all(code);
    watch_.reset();
    if (owns_mpi_) MPI_Finalize();
    std::exit(code);
  }
  std::exit(code);
}

}  // namespace weft

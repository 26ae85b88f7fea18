#pragma once
/// Places: where a task runs. `cpu` or `gpu:K`, on rank R ("rank:1/gpu:0"). `cpu:K` names another
/// group of CPU threads of the same rank (same memory), e.g. to move a task between thread groups.
#include <compare>
#include <string>
#include <string_view>

namespace weft {

struct Place {
  enum Kind : unsigned char { cpu, gpu } kind = cpu;
  int device = 0;  ///< GPU index on its rank; for cpu, the thread group (0 unless `cpu:K`)
  int rank = 0;

  [[nodiscard]] static Place host(int rank = 0) { return {cpu, 0, rank}; }
  [[nodiscard]] static Place cuda(int device, int rank = 0) { return {gpu, device, rank}; }
  [[nodiscard]] bool is_gpu() const noexcept { return kind == gpu; }
  /// "cpu", "cpu:1", "gpu:0", "rank:1/cpu", "rank:1/gpu:0" (rank 0 is written without prefix).
  [[nodiscard]] std::string str() const;
  /// Parses the forms above; `rank:R/` may be omitted (rank `default_rank`). Throws ConfigError.
  [[nodiscard]] static Place parse(std::string_view text, int default_rank = 0);
  friend auto operator<=>(const Place&, const Place&) = default;
};

}  // namespace weft

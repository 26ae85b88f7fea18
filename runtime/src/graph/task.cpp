#include "weft/graph/task.hpp"

#include "weft/util/error.hpp"

namespace weft {

const char* value_kind_name(int index) noexcept {
  switch (index) {
    case 0: return "nothing";
    case 1: return "array";
    case 2: return "int64";
    case 3: return "double";
    case 4: return "string";
    case 5: return "vector<double>";
    case 6: return "vector<int64>";
  }
  return "?";
}

Task::Task(std::string name) : name_(std::move(name)) {
  if (name_.empty()) throw ConfigError("a task needs a non-empty name");
}

Task::~Task() = default;

void Task::run_cuda(Context&) { throw Error("task '" + name_ + "' has no CUDA implementation"); }

void Context::throw_kind_mismatch(int port, int asked) const {
  const auto& spec = task().inputs().at(port);
  throw Error("task '" + task().name() + "' took input '" + spec.name + "' as " +
              value_kind_name(asked) + " but it holds " + value_kind_name(spec.kind));
}

}  // namespace weft

#include "weft/util/error.hpp"

#include <filesystem>

namespace weft {

Error::Error(const std::string& message, std::source_location where)
    : std::runtime_error(message), where_(where) {}

void Error::set_context(std::string task, std::string place) {
  task_ = std::move(task);
  place_ = std::move(place);
}

std::string Error::describe() const {
  std::string text = what();
  if (!task_.empty()) text += " [task " + task_ + (place_.empty() ? "" : " on " + place_) + "]";
  text += " (" + std::filesystem::path(where_.file_name()).filename().string() + ":" +
          std::to_string(where_.line()) + ")";
  return text;
}

}  // namespace weft

#include "weft/util/error.hpp"

#include <filesystem>

namespace weft {

Error::Error(const std::string& message, SourceLocation where)
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

std::string encode_failure(std::exception_ptr error) {
  int code = 1;
  std::string text = "unknown error";
  try {
    std::rethrow_exception(error);
  } catch (const Error& e) {
    code = e.exit_code();
    text = e.user_message();
  } catch (const std::exception& e) {
    text = e.what();
  } catch (...) {
  }
  return std::to_string(code) + ":" + text;
}

DecodedFailure decode_failure(const std::string& text) {
  if (text.size() >= 2 && text[1] == ':' && (text[0] == '1' || text[0] == '2'))
    return {text[0] - '0', text.substr(2)};
  return {1, text};
}

}  // namespace weft

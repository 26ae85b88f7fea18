// Control-file commands (runtime/src/exec/control_file.cpp): lines as `weft ctl` or anyone who can
// write the file appends them, read by the job (length limit, partial lines) and parsed; and the
// escaping used to log them, which must leave only printable ASCII.
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "exec/control_file.hpp"
#include "fuzz_common.hpp"
#include "weft/exec/control.hpp"
#include "weft/util/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto file = weft::detail::ControlFile::open(weft::fuzz::scratch() + "/job.ctl");
  const int fd = ::open(file->path().c_str(), O_WRONLY | O_TRUNC);  // each input alone in the file
  file->skip_to_end();
  if (fd < 0) std::abort();
  if (size && ::write(fd, data, size) != static_cast<ssize_t>(size)) std::abort();
  ::close(fd);
  int dropped = 0;
  for (const std::string& line : file->new_lines(dropped)) {
    if (line.size() > weft::kMaxControlCommand) std::abort();  // the reader's own limit
    const std::string logged = weft::escaped(line);
    for (unsigned char c : logged)
      if (c < 0x20 || c > 0x7e) std::abort();
    try {
      (void)weft::detail::parse_control_command(line);
    } catch (const weft::Error&) {
    }
  }
  return 0;
}

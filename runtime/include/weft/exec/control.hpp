#pragma once
/// The control file: how `weft ctl` commands a running job (live migration). It is a way to
/// command the job, so it is treated as one (docs/reliability.md, the trust model):
/// - a name without '/' (`--ctl myjob`) lives in the user's private folder, $XDG_RUNTIME_DIR/weft
///   or /tmp/weft-UID, which must be a folder of this user's, mode 0700, not a symlink;
/// - the job creates the file itself, exclusively (mode 0600), never through a symlink, and refuses
///   a file it did not create: it never truncates or obeys someone else's file. A file left by a
///   job of this user on this host that no longer runs is taken over;
/// - `weft ctl` appends only to a regular file of this user's that nobody else may write;
/// - a command is one line of at most kMaxControlCommand printable characters.
#include <cstddef>
#include <string>

namespace weft {

inline constexpr std::size_t kMaxControlCommand = 256;

/// The user's private folder for control files, made (0700) if missing; ConfigError when it exists
/// but is not a folder of this user's that only this user may enter.
[[nodiscard]] std::string private_control_folder();

/// The path of the control file `name`: `name` itself if it holds a '/', else
/// private_control_folder()/name.ctl. Throws ConfigError for an empty or unsafe name.
[[nodiscard]] std::string control_file_path(const std::string& name);

/// Appends `command` (one line, checked) to the control file `name` of a running job. Throws
/// ConfigError naming the file when it is missing (no job follows it), a symlink, not a regular
/// file, not this user's, or writable by others.
void send_control_command(const std::string& name, const std::string& command);

/// Creates this process's control file `name` now, as the first run that follows it would: a
/// refused path then stops the program before any work (ConfigError). Kept until the process ends.
void claim_control_file(const std::string& name);

/// `text` with every byte outside printable ASCII written as \xNN: how commands are logged.
[[nodiscard]] std::string escaped(const std::string& text);

}  // namespace weft

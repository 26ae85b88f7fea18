#pragma once
/// Outputs that appear whole or not at all. A run writes its files into a private folder beside
/// their destination (created exclusively, mode 0700, never through a symlink) and moves them into
/// place only when every one is complete; a run that fails, or is stopped by SIGINT or SIGTERM,
/// removes that folder and leaves any earlier result as it was.
///
///   weft::check_output(dir, weft::OutputKind::folder, "--output");   // before any heavy work
///   weft::OutputStage stage(dir, weft::OutputKind::folder, "--output");
///   write_csv(stage.path("curve.csv"));  write_h5(stage.path("granulometry.h5"));
///   stage.commit();                                                  // both appear together
#include <string>
#include <vector>

namespace weft {

enum class OutputKind {
  file,    ///< the destination is one file
  folder,  ///< the destination is a folder that receives the run's files (created if missing)
};

/// Throws ConfigError naming `option` and the path unless `destination` can receive the output:
/// it is of the right kind or does not exist yet, its nearest existing ancestor is a folder this
/// process may write, and a file destination is not a folder. Creates nothing.
void check_output(const std::string& destination, OutputKind kind, const std::string& option);

/// A run's output being written. The private folder is made by the constructor (IoError naming
/// `option` when it cannot be); commit() renames its files into the destination; the destructor
/// of an uncommitted stage removes the folder and everything in it.
class OutputStage {
 public:
  OutputStage(std::string destination, OutputKind kind, std::string option);
  ~OutputStage();
  OutputStage(const OutputStage&) = delete;
  OutputStage& operator=(const OutputStage&) = delete;

  /// Where to write `name` (a folder output's file), or the file itself (`name` empty, file outputs).
  [[nodiscard]] std::string path(const std::string& name = "") const;
  /// Moves the files into place: a folder output's files one by one (each rename is atomic and
  /// overwrites the previous run's file of that name, nothing else), a file output in one rename.
  void commit();
  [[nodiscard]] const std::string& destination() const noexcept { return destination_; }

 private:
  std::string destination_;
  OutputKind kind_;
  std::string option_;
  std::string stage_;  ///< the private folder; empty once committed
};

/// Removes the staging folders that runs on this host left beside `destination` when they were
/// killed (SIGKILL, a crash): those of processes that no longer exist, owned by this user.
void remove_stale_stages(const std::string& destination);

/// Every stage still open in this process is removed, then the process exits by the signal, when
/// SIGINT, SIGTERM or SIGHUP arrives. Call first in main(), before any thread starts: it blocks
/// those signals in every thread and waits for them on a thread of its own.
void remove_stages_on_signals();

}  // namespace weft

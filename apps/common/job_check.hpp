#pragma once
/// Validate first, compute second: what every subcommand does before its first heavy step.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "common/cli.hpp"

namespace weft::cli {

/// Named facts about a job as one rank sees it ("input", "u8 512x512x512, 134217728 bytes, ...").
using JobFields = std::vector<std::pair<std::string, std::string>>;

/// Runs `check` on every rank: it validates the options, reads the inputs' headers (never their
/// data) and checks the outputs, and returns what it learnt of the inputs. check_common() runs
/// with it. When it throws on any rank, every rank stops with that rank's message. Then the ranks
/// compare the job: the command line, the contents of --config and --mapping, and the fields
/// `check` returned; a difference stops every rank with a message naming it.
void check_job(int argc, char** argv, const CommonOptions& common, const std::function<JobFields()>& check);

/// "N bytes, sample HASH": the file's size and a hash of 16 pieces of 4 KiB spread over it, so
/// that two ranks reading different files of the same size tell them apart without reading them.
[[nodiscard]] std::string file_fingerprint(const std::string& path);

/// a * b * c ... for sizes read from a header or an option, or ConfigError(`what` "too large")
/// when the product does not fit in 63 bits.
[[nodiscard]] std::int64_t checked_product(const std::vector<std::int64_t>& factors, const std::string& what);

/// "ZxYxX" (`count` extents, each at least 1, their product and its bytes within 63 bits), or
/// ConfigError naming `option` and the text.
[[nodiscard]] std::vector<std::int64_t> parse_extents(const std::string& text, const std::string& option, int count);

/// A RAW input file: it must be a regular file of exactly product(extents) × element_size bytes;
/// ConfigError naming the file and `layout` (the options that gave the extents) otherwise.
void check_raw_file(const std::string& path, const std::vector<std::int64_t>& extents, std::size_t element_size,
                    const std::string& layout);

/// ConfigError naming `what` when `bytes` of host memory exceed what this machine has.
void check_host_memory(double bytes, const std::string& what);
/// ConfigError naming `what` when `bytes` exceed the memory of the smallest GPU of the job (no
/// check when the job has no GPU).
void check_gpu_memory(double bytes, const std::string& what);

}  // namespace weft::cli

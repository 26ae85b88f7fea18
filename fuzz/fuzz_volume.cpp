// Volume headers: a RAW file's --shape and --dtype against its size (apps/common/job_check.cpp),
// and the chunks of a gzip-compressed HDF5 dataset read without the library (tasks/io: the chunk
// index and the inflate and unshuffle of each chunk). The input's first line is the --shape text,
// the rest the RAW file's bytes and, over the first chunk of a valid HDF5 file, its stored bytes:
// the file's metadata stays valid, so what is fuzzed is Weft's own reading, not libhdf5's.
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include "common/job_check.hpp"
#include "fuzz_common.hpp"
#include "weft/tasks/io/hdf5.hpp"
#include "weft/util/error.hpp"

namespace {

struct Sample {
  std::string file;
  std::string bytes;  // the whole file, written afresh for each input
  std::int64_t offset = 0, stored = 0;
};

// A 16^3 u16 dataset in chunks of 8^3, shuffled and deflated, written once.
const Sample& sample() {
  static const Sample s = [] {
    Sample out;
    out.file = weft::fuzz::scratch() + "/sample.h5";
    weft::Array v = weft::Array::host(weft::DType::u16, weft::Shape(16, 16, 16));
    for (std::int64_t i = 0; i < v.size(); ++i) v.data<std::uint16_t>()[i] = static_cast<std::uint16_t>(i * 7 % 1000);
    weft::io::H5Writer w(out.file);
    w.write("/v", v, {8, 8, 8}, true);
    w.commit();
    const auto chunks = weft::io::raw_chunks({out.file, "/v"}, 0, 16);
    if (!chunks) std::abort();
    out.offset = chunks->offsets[0];
    out.stored = chunks->sizes[0];
    std::ifstream in(out.file, std::ios::binary);
    out.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (out.bytes.size() < static_cast<std::size_t>(out.offset + out.stored)) std::abort();
    return out;
  }();
  return s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::size_t nl = bytes.find('\n');
  const std::string shape = bytes.substr(0, nl == std::string::npos ? bytes.size() : nl);
  const std::string body = nl == std::string::npos ? std::string() : bytes.substr(nl + 1);
  const std::string raw = weft::fuzz::write_input("volume.raw", reinterpret_cast<const std::uint8_t*>(body.data()),
                                                  body.size());
  try {
    const auto dims = weft::cli::parse_extents(shape, "--shape", 3);
    weft::cli::check_raw_file(raw, dims, 2, "--shape " + shape + " --dtype u16");
  } catch (const weft::Error&) {
  }
  // The first chunk's stored bytes replaced by the body (cut or padded with zeros to its size).
  const Sample& s = sample();
  const std::string file = weft::fuzz::scratch() + "/fuzzed.h5";
  {
    // Written with stdio rather than std::filesystem::copy_file, whose sendfile call fails with
    // EINTR when libFuzzer's timer signal arrives (seen in CI); stdio retries.
    std::string copy = s.bytes;
    std::string chunk = body;
    chunk.resize(static_cast<std::size_t>(s.stored), '\0');
    copy.replace(static_cast<std::size_t>(s.offset), chunk.size(), chunk);
    std::FILE* f = std::fopen(file.c_str(), "wb");
    if (!f || std::fwrite(copy.data(), 1, copy.size(), f) != copy.size() || std::fclose(f) != 0) std::abort();
  }
  try {
    const weft::io::DatasetRef ref{file, "/v"};
    (void)weft::io::checked_dataset_info(ref, "--input");
    if (const auto chunks = weft::io::raw_chunks(ref, 0, 16)) {
      const weft::io::RawFile reader(file);
      std::string to(static_cast<std::size_t>(chunks->chunk_bytes()), '\0');
      for (std::size_t k = 0; k < chunks->offsets.size(); ++k) reader.read_chunk(*chunks, static_cast<std::int64_t>(k), to.data());
    }
  } catch (const weft::Error&) {
  }
  return 0;
}

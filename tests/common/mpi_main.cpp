#include "common/mpi_main.hpp"

#include <gtest/gtest.h>

#include <cstdio>

namespace weft::test {
Environment* env = nullptr;

namespace {
// Ranks other than 0 print only their failures (their whole output would interleave with rank
// 0's): an assertion that fails on another rank alone is otherwise seen only as an exit code.
class FailuresOnly : public ::testing::EmptyTestEventListener {
 public:
  explicit FailuresOnly(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (!r.failed()) return;
    std::fprintf(stderr, "[rank %d] failure in %s, %s:%d\n%s\n", rank_,
                 ::testing::UnitTest::GetInstance()->current_test_info()
                     ? ::testing::UnitTest::GetInstance()->current_test_info()->name()
                     : "(no test)",
                 r.file_name() ? r.file_name() : "?", r.line_number(), r.message());
  }

 private:
  int rank_;
};
}  // namespace
}  // namespace weft::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  weft::Environment environment(argc, argv);
  weft::test::env = &environment;
  if (environment.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new weft::test::FailuresOnly(environment.rank()));
  }
  return RUN_ALL_TESTS();
}

#include "common/mpi_main.hpp"

#include <gtest/gtest.h>

namespace weft::test {
Environment* env = nullptr;
}  // namespace weft::test

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  weft::Environment environment(argc, argv);
  weft::test::env = &environment;
  if (environment.rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  return RUN_ALL_TESTS();
}

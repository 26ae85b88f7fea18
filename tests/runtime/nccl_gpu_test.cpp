// NCCL start-up never hangs (labels gpu, mpi; internal API): a rank whose part of the collective
// initialisation fails makes every rank throw the same error, and a later initialisation works.
// Skips without NCCL or without a GPU on every rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>

#include "cluster/mpi_check.hpp"
#include "transport/nccl.hpp"
#include "weft/weft.hpp"
#include "common/mpi_main.hpp"

using namespace weft;
using weft::test::env;


#define SKIP_WITHOUT_NCCL_AND_GPUS()                                                      \
  do {                                                                                    \
    if (!detail::nccl_compiled()) GTEST_SKIP() << "built without NCCL";                  \
    for (const auto& r : env->cluster().ranks)                                            \
      if (r.gpus.empty()) GTEST_SKIP() << "rank " << r.rank << " has no GPU";             \
    if (env->size() < 2) GTEST_SKIP() << "needs two ranks";                               \
  } while (0)

TEST(NcclStart, FailureOnOneRankStopsEveryRankWithItsMessage) {
  SKIP_WITHOUT_NCCL_AND_GPUS();
  // The last rank asks for a GPU it does not have; the others join NCCL's bootstrap and would
  // wait there for it forever.
  const int last = env->size() - 1;
  const int device = env->rank() == last ? 1000 : 0;
  std::string message;
  try {
    detail::nccl_init(detail::run_communicator(), device);
  } catch (const NcclError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("NCCL initialisation failed on rank " + std::to_string(last)), std::string::npos) << message;
  EXPECT_NE(message.find("cudaSetDevice(1000)"), std::string::npos) << message;
  EXPECT_EQ(detail::nccl_device(), -1);
}

TEST(NcclStart, InitialisesAfterAFailureOrFailsOnEveryRankWhenGpusAreShared) {
  SKIP_WITHOUT_NCCL_AND_GPUS();
  // Each rank on a GPU of its own where there are enough; otherwise ranks share one, which NCCL
  // refuses (the runtime then uses MPI): every rank must say so, none may hang.
  const int gpus = static_cast<int>(env->cluster().ranks[static_cast<std::size_t>(env->rank())].gpus.size());
  const bool own = gpus >= env->size();
  const int device = own ? env->rank() : 0;
  std::string message;
  try {
    detail::nccl_init(detail::run_communicator(), device);
  } catch (const NcclError& e) {
    message = e.what();
  }
  int failed = message.empty() ? 0 : 1, failures = 0;
  MPI_Allreduce(&failed, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (own) {
    EXPECT_EQ(message, "");
    EXPECT_EQ(detail::nccl_device(), device);
  } else {
    EXPECT_EQ(failures, env->size()) << "every rank must fail alike: " << message;
    EXPECT_EQ(detail::nccl_device(), -1);
  }
}

#pragma once
// Every MPI tag and message channel of the runtime, in one place, so that no two kinds of message
// can meet on one tag.
//
// A run's messages share one communicator (cluster/mpi_check.hpp's run_communicator) and are told apart by tags:
// bits 18 and up carry the run's number modulo 2048 (every rank numbers its runs alike, since
// every rank runs the same graphs in the same order), the low 18 bits the kind of message.
// Below 16: one tag per kind of run-wide message. From 16: four tags per edge or channel
// (0 header, 1 payload, 2 credit of an edge; 3 a channel's bytes), so edges and channels number
// from 0 each, up to 65,531.
namespace weft::detail::tags {

constexpr int kRunShift = 18;
constexpr int kRuns = 2048;

constexpr int for_run(int run, int low) { return ((run % kRuns) << kRunShift) | low; }

constexpr int control(int run) { return for_run(run, 1); }      // stop and error texts between ranks
constexpr int trace(int run) { return for_run(run, 2); }        // clock offsets and trace text at the end
constexpr int message(int run) { return for_run(run, 3); }      // posted messages (header names the box)
constexpr int nccl_order(int run) { return for_run(run, 4); }   // order of NCCL transfers between two ranks

enum class EdgePart { header = 0, payload = 1, credit = 2 };
constexpr int edge(int run, int edge, EdgePart part) { return for_run(run, 16 + 4 * edge + static_cast<int>(part)); }
constexpr int channel(int run, int channel) { return for_run(run, 16 + 4 * channel + 3); }

// "NCCL initialisation failed here": above every run's tags.
constexpr int kNcclFailure = (kRuns << kRunShift) | 5;

// Channels (RemoteLinks::send/receive): a partition's halo exchanges number theirs from 0, two per
// pair of neighbouring slabs; migrated task state takes kFirstStateChannel + its group.
constexpr int kFirstStateChannel = 50000;
static_assert(16 + 4 * (kFirstStateChannel + 15000) + 3 < (1 << kRunShift), "channels fit below the run bits");

// Boxes of RemoteLinks::post (one tag, the box in the header): the load balancer's reports to rank 0.
constexpr int kReportBox = 0x7ffffff0;

// The liveness watchdog's own communicator: heartbeats to rank 0, and rank 0's stop with a reason.
constexpr int kBeat = 1;
constexpr int kStop = 2;

}  // namespace weft::detail::tags

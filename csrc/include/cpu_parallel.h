// When the CPU kernels fork OpenMP threads. A parallel region costs microseconds on an idle machine, but
// on a busy one (its cores taken by other processes) every region waits for a thread the OS has not
// scheduled yet: a 2 x 64 x 129 conv forward took 12 ms there on 2 threads against 15 us on one
// (docs/cpu.md, 2026-11-27). So a loop forks only from kParallelWork units of work on (multiply-adds,
// or elements for the copies), about where torch's own CPU kernels start to split theirs. Torch-free.
#pragma once

#include <cstdint>

namespace aiter_lite {

inline constexpr int64_t kParallelWork = int64_t{1} << 18;

inline bool worth_threads(int64_t work) { return work >= kParallelWork; }

}  // namespace aiter_lite

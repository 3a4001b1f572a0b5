// Integer environment variables for experiments (host code, CUDA and HIP units alike). Callers read one once per
// process (a function-local static), so a plan and the launch that follows it agree.
#pragma once

#include <cstdint>
#include <cstdlib>

namespace aiter_lite {

// `fallback` where `name` is unset or empty; its value where that is an integer in [lo, hi]; otherwise
// bad(value) is called, which throws (each caller words its own error).
template <typename Bad>
int64_t env_int(const char* name, int64_t lo, int64_t hi, int64_t fallback, Bad bad) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (*end != '\0' || n < lo || n > hi) bad(v);
  return static_cast<int64_t>(n);
}

}  // namespace aiter_lite

// A tiny pybind11-only module for the JIT's lock, cache and concurrency tests: compiles in seconds.
#include <pybind11/pybind11.h>

#include "tiny.h"

PYBIND11_MODULE(AITER_LITE_MODULE_NAME, m) {
  m.def("add", [](int a, int b) { return a + b + kTinyOffset; });
  m.attr("variant") = TINY_VARIANT;
}

// Deliberately broken: the JIT tests check that the first compiler error reaches BuildError.
#include <pybind11/pybind11.h>

PYBIND11_MODULE(AITER_LITE_MODULE_NAME, m) {
  int broken = ;
}

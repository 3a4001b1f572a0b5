#pragma once
#ifndef TINY_VARIANT
#define TINY_VARIANT 0
#endif
constexpr int kTinyOffset = 0;

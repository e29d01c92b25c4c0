#pragma once
// The headers most test files include, parsed once per suite program (meson's cpp_pch): a test
// file compiles in a half to two thirds of the time. Every test file still includes what it uses.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <boost/test/unit_test.hpp>
#include <gluon/loss.hpp>
#include <gluon/nn.hpp>
#include <gluon/trainer.hpp>
#include <ndarray/ndarray.hpp>

#pragma once
// The Boost.Test header every test file includes. test/support/main.cpp supplies main() (and, with
// the header-only variant, the framework itself).
#include <boost/test/unit_test.hpp>

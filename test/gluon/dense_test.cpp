#include "test/support/boost_test.hpp"

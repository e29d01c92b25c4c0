#pragma once
// Everything of mx::gluon::rnn: #include <gluon/rnn.hpp>.
#include "gluon/rnn/rnn_cell.hpp"

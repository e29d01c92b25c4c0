#pragma once
// Everything of mx::gluon::rnn (cells and layers): #include <gluon/rnn.hpp>.
#include "gluon/rnn/rnn_cell.hpp"
#include "gluon/rnn/rnn_layer.hpp"

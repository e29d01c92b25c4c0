#pragma once
// mx::gluon::contrib::estimator, as mx.gluon.contrib.estimator: #include <gluon/contrib/estimator.hpp>.
#include "gluon/contrib/estimator/estimator.hpp"
#include "gluon/contrib/estimator/event_handler.hpp"

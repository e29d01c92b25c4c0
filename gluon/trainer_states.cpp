// Trainer::save_states / load_states (Note [trainer states] in gluon/trainer.hpp): the Trainer's and
// its optimizer's state as named arrays in MXNet's NDArray file. The key layout is in
// docs/FILE_FORMATS.md ("Trainer states") and below (kVersionKey ...).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "context/error.hpp"
#include "context/file.hpp"
#include "gluon/amp.hpp"
#include "gluon/trainer.hpp"
#include "ndarray/core/describe.hpp"
#include "ndarray/io/ndarray_file.hpp"
#include "ndarray/ops/creation.hpp"

namespace mx::gluon {

namespace {

// The keys. Scalars are (1,) arrays, names uint8 arrays of their bytes; per parameter p (its place
// in the Trainer's dict) and copy c (its context's place in list_ctx()):
//   params.<p>.name                the parameter's name, for every parameter of the dict
//   params.<p>.<c>.state.<state>   optimizer state array `state` (of state_names()), when made
//   params.<p>.<c>.master          the float32 master copy (multi_precision), when made
//   params.<p>.<c>.count           the optimizer's update count (Adam's t)
//   params.<p>.<c>.num_update      the Trainer's update count of the copy
constexpr const char* kVersionKey = "trainer_states_version";
constexpr std::int64_t kVersion = 1;
constexpr const char* kOptimizerKey = "optimizer";
constexpr const char* kNumStatesKey = "num_states";
constexpr const char* kNumUpdateKey = "num_update";
constexpr const char* kLearningRateKey = "learning_rate";
constexpr const char* kSchedulerKey = "lr_scheduler";                   // its type()
constexpr const char* kSchedulerBaseLrKey = "lr_scheduler_base_lr";     // float64
constexpr const char* kSchedulerPositionKey = "lr_scheduler_position";  // int64
constexpr const char* kScalerKey = "loss_scaler";                       // float64: the scale
constexpr const char* kScalerCountsKey = "loss_scaler_counts";          // int64 (2,): unskipped, skipped
constexpr const char* kParamsPrefix = "params.";
constexpr const char* kScalarPrefix = "optimizer_scalar.";  // float64: Optimizer::scalars() by name
constexpr const char* kOp = "Trainer::load_states";

nd::NDArray int64_array(const std::vector<std::int64_t>& values) {
  return nd::array(values, {static_cast<std::int64_t>(values.size())}, cpu(), DType::int64);
}
nd::NDArray float64_array(double value) { return nd::array(std::vector<double>{value}, {1}, cpu(), DType::float64); }
nd::NDArray text_array(const std::string& text) {
  return nd::array(text.data(), DType::uint8, {static_cast<std::int64_t>(text.size())}, cpu(), DType::uint8);
}

// A parameter's index or a copy's: decimal digits without a leading zero (but "0"), below 2^31.
std::optional<std::size_t> parse_index(std::string_view text) {
  if (text.empty() || text.size() > 9 || (text.size() > 1 && text[0] == '0')) return std::nullopt;
  std::size_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + static_cast<std::size_t>(c - '0');
  }
  return value;
}

// What the file holds for one parameter copy.
struct FileCopy {
  std::map<std::string, nd::NDArray> states;  // by name
  nd::NDArray master;
  std::optional<std::int64_t> count, num_update;
};

struct FileParam {
  std::optional<std::string> name;
  std::map<std::size_t, FileCopy> copies;
};

// The file, read and checked on its own (before it is compared with a Trainer).
struct FileStates {
  std::string optimizer;
  std::int64_t num_states = 0, num_update = 0;
  double learning_rate = 0;
  std::optional<std::string> scheduler;  // its type
  std::optional<lr_scheduler::LRScheduler::State> scheduler_state;
  std::optional<double> scale;
  std::optional<std::pair<std::int64_t, std::int64_t>> scaler_counts;
  std::map<std::size_t, FileParam> params;
  std::map<std::string, double> scalars;  // the optimizer's own (Optimizer::scalars)
};

// Reads and checks the entries of a Trainer states file. `where` is "Trainer::load_states: 'path'".
class Reader {
 public:
  explicit Reader(std::string where) : where_(std::move(where)) {}

  FileStates read(const nd::LoadedArrays& loaded) {
    if (!loaded.has_names() && !loaded.arrays.empty()) {
      fail("holds a list of " + std::to_string(loaded.arrays.size()) + " arrays without names, not a Trainer's states");
    }
    std::map<std::string, const nd::NDArray*> entries;
    for (std::size_t i = 0; i < loaded.names.size(); ++i) {
      if (!entries.emplace(loaded.names[i], &loaded.arrays[i]).second) fail("has two entries '" + loaded.names[i] + "'");
    }
    const auto version = entries.find(kVersionKey);
    if (version == entries.end()) {
      fail("is not a Trainer states file (Trainer::save_states): it has no '" + std::string(kVersionKey) + "' entry");
    }
    const std::int64_t v = int64s(kVersionKey, *version->second, 1)[0];
    if (v != kVersion) {
      fail("has Trainer states format version " + std::to_string(v) + "; this ndgluon reads version " +
           std::to_string(kVersion));
    }
    FileStates file;
    std::set<std::string> seen;
    const auto required = [&](const char* key) -> const nd::NDArray& {
      const auto it = entries.find(key);
      if (it == entries.end()) fail("lacks its '" + std::string(key) + "' entry");
      seen.insert(key);
      return *it->second;
    };
    seen.insert(kVersionKey);
    file.optimizer = text(kOptimizerKey, required(kOptimizerKey));
    file.num_states = count(kNumStatesKey, int64s(kNumStatesKey, required(kNumStatesKey), 1)[0]);
    file.num_update = count(kNumUpdateKey, int64s(kNumUpdateKey, required(kNumUpdateKey), 1)[0]);
    file.learning_rate = float64(kLearningRateKey, required(kLearningRateKey));
    if (!(std::isfinite(file.learning_rate) && file.learning_rate >= 0)) {
      fail("holds learning rate " + nd::shortest_text(file.learning_rate) + ", not a finite number >= 0");
    }
    if (entries.count(kSchedulerKey)) {
      file.scheduler = text(kSchedulerKey, required(kSchedulerKey));
      file.scheduler_state = lr_scheduler::LRScheduler::State{
          float64(kSchedulerBaseLrKey, required(kSchedulerBaseLrKey)),
          int64s(kSchedulerPositionKey, required(kSchedulerPositionKey), 1)[0]};
    }
    if (entries.count(kScalerKey)) {
      file.scale = float64(kScalerKey, required(kScalerKey));
      const std::vector<std::int64_t> counts = int64s(kScalerCountsKey, required(kScalerCountsKey), 2);
      file.scaler_counts = {count(kScalerCountsKey, counts[0]), count(kScalerCountsKey, counts[1])};
    }
    for (const auto& [key, array] : entries) {
      if (seen.count(key)) continue;
      if (key.rfind(kScalarPrefix, 0) == 0) {
        file.scalars[key.substr(std::string_view(kScalarPrefix).size())] = float64(key.c_str(), *array);
        continue;
      }
      read_param_entry(key, *array, file);
    }
    // The parameters are those of a dict: 0 .. n-1, each named.
    std::size_t expected = 0;
    for (const auto& [index, param] : file.params) {
      if (index != expected || !param.name) {
        const std::size_t missing = index != expected ? expected : index;
        fail("has entries of parameter " + std::to_string(index) + " but no '" + kParamsPrefix +
             std::to_string(missing) + ".name' entry");
      }
      ++expected;
    }
    return file;
  }

  [[noreturn]] void fail(const std::string& what) const { throw FileError(where_ + " " + what); }

 private:
  // One of the params.<p>... entries.
  void read_param_entry(const std::string& key, const nd::NDArray& array, FileStates& file) {
    const auto unknown = [&] { fail("has an entry '" + key + "' that a Trainer states file does not have"); };
    if (key.rfind(kParamsPrefix, 0) != 0) unknown();
    const std::string_view rest = std::string_view(key).substr(std::string_view(kParamsPrefix).size());
    const std::size_t dot = rest.find('.');
    const std::optional<std::size_t> p = dot == std::string_view::npos ? std::nullopt : parse_index(rest.substr(0, dot));
    if (!p) unknown();
    FileParam& param = file.params[*p];
    const std::string_view field = rest.substr(dot + 1);
    if (field == "name") {
      param.name = text(key, array);
      return;
    }
    const std::size_t dot2 = field.find('.');
    const std::optional<std::size_t> c = dot2 == std::string_view::npos ? std::nullopt : parse_index(field.substr(0, dot2));
    if (!c) unknown();
    FileCopy& copy = param.copies[*c];
    const std::string_view what = field.substr(dot2 + 1);
    if (what == "count") {
      copy.count = count(key, int64s(key, array, 1)[0]);
    } else if (what == "num_update") {
      copy.num_update = count(key, int64s(key, array, 1)[0]);
    } else if (what == "master") {
      if (array.is_none() || array.dtype() != DType::float32) {
        fail("has master copy '" + key + "' " + nd::describe(array) + "; a master copy is float32");
      }
      copy.master = array;
    } else if (what.rfind("state.", 0) == 0 && what.size() > 6) {
      if (array.is_none() || !is_floating(array.dtype())) {
        fail("has state '" + key + "' " + nd::describe(array) + "; optimizer states are floating-point arrays");
      }
      copy.states[std::string(what.substr(6))] = array;
    } else {
      unknown();
    }
  }

  std::vector<std::int64_t> int64s(const std::string& key, const nd::NDArray& array, std::int64_t n) const {
    if (array.is_none() || array.dtype() != DType::int64 || array.shape() != Shape({n})) {
      fail("has entry '" + key + "' " + nd::describe(array) + "; it must be int64 of shape (" + std::to_string(n) +
           ",)");
    }
    return array.asvector<std::int64_t>();
  }
  double float64(const std::string& key, const nd::NDArray& array) const {
    if (array.is_none() || array.dtype() != DType::float64 || array.shape() != Shape({1})) {
      fail("has entry '" + key + "' " + nd::describe(array) + "; it must be float64 of shape (1,)");
    }
    return array.asscalar<double>();
  }
  std::string text(const std::string& key, const nd::NDArray& array) const {
    if (array.is_none() || array.dtype() != DType::uint8 || array.ndim() != 1 || array.size() == 0 ||
        array.size() > 4096) {
      fail("has entry '" + key + "' " + nd::describe(array) + "; it must be a name: uint8 of shape (n,), 0 < n <= 4096");
    }
    const std::vector<std::uint8_t> bytes = array.asvector<std::uint8_t>();
    return std::string(bytes.begin(), bytes.end());
  }
  std::int64_t count(const std::string& key, std::int64_t value) const {
    if (value < 0) fail("has entry '" + key + "' = " + std::to_string(value) + "; counts are >= 0");
    return value;
  }

  std::string where_;
};

// "mean, var", or "none".
std::string list(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& n : names) text += (text.empty() ? "" : ", ") + n;
  return text.empty() ? "none" : text;
}

// Whether a state or master copy of `shape` fits a parameter of `param_shape` (extents 0 unknown:
// a deferred parameter).
bool fits(const Shape& shape, const Shape& param_shape) {
  if (shape.ndim() != param_shape.ndim()) return false;
  for (int d = 0; d < shape.ndim(); ++d) {
    if (param_shape[d] != 0 && shape[d] != param_shape[d]) return false;
  }
  return true;
}

}  // namespace

std::string Trainer::save_states_tobuffer() const {
  std::vector<std::string> names;
  std::vector<nd::NDArray> arrays;
  const auto add = [&](std::string key, nd::NDArray array) {
    names.push_back(std::move(key));
    arrays.push_back(std::move(array));
  };
  const std::vector<std::string> state_names = optimizer_->state_names();
  add(kVersionKey, int64_array({kVersion}));
  add(kOptimizerKey, text_array(optimizer_->name()));
  add(kNumStatesKey, int64_array({static_cast<std::int64_t>(state_names.size())}));
  add(kNumUpdateKey, int64_array({num_update_}));
  add(kLearningRateKey, float64_array(optimizer_->learning_rate()));
  if (lr_scheduler_) {
    const lr_scheduler::LRScheduler::State state = lr_scheduler_->state();
    add(kSchedulerKey, text_array(lr_scheduler_->type()));
    add(kSchedulerBaseLrKey, float64_array(state.base_lr));
    add(kSchedulerPositionKey, int64_array({state.position}));
  }
  for (const auto& [name, value] : optimizer_->scalars()) add(kScalarPrefix + name, float64_array(value));
  if (loss_scaler_) {
    add(kScalerKey, float64_array(loss_scaler_->loss_scale()));
    add(kScalerCountsKey, int64_array({loss_scaler_->unskipped(), loss_scaler_->skipped_steps()}));
  }
  // Every copy with optimizer state or an update count, in the order of the dict.
  const std::map<StateKey, CopyState> states = optimizer_->states();
  std::set<StateKey> keys;
  for (const auto& [key, copy] : states) keys.insert(key);
  for (const auto& [key, count] : update_counts_) keys.insert(key);
  std::size_t index = 0;
  for (const auto& [name, param] : params_) {
    const std::string prefix = kParamsPrefix + std::to_string(index);
    add(prefix + ".name", text_array(name));
    for (auto it = keys.lower_bound({index, 0}); it != keys.end() && it->param == index; ++it) {
      const std::string copy_prefix = prefix + "." + std::to_string(it->copy) + ".";
      const auto state = states.find(*it);
      if (state != states.end()) {
        for (std::size_t i = 0; i < state->second.states.size() && i < state_names.size(); ++i) {
          const nd::NDArray& array = state->second.states[i];
          if (!array.is_none()) add(copy_prefix + "state." + state_names[i], array.copyto(cpu()));
        }
        if (!state->second.master.is_none()) add(copy_prefix + "master", state->second.master.copyto(cpu()));
      }
      add(copy_prefix + "count", int64_array({state != states.end() ? state->second.count : 0}));
      const auto updates = update_counts_.find(*it);
      add(copy_prefix + "num_update", int64_array({updates != update_counts_.end() ? updates->second : 0}));
    }
    ++index;
  }
  return nd::save_tobuffer(names, arrays);
}

void Trainer::save_states(const std::string& path) const {
  write_file_atomically(path, save_states_tobuffer(), "Trainer::save_states");
}

void Trainer::load_states(const std::string& path) { load_states_frombuffer(read_file(path, kOp), path); }

void Trainer::load_states_frombuffer(std::string_view bytes, const std::string& source) {
  const std::string path = source.empty() ? "the buffer" : "'" + source + "'";
  const std::string where = std::string(kOp) + ": " + path;
  const std::vector<std::string> state_names = optimizer_->state_names();
  // The file on its own: nd::load's errors name the source and the record.
  nd::LoadedArrays loaded;
  try {
    loaded = nd::load_frombuffer(bytes, cpu(), source);
  } catch (const FileError& error) {
    throw FileError(std::string(kOp) + ": " + error.what());
  } catch (const DTypeError& error) {
    throw DTypeError(std::string(kOp) + ": " + error.what());
  }
  Reader reader(where);
  const FileStates file = reader.read(loaded);

  // Against this Trainer.
  if (file.optimizer != optimizer_->name()) {
    throw ValueError(where + " holds the states of optimizer '" + file.optimizer + "', but this Trainer's optimizer is '" +
                     optimizer_->name() + "'");
  }
  if (file.num_states != static_cast<std::int64_t>(state_names.size())) {
    throw ValueError(where + " holds " + std::to_string(file.num_states) + " state arrays per parameter copy, but this " +
                     "Trainer's " + optimizer_->name() + " keeps " + std::to_string(state_names.size()) +
                     " (another hyper-parameter, such as momentum 0 against one that is not?)");
  }
  if (file.scheduler.has_value() != (lr_scheduler_ != nullptr)) {
    throw ValueError(where + (file.scheduler ? " holds the position of a " + *file.scheduler +
                                                   ", but this Trainer has no lr_scheduler"
                                             : " holds no lr_scheduler position, but this Trainer has a " +
                                                   std::string(lr_scheduler_->type())));
  }
  if (lr_scheduler_) {
    if (*file.scheduler != lr_scheduler_->type()) {
      throw ValueError(where + " holds the position of a " + *file.scheduler + ", but this Trainer's lr_scheduler is a " +
                       lr_scheduler_->type());
    }
    try {
      lr_scheduler_->check_state(*file.scheduler_state);
    } catch (const ValueError& error) {
      throw ValueError(where + ": " + error.what());
    }
  }
  if (file.scale.has_value() != (loss_scaler_ != nullptr)) {
    throw ValueError(where + (file.scale ? " holds a loss scaler's state, but this Trainer has no loss scaler "
                                           "(amp::init_trainer)"
                                         : " holds no loss scaler state, but this Trainer has a loss scaler "
                                           "(amp::init_trainer)"));
  }
  if (loss_scaler_ && !(std::isfinite(*file.scale) && *file.scale > 0)) {
    reader.fail("holds loss scale " + nd::shortest_text(*file.scale) + ", not a positive finite number");
  }
  // The same parameters, in the same places.
  std::vector<std::pair<std::string, Parameter>> params(params_.begin(), params_.end());
  const auto file_name = [&](std::size_t p) { return "'" + *file.params.at(p).name + "'"; };
  const auto here_name = [&](std::size_t p) {
    const std::string& name = params[p].first;
    return p < file.params.size() && name != *file.params.at(p).name ? " ('" + name + "' here)" : std::string();
  };
  if (file.params.size() != params.size()) {
    const std::size_t first = std::min(file.params.size(), params.size());
    throw ValueError(where + " holds the states of " + std::to_string(file.params.size()) + " parameters, but this " +
                     "Trainer has " + std::to_string(params.size()) + ": " +
                     (file.params.size() > params.size() ? "parameter " + std::to_string(first) + " of the file, " +
                                                               file_name(first) + ", is extra"
                                                         : "parameter " + std::to_string(first) + " here, '" +
                                                               params[first].first + "', is missing from the file"));
  }
  // Each copy's arrays, checked and copied to their contexts before anything changes.
  std::map<StateKey, CopyState> states;
  std::map<StateKey, std::int64_t> counts;
  std::map<std::size_t, std::uint64_t> versions;
  for (std::size_t p = 0; p < params.size(); ++p) {
    const Parameter& param = params[p].second;
    const FileParam& saved = file.params.at(p);
    const std::string named = "parameter " + std::to_string(p) + " " + file_name(p) + here_name(p);
    for (const auto& [index, copy] : saved.copies) {
      const std::size_t c = index;  // a variable the lambdas below can capture
      const auto check = [&](const nd::NDArray& array, const std::string& what, bool master) {
        if (!fits(array.shape(), param.shape())) {
          throw ShapeError(where + ": " + what + " of " + named + ", copy " + std::to_string(c) + ", is " +
                           nd::describe(array) + ", which does not fit the parameter " + param.shape().tuple_str());
        }
        const bool dtype_ok = master ? is_half(param.dtype())
                                     : array.dtype() == param.dtype() ||
                                           (array.dtype() == DType::float32 && is_half(param.dtype()));
        if (!dtype_ok) {
          throw DTypeError(where + ": " + what + " of " + named + ", copy " + std::to_string(c) + ", is " +
                           nd::describe(array) + ", which does not fit the parameter's dtype " +
                           dtype_name(param.dtype()) +
                           (master ? " (a float32 master copy is kept for float16 and bfloat16 weights)"
                                   : " (a state has its weight's dtype, or float32 for a 16-bit weight)"));
        }
      };
      for (const auto& [state, array] : copy.states) {
        if (std::find(state_names.begin(), state_names.end(), state) == state_names.end()) {
          reader.fail("has state '" + state + "' of " + named + ", copy " + std::to_string(c) + ", which this " +
                      "Trainer's " + optimizer_->name() + " does not keep (it keeps " + list(state_names) + ")");
        }
        check(array, "state '" + state + "'", false);
      }
      if (!copy.master.is_none()) check(copy.master, "the master copy", true);
      if (!copy.count || !copy.num_update) {
        reader.fail("lacks the update counts ('count', 'num_update') of " + named + ", copy " + std::to_string(c));
      }
    }
    if (saved.copies.empty()) continue;
    // Copy c's states to the c-th context; contexts beyond the file's copies get copy 0's. A
    // parameter not initialised yet keeps the file's copies on cpu(0) (the optimizer moves them to
    // their weights at the first update).
    const bool placed = param.is_initialized();
    const std::vector<Context> ctxs = placed ? param.list_ctx() : std::vector<Context>{};
    const auto state_of = [&](const FileCopy& copy, std::optional<Context> ctx) {
      const auto place = [&](const nd::NDArray& array) { return array.is_none() || !ctx ? array : array.copyto(*ctx); };
      CopyState state;
      if (!copy.states.empty()) {  // by state_names(); none for an array not made yet
        for (const std::string& name : state_names) {
          const auto it = copy.states.find(name);
          state.states.push_back(it == copy.states.end() ? nd::NDArray() : place(it->second));
        }
      }
      state.master = place(copy.master);
      state.count = *copy.count;
      return state;
    };
    const auto add = [&](std::size_t c, const FileCopy& copy, std::optional<Context> ctx) {
      states[{p, c}] = state_of(copy, ctx);
      if (*copy.num_update > 0) counts[{p, c}] = *copy.num_update;
    };
    if (!placed) {
      for (const auto& [c, copy] : saved.copies) add(c, copy, std::nullopt);
      continue;
    }
    for (std::size_t c = 0; c < ctxs.size(); ++c) {
      auto it = saved.copies.find(c);
      if (it == saved.copies.end()) it = saved.copies.find(0);
      if (it != saved.copies.end()) add(c, it->second, ctxs[c]);
    }
    versions[p] = param.data_version();
  }

  // The optimizer's own scalars: the same names as it keeps.
  const std::map<std::string, double> scalars = optimizer_->scalars();
  for (const auto& [name, value] : scalars) {
    if (!file.scalars.count(name)) {
      throw ValueError(where + " lacks " + optimizer_->name() + "'s '" + std::string(kScalarPrefix) + name + "' entry");
    }
  }
  for (const auto& [name, value] : file.scalars) {
    if (!scalars.count(name)) {
      throw ValueError(where + " holds '" + std::string(kScalarPrefix) + name + "', which " + optimizer_->name() +
                       " does not keep");
    }
  }

  // Everything checked and made: replace.
  optimizer_->set_scalars(file.scalars);
  optimizer_->set_learning_rate(file.learning_rate);
  optimizer_->set_states(states);
  update_counts_ = std::move(counts);
  num_update_ = file.num_update;
  // The master copies loaded are those of the weights as they are now (Parameter::data_version).
  data_versions_ = std::move(versions);
  if (lr_scheduler_) lr_scheduler_->set_state(*file.scheduler_state);
  if (loss_scaler_) loss_scaler_->set_state(*file.scale, file.scaler_counts->first, file.scaler_counts->second);
}

}  // namespace mx::gluon

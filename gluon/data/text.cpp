#include "gluon/data/text.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <random>
#include <sstream>

#include "ndarray/ops/creation.hpp"
#include "ndarray/ops/random.hpp"

namespace mx::gluon::data::text {

std::vector<std::string> read_time_machine(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw FileError("read_time_machine: cannot open '" + path + "'");
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    // Project Gutenberg's edition: the book is what lies between its START and END lines.
    if (line.rfind("*** START OF", 0) == 0 && line.find("PROJECT GUTENBERG EBOOK") != std::string::npos) {
      lines.clear();
      continue;
    }
    if (line.rfind("*** END OF", 0) == 0 && line.find("PROJECT GUTENBERG EBOOK") != std::string::npos) break;
    std::string clean;
    bool space = false;
    for (const char c : line) {
      if (std::isalpha(static_cast<unsigned char>(c))) {
        if (space && !clean.empty()) clean += ' ';
        space = false;
        clean += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      } else {
        space = true;
      }
    }
    lines.push_back(std::move(clean));
  }
  if (in.bad()) throw FileError("read_time_machine: reading '" + path + "' failed");
  return lines;
}

std::vector<std::vector<std::string>> tokenize(const std::vector<std::string>& lines, const std::string& token) {
  if (token != "word" && token != "char") {
    throw ValueError("tokenize: unknown token type \"" + token + "\"; \"word\" and \"char\" are known");
  }
  std::vector<std::vector<std::string>> out;
  out.reserve(lines.size());
  for (const std::string& line : lines) {
    std::vector<std::string> tokens;
    if (token == "char") {
      for (const char c : line) tokens.emplace_back(1, c);
    } else {
      std::istringstream words(line);
      for (std::string w; words >> w;) tokens.push_back(std::move(w));
    }
    out.push_back(std::move(tokens));
  }
  return out;
}

Vocab::Vocab(const std::vector<std::vector<std::string>>& tokens, std::int64_t min_freq,
             const std::vector<std::string>& reserved_tokens) {
  // Counts in order of first appearance, then a stable sort by count: ties keep that order, as
  // Python's sorted over a Counter does.
  std::unordered_map<std::string, std::size_t> position;
  for (const auto& line : tokens) {
    for (const std::string& t : line) {
      const auto [it, fresh] = position.emplace(t, token_freqs_.size());
      if (fresh) token_freqs_.emplace_back(t, 0);
      ++token_freqs_[it->second].second;
    }
  }
  std::stable_sort(token_freqs_.begin(), token_freqs_.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  const auto add = [&](const std::string& t) {
    if (token_to_idx_.emplace(t, size()).second) idx_to_token_.push_back(t);
  };
  add("<unk>");
  for (const std::string& t : reserved_tokens) add(t);
  for (const auto& [t, freq] : token_freqs_) {
    if (freq < min_freq) break;
    add(t);
  }
}

std::int64_t Vocab::operator[](const std::string& token) const {
  const auto it = token_to_idx_.find(token);
  return it == token_to_idx_.end() ? unk() : it->second;
}

std::vector<std::int64_t> Vocab::operator[](const std::vector<std::string>& tokens) const {
  std::vector<std::int64_t> out;
  out.reserve(tokens.size());
  for (const std::string& t : tokens) out.push_back((*this)[t]);
  return out;
}

const std::string& Vocab::to_tokens(std::int64_t index) const {
  if (index < 0 || index >= size()) {
    throw IndexError("Vocab::to_tokens: index " + std::to_string(index) + " is outside the vocabulary's [0, " +
                     std::to_string(size()) + ")");
  }
  return idx_to_token_[static_cast<std::size_t>(index)];
}

std::vector<std::string> Vocab::to_tokens(const std::vector<std::int64_t>& indices) const {
  std::vector<std::string> out;
  out.reserve(indices.size());
  for (const std::int64_t i : indices) out.push_back(to_tokens(i));
  return out;
}

std::vector<std::int64_t> corpus_indices(const std::vector<std::vector<std::string>>& tokens, const Vocab& vocab,
                                         std::int64_t max_tokens) {
  std::vector<std::int64_t> corpus;
  for (const auto& line : tokens) {
    for (const std::string& t : line) {
      if (max_tokens > 0 && static_cast<std::int64_t>(corpus.size()) == max_tokens) return corpus;
      corpus.push_back(vocab[t]);
    }
  }
  return corpus;
}

SeqDataLoader::SeqDataLoader(std::vector<std::int64_t> corpus, std::int64_t batch_size, std::int64_t num_steps,
                             bool random_iter, Context ctx)
    : corpus_(std::move(corpus)), batch_size_(batch_size), num_steps_(num_steps), random_iter_(random_iter), ctx_(ctx),
      seed_generation_(mx::random::seed_generation()) {
  if (batch_size < 1 || num_steps < 1) {
    throw ValueError("SeqDataLoader: batch_size and num_steps must be >= 1, got " + std::to_string(batch_size) +
                     " and " + std::to_string(num_steps));
  }
  // The shortest corpus that gives one minibatch whatever the offset drawn.
  const std::int64_t needed = random_iter ? batch_size * num_steps + num_steps : batch_size * num_steps + num_steps + 1;
  if (static_cast<std::int64_t>(corpus_.size()) < needed) {
    throw ValueError("SeqDataLoader: a corpus of " + std::to_string(corpus_.size()) + " tokens is too short for a " +
                     "minibatch of " + std::to_string(batch_size) + " x " + std::to_string(num_steps) + " (it needs " +
                     std::to_string(needed) + ")");
  }
}

std::vector<Batch>::iterator SeqDataLoader::begin() {
  if (mx::random::seed_generation() != seed_generation_) {
    seed_generation_ = mx::random::seed_generation();
    epoch_ = 0;
  }
  std::mt19937_64 rng(mx::random::current_seed() * 0x9e3779b97f4a7c15ULL + epoch_++);
  const auto n = static_cast<std::int64_t>(corpus_.size());
  std::vector<std::int32_t> xs, ys;
  std::int64_t batches = 0;
  if (random_iter_) {
    const std::int64_t offset = std::uniform_int_distribution<std::int64_t>(0, num_steps_ - 1)(rng);
    const std::int64_t subseqs = (n - offset - 1) / num_steps_;
    std::vector<std::int64_t> starts(static_cast<std::size_t>(subseqs));
    for (std::int64_t i = 0; i < subseqs; ++i) starts[static_cast<std::size_t>(i)] = offset + i * num_steps_;
    std::shuffle(starts.begin(), starts.end(), rng);
    batches = subseqs / batch_size_;
    for (std::int64_t i = 0; i < batches * batch_size_; ++i) {
      const std::int64_t at = starts[static_cast<std::size_t>(i)];
      for (std::int64_t t = 0; t < num_steps_; ++t) {
        xs.push_back(static_cast<std::int32_t>(corpus_[static_cast<std::size_t>(at + t)]));
        ys.push_back(static_cast<std::int32_t>(corpus_[static_cast<std::size_t>(at + t + 1)]));
      }
    }
  } else {
    const std::int64_t offset = std::uniform_int_distribution<std::int64_t>(0, num_steps_)(rng);
    const std::int64_t row = (n - offset - 1) / batch_size_;  // tokens per row
    batches = row / num_steps_;
    // Minibatch b, row i, step t: token offset + i * row + b * num_steps + t.
    for (std::int64_t b = 0; b < batches; ++b) {
      for (std::int64_t i = 0; i < batch_size_; ++i) {
        for (std::int64_t t = 0; t < num_steps_; ++t) {
          const std::int64_t at = offset + i * row + b * num_steps_ + t;
          xs.push_back(static_cast<std::int32_t>(corpus_[static_cast<std::size_t>(at)]));
          ys.push_back(static_cast<std::int32_t>(corpus_[static_cast<std::size_t>(at + 1)]));
        }
      }
    }
  }
  batches_.clear();
  const nd::NDArray x = nd::array(xs, {batches, batch_size_, num_steps_}, ctx_);
  const nd::NDArray y = nd::array(ys, {batches, batch_size_, num_steps_}, ctx_);
  for (std::int64_t b = 0; b < batches; ++b) batches_.push_back({x[b], y[b]});
  return batches_.begin();
}

}  // namespace mx::gluon::data::text

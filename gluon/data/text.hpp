#pragma once
// mx::gluon::data::text: the text pipeline of D2L's sequence chapters (MXNet edition, 8.2-8.3), in
// C++ with the book's names and semantics: lines of a text cleaned, tokenized by word or character,
// a vocabulary of the tokens by frequency, the corpus as indices, and minibatches of subsequences
// by random or sequential partitioning.
//
//   namespace text = mx::gluon::data::text;
//   auto lines = text::read_time_machine("timemachine.txt");     // letters and spaces, lower case
//   auto tokens = text::tokenize(lines, "char");
//   text::Vocab vocab(tokens);                                   // "<unk>", " ", "e", "t", ...
//   auto corpus = text::corpus_indices(tokens, vocab);
//   text::SeqDataLoader train(corpus, 32, 35, /*random_iter=*/false);
//   for (auto& [X, Y] : train) { /* X, Y (32, 35) int32: Y is X shifted by one token */ }
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "gluon/data/data_loader.hpp"

namespace mx::gluon::data::text {

// The lines of a text file with every run of characters other than A-Z and a-z replaced by one
// space, stripped and lower-cased (D2L's read_time_machine). In Project Gutenberg's edition (a
// "*** START OF THE/THIS PROJECT GUTENBERG EBOOK ..." line) only the lines between that line and
// its "*** END OF ..." line are the book's: the text D2L's timemachine.txt holds, which begins "The
// Time Machine, by H. G. Wells [1898]". mx::FileError naming the file when it cannot be read.
std::vector<std::string> read_time_machine(const std::string& path);

// Each line's tokens: "word" splits at whitespace, "char" gives each character (D2L's tokenize).
// Another token type is an mx::ValueError.
std::vector<std::vector<std::string>> tokenize(const std::vector<std::string>& lines, const std::string& token = "word");

class Vocab {
 public:
  // Index 0 is "<unk>", then reserved_tokens, then the tokens seen at least min_freq times, most
  // frequent first (ties in order of first appearance), as D2L's Vocab.
  explicit Vocab(const std::vector<std::vector<std::string>>& tokens = {}, std::int64_t min_freq = 0,
                 const std::vector<std::string>& reserved_tokens = {});

  std::int64_t size() const { return static_cast<std::int64_t>(idx_to_token_.size()); }  // len(vocab)
  // A token's index; unk() for a token not in the vocabulary.
  std::int64_t operator[](const std::string& token) const;
  std::vector<std::int64_t> operator[](const std::vector<std::string>& tokens) const;
  // The token of an index: mx::IndexError naming the index and [0, size()) when it is outside.
  const std::string& to_tokens(std::int64_t index) const;
  std::vector<std::string> to_tokens(const std::vector<std::int64_t>& indices) const;
  std::int64_t unk() const { return 0; }
  // Every token seen and its count, most frequent first.
  const std::vector<std::pair<std::string, std::int64_t>>& token_freqs() const { return token_freqs_; }
  const std::vector<std::string>& idx_to_token() const { return idx_to_token_; }

 private:
  std::vector<std::string> idx_to_token_;
  std::unordered_map<std::string, std::int64_t> token_to_idx_;
  std::vector<std::pair<std::string, std::int64_t>> token_freqs_;
};

// The tokens of every line, in order, as indices of vocab; at most max_tokens of them when
// max_tokens > 0 (D2L's load_corpus_time_machine).
std::vector<std::int64_t> corpus_indices(const std::vector<std::vector<std::string>>& tokens, const Vocab& vocab,
                                         std::int64_t max_tokens = -1);

// D2L's SeqDataLoader: each range-for is one epoch of minibatches (X, Y), (batch_size, num_steps)
// int32 on ctx, Y being X one token further on.
//   random_iter  seq_data_iter_random: the corpus from a random offset in [0, num_steps) cut into
//                subsequences of num_steps, taken in a random order; neighbouring minibatches are
//                not adjacent in the text;
//   otherwise    seq_data_iter_sequential: from a random offset in [0, num_steps], the corpus as
//                batch_size rows read num_steps at a time, so that row i of a minibatch continues
//                row i of the one before (the hidden state can be carried, detached).
// The draws come from a generator seeded with mx::random::current_seed() and the epoch, which
// restarts at 0 whenever mx::random::seed() is called: the same seed gives the same epochs.
// batch_size and num_steps >= 1, and a corpus long enough for one minibatch, else mx::ValueError
// naming the corpus length and what one minibatch needs.
class SeqDataLoader {
 public:
  SeqDataLoader(std::vector<std::int64_t> corpus, std::int64_t batch_size, std::int64_t num_steps, bool random_iter,
                Context ctx = cpu());

  // Starts an epoch (its minibatches are made at once: a corpus of tokens is small).
  std::vector<Batch>::iterator begin();
  std::vector<Batch>::iterator end() { return batches_.end(); }
  std::int64_t batch_size() const { return batch_size_; }
  std::int64_t num_steps() const { return num_steps_; }

 private:
  std::vector<std::int64_t> corpus_;
  std::int64_t batch_size_, num_steps_;
  bool random_iter_;
  Context ctx_;
  std::uint64_t seed_generation_, epoch_ = 0;
  std::vector<Batch> batches_;
};

}  // namespace mx::gluon::data::text

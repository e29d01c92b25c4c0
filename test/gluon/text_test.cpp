// The text pipeline of D2L's sequence chapters (gluon/data/text.hpp): cleaning and tokenizing,
// the vocabulary's order and its unknown token, the corpus, both partitionings of SeqDataLoader
// read back on a corpus of consecutive ids (so that each minibatch shows where it was cut), and
// nn::Embedding on every context; the errors.
#include "test/support/arrays.hpp"
#include "test/support/boost_test.hpp"
#include "test/support/contexts.hpp"
#include "test/support/files.hpp"

#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <gluon/data.hpp>
#include <gluon/nn.hpp>

namespace nd = mx::nd;
namespace text = mx::gluon::data::text;
namespace tt = boost::test_tools;
using ndg_test::Values;

BOOST_AUTO_TEST_SUITE(text_pipeline)

BOOST_AUTO_TEST_CASE(lines_are_cleaned_and_tokenized_as_the_book_does) {
  ndg_test::TempDir dir;
  ndg_test::write_bytes(dir.file("t.txt"), "The Time Machine, by H. G. Wells [1898]\n\n  I\n'It's against reason,' said Filby.\n");
  const std::vector<std::string> lines = text::read_time_machine(dir.file("t.txt"));
  BOOST_TEST(lines == (std::vector<std::string>{"the time machine by h g wells", "", "i", "it s against reason said filby"}),
             tt::per_element());
  const auto words = text::tokenize(lines);
  BOOST_TEST(words[0] == (std::vector<std::string>{"the", "time", "machine", "by", "h", "g", "wells"}), tt::per_element());
  BOOST_TEST(words[1].empty());
  const auto chars = text::tokenize({"ab c"}, "char");
  BOOST_TEST(chars[0] == (std::vector<std::string>{"a", "b", " ", "c"}), tt::per_element());
  NDG_CHECK_THROWS_WITH(text::tokenize(lines, "byte"), mx::ValueError, "unknown token type \"byte\"");
  NDG_CHECK_THROWS_WITH(text::read_time_machine(dir.file("missing.txt")), mx::FileError, "missing.txt");
}

BOOST_AUTO_TEST_CASE(project_gutenbergs_edition_gives_the_book_alone) {
  ndg_test::TempDir dir;
  ndg_test::write_bytes(dir.file("35.txt"),
                        "Project Gutenberg's The Time Machine, by H. G. Wells\n\nRelease Date: October 2, 2004\n"
                        "*** START OF THIS PROJECT GUTENBERG EBOOK THE TIME MACHINE ***\n\n"
                        "The Time Machine, by H. G. Wells [1898]\nI\n"
                        "*** END OF THIS PROJECT GUTENBERG EBOOK THE TIME MACHINE ***\nEnd of the License\n");
  BOOST_TEST(text::read_time_machine(dir.file("35.txt")) ==
                 (std::vector<std::string>{"", "the time machine by h g wells", "i"}),
             tt::per_element());
  // Without the markers every line counts, whatever it says of Project Gutenberg.
  ndg_test::write_bytes(dir.file("t.txt"), "*** END OF the text ***\nProject Gutenberg\n");
  BOOST_TEST(text::read_time_machine(dir.file("t.txt")) == (std::vector<std::string>{"end of the text", "project gutenberg"}),
             tt::per_element());
}

BOOST_AUTO_TEST_CASE(the_vocabulary_orders_tokens_by_frequency) {
  // a 3 times, b 2, c 2 (b seen first), d 1.
  const std::vector<std::vector<std::string>> tokens{{"b", "a", "c"}, {"a", "d", "c", "b", "a"}};
  const text::Vocab vocab(tokens);
  BOOST_TEST(vocab.idx_to_token() == (std::vector<std::string>{"<unk>", "a", "b", "c", "d"}), tt::per_element());
  BOOST_TEST(vocab.size() == 5);
  BOOST_TEST(vocab["c"] == 3);
  BOOST_TEST(vocab["zebra"] == vocab.unk());
  const std::vector<std::int64_t> ids = vocab[std::vector<std::string>{"d", "a", "?"}];
  BOOST_TEST(ids == (std::vector<std::int64_t>{4, 1, 0}), tt::per_element());
  BOOST_TEST(vocab.to_tokens(std::vector<std::int64_t>{2, 0}) == (std::vector<std::string>{"b", "<unk>"}), tt::per_element());
  BOOST_TEST(vocab.token_freqs().front().first == "a");
  BOOST_TEST(vocab.token_freqs().front().second == 3);
  // min_freq 2 drops d; reserved tokens come right after <unk>, each once.
  const text::Vocab frequent(tokens, 2, {"<pad>", "<bos>", "a"});
  BOOST_TEST(frequent.idx_to_token() == (std::vector<std::string>{"<unk>", "<pad>", "<bos>", "a", "b", "c"}),
             tt::per_element());
  BOOST_TEST(frequent["d"] == 0);
  NDG_CHECK_THROWS_WITH(vocab.to_tokens(5), mx::IndexError, "index 5", "[0, 5)");
  NDG_CHECK_THROWS_WITH(vocab.to_tokens(-1), mx::IndexError, "index -1");
  // The corpus, whole and cut short.
  BOOST_TEST(text::corpus_indices(tokens, vocab) == (std::vector<std::int64_t>{2, 1, 3, 1, 4, 3, 2, 1}), tt::per_element());
  BOOST_TEST(text::corpus_indices(tokens, vocab, 4) == (std::vector<std::int64_t>{2, 1, 3, 1}), tt::per_element());
}

namespace {

std::vector<std::int64_t> counting(std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = i;
  return v;
}

// Each epoch's minibatches as values.
std::vector<std::pair<Values, Values>> epoch(text::SeqDataLoader& loader) {
  std::vector<std::pair<Values, Values>> out;
  for (auto& [X, Y] : loader) {
    BOOST_TEST(X.shape() == (mx::Shape{loader.batch_size(), loader.num_steps()}));
    BOOST_TEST(X.dtype() == mx::DType::int32);
    out.emplace_back(ndg_test::values(X), ndg_test::values(Y));
  }
  return out;
}

}  // namespace

BOOST_AUTO_TEST_CASE(sequential_partitioning_continues_each_row) {
  ndg_test::for_each_context([](mx::Context ctx) {
    mx::random::seed(4);
    const std::int64_t bs = 2, steps = 5, n = 35;
    text::SeqDataLoader loader(counting(n), bs, steps, false, ctx);
    const auto batches = epoch(loader);
    BOOST_TEST(!batches.empty());
    for (std::size_t b = 0; b < batches.size(); ++b) {
      const auto& [x, y] = batches[b];
      for (std::size_t i = 0; i < x.size(); ++i) BOOST_TEST(y[i] == x[i] + 1);  // the next token
      for (std::int64_t r = 0; r < bs; ++r) {
        for (std::int64_t t = 1; t < steps; ++t) BOOST_TEST(x[std::size_t(r * steps + t)] == x[std::size_t(r * steps + t - 1)] + 1);
        // Row r of minibatch b + 1 starts where row r of minibatch b stopped.
        if (b + 1 < batches.size()) {
          BOOST_TEST(batches[b + 1].first[std::size_t(r * steps)] == x[std::size_t(r * steps + steps - 1)] + 1);
        }
      }
    }
    // Every token used is inside the corpus, and the rows are equally long parts of it.
    const double offset = batches[0].first[0];
    BOOST_TEST((offset >= 0 && offset <= steps));
    const auto row = static_cast<std::int64_t>(batches[0].first[std::size_t(steps)] - offset);  // tokens per row
    BOOST_TEST(row == (n - static_cast<std::int64_t>(offset) - 1) / bs);
    BOOST_TEST(batches.size() == std::size_t(row / steps));
    BOOST_TEST(batches.back().second.back() <= n - 1);
  });
}

BOOST_AUTO_TEST_CASE(random_partitioning_draws_disjoint_subsequences) {
  ndg_test::for_each_context([](mx::Context ctx) {
    mx::random::seed(9);
    const std::int64_t bs = 3, steps = 4, n = 103;
    text::SeqDataLoader loader(counting(n), bs, steps, true, ctx);
    const auto first = epoch(loader), second = epoch(loader);
    std::set<double> starts;
    for (const auto& [x, y] : first) {
      for (std::int64_t r = 0; r < bs; ++r) {
        const double s = x[std::size_t(r * steps)];
        for (std::int64_t t = 0; t < steps; ++t) {
          BOOST_TEST(x[std::size_t(r * steps + t)] == s + double(t));
          BOOST_TEST(y[std::size_t(r * steps + t)] == s + double(t + 1));
        }
        starts.insert(s);
      }
    }
    // Distinct subsequences on one grid: their starts differ by multiples of num_steps.
    BOOST_TEST(starts.size() == first.size() * std::size_t(bs));
    const double offset = *starts.begin();
    for (const double s : starts) BOOST_TEST(std::fmod(s - offset, double(steps)) == 0.0);
    BOOST_TEST(first.size() == std::size_t((n - std::int64_t(offset) - 1) / steps / bs));
    // Another epoch draws another order; the same seed gives the same epochs.
    BOOST_TEST((first != second));
    mx::random::seed(9);
    text::SeqDataLoader again(counting(n), bs, steps, true, ctx);
    BOOST_TEST((epoch(again) == first));
  });
}

BOOST_AUTO_TEST_CASE(a_corpus_too_short_is_refused) {
  NDG_CHECK_THROWS_WITH(text::SeqDataLoader(counting(20), 4, 5, true), mx::ValueError, "20 tokens", "4 x 5", "needs 25");
  NDG_CHECK_THROWS_WITH(text::SeqDataLoader(counting(25), 4, 5, false), mx::ValueError, "needs 26");
  NDG_CHECK_THROWS_WITH(text::SeqDataLoader({}, 1, 1, false), mx::ValueError, "0 tokens");
  NDG_CHECK_THROWS_WITH(text::SeqDataLoader(counting(100), 0, 5, false), mx::ValueError, "batch_size and num_steps");
}

BOOST_AUTO_TEST_CASE(embedding_layer_looks_up_rows_and_sums_their_gradients) {
  ndg_test::for_each_context([](mx::Context ctx) {
    namespace nn = mx::gluon::nn;
    nn::Embedding embed(5, 3);
    BOOST_TEST(embed.weight().name().find("embedding") == 0u);
    BOOST_TEST(embed.weight().name().substr(embed.weight().name().size() - 7) == "_weight");
    embed.initialize(mx::init::Uniform(1.0), ctx);
    const nd::NDArray w = embed.weight().data(ctx);
    const Values wv = ndg_test::values(w);
    const nd::NDArray ids = nd::array({{4, 0}, {4, 2}}, ctx).astype(mx::DType::int32);
    nd::NDArray out;
    {
      auto rec = mx::autograd::record();
      out = embed(ids);
      out.backward();
    }
    BOOST_TEST(out.shape() == (mx::Shape{2, 2, 3}));
    Values want;
    for (const int id : {4, 0, 4, 2}) {
      for (int j = 0; j < 3; ++j) want.push_back(wv[std::size_t(id * 3 + j)]);
    }
    ndg_test::check_close(out, want, 0, 0);
    // Each row's gradient counts its ids: row 4 twice, rows 0 and 2 once, the others none.
    ndg_test::check_close(embed.weight().grad(ctx), {1, 1, 1, 0, 0, 0, 1, 1, 1, 0, 0, 0, 2, 2, 2}, 0, 0);
    NDG_CHECK_THROWS_WITH(nn::Embedding(0, 3), mx::ValueError, "input_dim and output_dim must be >= 1");
  });
}

BOOST_AUTO_TEST_SUITE_END()

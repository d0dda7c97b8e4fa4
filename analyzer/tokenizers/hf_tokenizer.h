#pragma once
// A tokenizer assembled from Hugging Face's stages: added tokens → normalizer → pre-tokenizer →
// model. Every stage keeps the alignment to the original line, so tokens carry original offsets.

#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include "analyzer/tokenizers/added_vocabulary.h"
#include "analyzer/tokenizers/normalizers/normalizers.h"
#include "analyzer/tokenizers/pre_tokenizers/pre_tokenizers.h"
#include "analyzer/tokenizers/tokenizer.h"
#include "analyzer/tokenizers/models/tokenizer_model.h"

namespace headscan {

class HfTokenizer : public Tokenizer {
 public:
  // `normalizer` and `pre_tokenizer` may be null (text unchanged; the whole text is one word).
  // `single_template`: the special tokens the post-processor puts around a text (not added here).
  // `byte_level`: the normalizer or pre-tokenizer is (or holds) ByteLevel.
  HfTokenizer(std::vector<AddedToken> added_tokens, std::unique_ptr<Normalizer> normalizer,
                    std::unique_ptr<PreTokenizer> pre_tokenizer, std::unique_ptr<TokenizerModel> model,
                    SingleTemplate single_template = {}, bool byte_level = false);

  std::vector<Token> encode(std::string_view text) const override;
  std::int64_t vocab_size() const override { return vocab_size_; }
  std::optional<std::int64_t> token_to_id(std::string_view piece) const override;
  // Empty for an id that has no piece.
  std::string id_to_piece(std::int64_t id) const override;
  bool is_special(std::int64_t id) const override { return special_ids_.count(id) > 0; }
  std::string describe() const override;
  std::vector<std::string> template_prefix() const override { return single_template_.prefix; }
  std::vector<std::string> template_suffix() const override { return single_template_.suffix; }
  bool byte_level() const override { return byte_level_; }

 private:
  void encode_plain_text(std::string_view line, ByteSpan span, std::vector<Token>& tokens) const;
  void encode_words(const NormalizedString& text, std::vector<Token>& tokens) const;

  // Declared before added_ so that it outlives the matcher that was built with it.
  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unique_ptr<TokenizerModel> model_;
  AddedVocabulary added_;
  std::unordered_map<std::string, std::int64_t> added_ids_;
  std::unordered_map<std::int64_t, std::string> added_pieces_;
  std::unordered_set<std::int64_t> special_ids_;
  std::int64_t vocab_size_ = 0;
  SingleTemplate single_template_;
  bool byte_level_ = false;
};

}  // namespace headscan

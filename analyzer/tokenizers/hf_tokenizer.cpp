#include "analyzer/tokenizers/hf_tokenizer.h"

#include <algorithm>

namespace headscan {

HfTokenizer::HfTokenizer(std::vector<AddedToken> added_tokens, std::unique_ptr<Normalizer> normalizer,
                                     std::unique_ptr<PreTokenizer> pre_tokenizer, std::unique_ptr<TokenizerModel> model,
                                     SingleTemplate single_template, bool byte_level)
    : normalizer_(std::move(normalizer)),
      pre_tokenizer_(std::move(pre_tokenizer)),
      model_(std::move(model)),
      added_(std::move(added_tokens), normalizer_.get()),
      single_template_(std::move(single_template)),
      byte_level_(byte_level) {
  vocab_size_ = model_->vocab_size();
  for (const AddedToken& token : added_.tokens()) {
    vocab_size_ = std::max(vocab_size_, token.id + 1);
    if (token.special) special_ids_.insert(token.id);
    added_ids_.emplace(token.content, token.id);  // emplace: the first of duplicates wins
    added_pieces_.emplace(token.id, token.content);
  }
  for (std::int64_t id : model_->special_ids()) special_ids_.insert(id);
}

std::vector<Token> HfTokenizer::encode(std::string_view text) const {
  std::vector<Token> tokens;
  // Tokens matched in the raw text (normalized=false) are cut out before anything else runs.
  for (const AddedTokenSplit& split : added_.split(text, /*normalized=*/false)) {
    if (split.token != nullptr) {
      tokens.push_back({split.token->id, split.token->content, split.span.begin, split.span.end});
    } else {
      encode_plain_text(text, split.span, tokens);
    }
  }
  return tokens;
}

void HfTokenizer::encode_plain_text(std::string_view line, ByteSpan span, std::vector<Token>& tokens) const {
  NormalizedString text = NormalizedString::from_original(line, span.begin, span.end);
  if (normalizer_) normalizer_->normalize(text);
  // Tokens with normalized=true are matched in the normalized text, before pre-tokenization.
  for (const AddedTokenSplit& split : added_.split(text.text(), /*normalized=*/true)) {
    if (split.token != nullptr) {
      const ByteSpan original = text.original_span(split.span.begin, split.span.end);
      tokens.push_back({split.token->id, split.token->content, original.begin, original.end});
    } else {
      encode_words(text.slice(split.span.begin, split.span.end), tokens);
    }
  }
}

void HfTokenizer::encode_words(const NormalizedString& text, std::vector<Token>& tokens) const {
  std::vector<NormalizedString> words;
  if (pre_tokenizer_) {
    pre_tokenizer_->split(text, words);
  } else if (!text.empty()) {
    words.push_back(text);
  }
  std::vector<Token> word_tokens;
  for (const NormalizedString& word : words) {
    word_tokens.clear();
    model_->tokenize(word.text(), word_tokens);
    // The model's offsets are into the normalized word; map them back to the line. A token with
    // no text of its own sits where its word starts.
    const std::size_t word_start = word.original_begin();
    for (Token& token : word_tokens) {
      const ByteSpan original =
          token.begin < token.end ? word.original_span(token.begin, token.end) : ByteSpan{word_start, word_start};
      token.begin = original.begin;
      token.end = original.end;
      tokens.push_back(std::move(token));
    }
  }
}

// Added tokens first, then the model, as the tokenizers library looks them up.
std::optional<std::int64_t> HfTokenizer::token_to_id(std::string_view piece) const {
  const auto added = added_ids_.find(std::string(piece));
  if (added != added_ids_.end()) return added->second;
  return model_->token_to_id(piece);
}

std::string HfTokenizer::id_to_piece(std::int64_t id) const {
  const auto added = added_pieces_.find(id);
  if (added != added_pieces_.end()) return added->second;
  return model_->id_to_piece(id).value_or(std::string());
}

std::string HfTokenizer::describe() const {
  return model_->type() + ", " + std::to_string(vocab_size_) + " tokens";
}

}  // namespace headscan

#pragma once
// SentencePiece .model files (LLaMA, Mistral, T5 spiece.model, …) through the sentencepiece
// library, so that ids are exactly spm_encode's. The library stays out of this header.

#include <memory>
#include <string>

#include "analyzer/tokenizers/tokenizer.h"

namespace headscan {

class SentencePieceTokenizer : public Tokenizer {
 public:
  // Loads a serialized SentencePiece ModelProto from `path`. Throws InputError, naming the file,
  // when it cannot be read or is not a SentencePiece model.
  static std::unique_ptr<SentencePieceTokenizer> load(const std::string& path);
  ~SentencePieceTokenizer() override;

  // The pieces spm_encode gives, with SentencePiece's byte spans, except that every <0xNN> byte
  // piece of a character spans that whole character (SentencePiece gives the span to the last
  // byte of a character only).
  std::vector<Token> encode(std::string_view text) const override;
  std::int64_t vocab_size() const override;
  std::optional<std::int64_t> token_to_id(std::string_view piece) const override;
  std::string id_to_piece(std::int64_t id) const override;
  // Control symbols (<s>, </s>, <pad>) and the unknown piece.
  bool is_special(std::int64_t id) const override;
  std::string describe() const override;
  // The model's BOS piece when it defines one (bos_id ≥ 0; LLaMA's "<s>"): SentencePiece-trained
  // models that have one were trained with it in front (Hugging Face's LlamaTokenizer adds it).
  std::vector<std::string> template_prefix() const override;

 private:
  struct Impl;
  explicit SentencePieceTokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace headscan

#pragma once
// What headscan takes from the "post_processor" of a tokenizer.json: the special tokens its
// template puts around a single text ([CLS] … [SEP], <s> … </s>, <s> …). HfTokenizer::encode()
// never adds them; the sequence builder frames every window with them (DESIGN.md, "Sequences"):
// one BOS (headscan.json's, else the template's prefix; see choose_bos in tokenizer.h) and the
// template's suffix.

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "analyzer/tokenizers/tokenizer.h"

namespace headscan {

// The special tokens the post-processor puts around a single text, in order, as Hugging Face's
// tokenizers applies them with add_special_tokens=True:
//   TemplateProcessing: the SpecialTokens of "single" before its {"Sequence": …} (prefix) and
//     after it (suffix), each expanded to the "tokens" of its "special_tokens" entry;
//   BertProcessing, RobertaProcessing: cls before, sep after;
//   ByteLevel, null: none;
//   Sequence: its processors applied in order, each around the result of the ones before (the
//     last one's prefix comes first and its suffix last); after a TemplateProcessing none may add
//     tokens (the library cannot run that either).
// Throws InputError, naming `origin`, on an unsupported type or a malformed template.
SingleTemplate single_template_from_json(const nlohmann::json* spec, const std::string& origin,
                                         const std::string& where = "post_processor");

}  // namespace headscan

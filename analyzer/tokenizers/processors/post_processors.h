#pragma once
// What headscan takes from the "post_processor" of a tokenizer.json. Post-processors add special
// tokens around an encoded text ([CLS] … [SEP], <s> …); headscan never runs them: the sequence
// builder prepends one BOS (DESIGN.md, "Sequences"). It only needs to know which special tokens
// the template puts before the text, so that BOS can follow the tokenizer when headscan.json
// names none (see choose_bos in tokenizer.h).

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace headscan {

// The special tokens the post-processor puts before a single text, in order: TemplateProcessing's
// leading SpecialTokens of "single", BertProcessing's and RobertaProcessing's cls, none for
// ByteLevel or null; a Sequence combines its processors (the last one's tokens come first).
// Throws InputError, naming `origin`, on an unsupported type or a malformed template.
std::vector<std::string> template_prefix_from_json(const nlohmann::json* spec, const std::string& origin,
                                                   const std::string& where = "post_processor");

}  // namespace headscan

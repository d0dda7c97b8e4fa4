#pragma once
// The list of head types, their descriptions, and the rules that combine their labels.

#include <memory>
#include <string>
#include <vector>

#include "heads/classifier.h"

namespace headscan {

std::unique_ptr<HeadClassifier> make_previous_token_classifier();
std::unique_ptr<HeadClassifier> make_positional_classifier();
std::unique_ptr<HeadClassifier> make_first_token_classifier();
std::unique_ptr<HeadClassifier> make_entropy_classifier();
std::unique_ptr<HeadClassifier> make_confidence_classifier();
std::unique_ptr<HeadClassifier> make_mean_distance_classifier();
std::unique_ptr<HeadClassifier> make_self_attention_classifier();
std::unique_ptr<HeadClassifier> make_induction_classifier();
std::unique_ptr<HeadClassifier> make_duplicate_token_classifier();
std::unique_ptr<HeadClassifier> make_induction_text_classifier();
std::unique_ptr<HeadClassifier> make_rare_word_classifier();
std::unique_ptr<HeadClassifier> make_syntactic_classifier();
std::unique_ptr<HeadClassifier> make_separator_classifier();
std::unique_ptr<HeadClassifier> make_punctuation_classifier();
std::unique_ptr<HeadClassifier> make_streaming_classifier();
std::unique_ptr<HeadClassifier> make_streaming_duo_classifier();
std::unique_ptr<HeadClassifier> make_retrieval_classifier();

// Copy events a retrieval score needs: with fewer, retrieval is null (heads/retrieval.cpp).
constexpr std::int64_t kMinimumCopyEvents = 20;

// Every classifier, in the order their scores appear in heads.json.
std::vector<std::unique_ptr<HeadClassifier>> make_classifiers();

// The description of every head type, in the same order.
const std::vector<HeadType>& head_types();

// Default thresholds of every head type, overridden by `overrides`. Throws InputError naming the
// valid names when an override names no threshold.
Thresholds resolve_thresholds(const Thresholds& overrides);

// Labels in the order that picks a head's primary label (DESIGN.md, "Head scores and labels"):
// the head types' labels by primary rank.
const std::vector<std::string>& primary_label_order();

// The first label of `labels` in primary order, or "none".
std::string primary_label(const std::vector<std::string>& labels);

// Sorts labels into primary order, so that the first one is the primary label.
void sort_labels(std::vector<std::string>& labels);

}  // namespace headscan

#pragma once
// The numbers of a head's scores in heads.json, read the same way by the pages, the plots,
// heads.csv and `headscan compare`: a score is a number, an object with a "weight" (positional) or
// a table of dependency relations (syntactic). Safe on any JSON value.

#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

namespace headscan {

// A number member of an object; nullopt when `object` is not an object or the member no number.
std::optional<double> number_at(const nlohmann::ordered_json& object, const char* key);

// An object of relations, each an object with an "accuracy" (heads.json "syntactic").
bool is_relation_table(const nlohmann::ordered_json& value);

// The relation a head attends best: passed relations first, then the largest accuracy − baseline,
// then the first listed; entries that are not objects with an "accuracy" are skipped. Null when
// there is none; `name` (when given) receives the relation's name.
const nlohmann::ordered_json* best_relation(const nlohmann::ordered_json& table, std::string* name);

// The number that stands for a score: the value of a finite number; `weight` of an object that has
// one (positional); for relation tables (syntactic) the best accuracy − baseline; else nullopt.
std::optional<double> scalar_score(const nlohmann::ordered_json& value);

}  // namespace headscan

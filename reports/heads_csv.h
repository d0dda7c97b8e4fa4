#pragma once
// heads.csv beside heads.json: one row per head, for pandas.read_csv or a spreadsheet (RFC 4180).
// Columns: layer, head, kv_group, primary, labels (joined by ";"), then every score: a number or
// null of "scores" is one column (empty for null); an object of numbers such as "positional" is
// one column per member ("positional_offset"); "syntactic" gives the head's best relation (the
// largest accuracy − baseline; a passed relation before one that did not pass) as
// syntactic_relation, _direction, _accuracy, _baseline, _support and _passed. Numbers are
// written as heads.json writes them, so the CSV read back equals heads.json.

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace headscan {

// The first columns of every row.
inline constexpr const char* kHeadCsvColumns = "layer,head,kv_group,primary,labels";

// Appends to `columns` the score columns of `heads` (a heads.json "heads" array) that are not in it
// yet, in the order the heads give them (the first head's, then any new ones).
void add_score_columns(const nlohmann::ordered_json& heads, std::vector<std::string>& columns);

// One head's row without its line end: the fields of kHeadCsvColumns, then one per column of
// `columns` (empty where the head has no value).
std::string head_csv_fields(const nlohmann::ordered_json& head, const std::vector<std::string>& columns);

// The CSV text of a heads.json document's heads.
std::string heads_csv(const nlohmann::ordered_json& document);

// One field, quoted when it holds a comma, a quote or a line break (RFC 4180).
std::string csv_field(const std::string& text);

// Writes `text` to `path` as it is; throws std::runtime_error when it cannot be written.
void write_csv_file(const std::string& text, const std::filesystem::path& path);

// Writes heads_csv(document) to `path`; throws std::runtime_error when it cannot be written.
void write_heads_csv(const nlohmann::ordered_json& document, const std::filesystem::path& path);

}  // namespace headscan

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

#include <nlohmann/json_fwd.hpp>

namespace headscan {

// The CSV text of a heads.json document's heads.
std::string heads_csv(const nlohmann::ordered_json& document);

// One field, quoted when it holds a comma, a quote or a line break (RFC 4180).
std::string csv_field(const std::string& text);

// Writes heads_csv(document) to `path`; throws std::runtime_error when it cannot be written.
void write_heads_csv(const nlohmann::ordered_json& document, const std::filesystem::path& path);

}  // namespace headscan

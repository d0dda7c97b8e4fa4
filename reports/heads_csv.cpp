#include "reports/heads_csv.h"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyzer/checked_file.h"
#include "reports/score_values.h"

namespace headscan {
namespace {

constexpr const char* kSyntacticColumns[] = {"relation", "direction", "accuracy", "baseline", "support", "passed"};

// A cell: a number as heads.json writes it, a string as it is, null as empty.
std::string cell(const nlohmann::ordered_json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return csv_field(value.get<std::string>());
  return csv_field(value.dump());
}

}  // namespace

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

void add_score_columns(const nlohmann::ordered_json& heads, std::vector<std::string>& columns) {
  auto add_column = [&](const std::string& column) {
    if (std::find(columns.begin(), columns.end(), column) == columns.end()) columns.push_back(column);
  };
  for (const auto& head : heads) {
    for (const auto& [name, value] : head.at("scores").items()) {
      if (name == "syntactic") {
        for (const char* column : kSyntacticColumns) add_column(std::string("syntactic_") + column);
      } else if (value.is_object()) {
        for (const auto& [member, member_value] : value.items()) {
          if (!member_value.is_structured()) add_column(name + "_" + member);
        }
      } else if (!value.is_structured()) {
        add_column(name);
      }
    }
  }
}

std::string head_csv_fields(const nlohmann::ordered_json& head, const std::vector<std::string>& columns) {
  std::map<std::string, std::string> cells;
  for (const auto& [name, value] : head.at("scores").items()) {
    if (name == "syntactic" && value.is_object()) {
      std::string relation;
      if (const nlohmann::ordered_json* best = best_relation(value, &relation)) {
        cells["syntactic_relation"] = csv_field(relation);
        for (const char* column : kSyntacticColumns) {
          if (best->contains(column)) cells[std::string("syntactic_") + column] = cell(best->at(column));
        }
      }
    } else if (value.is_object()) {
      for (const auto& [member, member_value] : value.items()) cells[name + "_" + member] = cell(member_value);
    } else {
      cells[name] = cell(value);
    }
  }
  std::string labels;
  for (const auto& label : head.at("labels")) labels += (labels.empty() ? "" : ";") + label.get<std::string>();
  std::string text = fmt::format("{},{},{},{},{}", head.at("layer").get<int>(), head.at("head").get<int>(),
                                 head.at("kv_group").get<int>(), csv_field(head.at("primary").get<std::string>()),
                                 csv_field(labels));
  for (const std::string& column : columns) {
    const auto found = cells.find(column);
    text += "," + (found == cells.end() ? std::string() : found->second);
  }
  return text;
}

std::string heads_csv(const nlohmann::ordered_json& document) {
  const auto& heads = document.at("heads");
  std::vector<std::string> columns;
  add_score_columns(heads, columns);
  std::string text = kHeadCsvColumns;
  for (const std::string& column : columns) text += "," + csv_field(column);
  text += "\r\n";
  for (const auto& head : heads) text += head_csv_fields(head, columns) + "\r\n";
  return text;
}

void write_csv_file(const std::string& text, const std::filesystem::path& path) { write_checked_file(path, text); }

void write_heads_csv(const nlohmann::ordered_json& document, const std::filesystem::path& path) {
  write_csv_file(heads_csv(document), path);
}

}  // namespace headscan

#include "reports/heads_csv.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace headscan {
namespace {

constexpr const char* kSyntacticColumns[] = {"relation", "direction", "accuracy", "baseline", "support", "passed"};

// A cell: a number as heads.json writes it, a string as it is, null as empty.
std::string cell(const nlohmann::ordered_json& value) {
  if (value.is_null()) return "";
  if (value.is_string()) return csv_field(value.get<std::string>());
  return csv_field(value.dump());
}

// The relation of a head's "syntactic" scores that it attends best: passed first, then the
// largest accuracy − baseline, then the name.
const nlohmann::ordered_json* best_relation(const nlohmann::ordered_json& relations, std::string& name) {
  const nlohmann::ordered_json* best = nullptr;
  double best_margin = 0;
  bool best_passed = false;
  for (const auto& [relation, result] : relations.items()) {
    if (!result.is_object() || !result.contains("accuracy") || !result.contains("baseline")) continue;
    const bool passed = result.value("passed", false);
    const double margin = result.at("accuracy").get<double>() - result.at("baseline").get<double>();
    if (best == nullptr || passed > best_passed || (passed == best_passed && margin > best_margin)) {
      best = &result;
      best_margin = margin;
      best_passed = passed;
      name = relation;
    }
  }
  return best;
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

std::string heads_csv(const nlohmann::ordered_json& document) {
  const auto& heads = document.at("heads");
  // The score columns, in the order the heads give them (the first head's, then any new ones).
  std::vector<std::string> columns;
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
  std::string text = "layer,head,kv_group,primary,labels";
  for (const std::string& column : columns) text += "," + csv_field(column);
  text += "\r\n";
  for (const auto& head : heads) {
    std::map<std::string, std::string> cells;
    for (const auto& [name, value] : head.at("scores").items()) {
      if (name == "syntactic" && value.is_object()) {
        std::string relation;
        if (const nlohmann::ordered_json* best = best_relation(value, relation)) {
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
    text += fmt::format("{},{},{},{},{}", head.at("layer").get<int>(), head.at("head").get<int>(),
                        head.at("kv_group").get<int>(), csv_field(head.at("primary").get<std::string>()),
                        csv_field(labels));
    for (const std::string& column : columns) {
      const auto found = cells.find(column);
      text += "," + (found == cells.end() ? std::string() : found->second);
    }
    text += "\r\n";
  }
  return text;
}

void write_heads_csv(const nlohmann::ordered_json& document, const std::filesystem::path& path) {
  std::ofstream out(path, std::ios::binary);
  out << heads_csv(document);
  out.close();
  if (!out) throw std::runtime_error(fmt::format("{}: cannot write", path.string()));
}

}  // namespace headscan

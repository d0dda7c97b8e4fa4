#include "analyzer/model/exported/serialized_program.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace headscan {

using nlohmann::json;

at::ScalarType serialized_scalar_type(std::int64_t code) {
  static const std::map<std::int64_t, at::ScalarType> kTypes = {
      {1, at::kByte},  {2, at::kChar},   {3, at::kShort},         {4, at::kInt},
      {5, at::kLong},  {6, at::kHalf},   {7, at::kFloat},         {8, at::kDouble},
      {9, at::kComplexHalf}, {10, at::kComplexFloat}, {11, at::kComplexDouble}, {12, at::kBool},
      {13, at::kBFloat16}, {28, at::kUInt16}, {29, at::kFloat8_e4m3fn}, {30, at::kFloat8_e5m2},
      {31, at::kFloat8_e4m3fnuz}, {32, at::kFloat8_e5m2fnuz}};
  const auto found = kTypes.find(code);
  if (found == kTypes.end()) throw std::invalid_argument(fmt::format("an unknown dtype {}", code));
  return found->second;
}

at::Layout serialized_layout(std::int64_t code) {
  switch (code) {
    case 1: return at::kSparse;
    case 2: return at::kSparseCsr;
    case 3: return at::kSparseCsc;
    case 4: return at::kSparseBsr;
    case 5: return at::kSparseBsc;
    case 6: return at::kMkldnn;
    case 7: return at::kStrided;
    default: throw std::invalid_argument(fmt::format("an unknown layout {}", code));
  }
}

at::MemoryFormat serialized_memory_format(std::int64_t code) {
  switch (code) {
    case 1: return at::MemoryFormat::Contiguous;
    case 2: return at::MemoryFormat::ChannelsLast;
    case 3: return at::MemoryFormat::ChannelsLast3d;
    case 4: return at::MemoryFormat::Preserve;
    default: throw std::invalid_argument(fmt::format("an unknown memory format {}", code));
  }
}

double serialized_float(const json& value) {
  if (value.is_number()) return value.get<double>();
  const std::string text = value.get<std::string>();
  if (text == "Infinity") return std::numeric_limits<double>::infinity();
  if (text == "-Infinity") return -std::numeric_limits<double>::infinity();
  if (text == "NaN") return std::numeric_limits<double>::quiet_NaN();
  throw std::invalid_argument(fmt::format("a float written \"{}\"", text));
}

std::pair<std::string, const json&> union_entry(const json& value) {
  const auto entry = value.begin();
  if (!value.is_object() || entry == value.end()) throw std::invalid_argument("an empty union");
  return {entry.key(), entry.value()};
}

c10::Device serialized_device(const json& device) {
  const std::string type = device.at("type").get<std::string>();
  const json& index = device.contains("index") ? device.at("index") : json();
  return index.is_null() ? c10::Device(type) : c10::Device(fmt::format("{}:{}", type, index.get<std::int64_t>()));
}

Arithmetic arithmetic(const std::string& target) {
  static const std::map<std::string, Arithmetic> kTargets = {
      {"_operator.add", Arithmetic::kAdd},      {"_operator.sub", Arithmetic::kSub},
      {"_operator.mul", Arithmetic::kMul},      {"_operator.floordiv", Arithmetic::kFloorDiv},
      {"_operator.truediv", Arithmetic::kTrueDiv}, {"_operator.mod", Arithmetic::kMod},
      {"_operator.neg", Arithmetic::kNeg},      {"_operator.eq", Arithmetic::kEq},
      {"_operator.ne", Arithmetic::kNe},        {"_operator.lt", Arithmetic::kLt},
      {"_operator.le", Arithmetic::kLe},        {"_operator.gt", Arithmetic::kGt},
      {"_operator.ge", Arithmetic::kGe},        {"torch.sym_max", Arithmetic::kMax},
      {"torch.sym_min", Arithmetic::kMin},      {"torch.sym_not", Arithmetic::kNot},
      {"_operator.not_", Arithmetic::kNot}};
  const auto found = kTargets.find(target);
  return found == kTargets.end() ? Arithmetic::kNone : found->second;
}

c10::IValue compute(Arithmetic op, const std::vector<c10::IValue>& in) {
  const auto number = [](const c10::IValue& v) { return v.isInt() ? static_cast<double>(v.toInt()) : v.isBool() ? static_cast<double>(v.toBool()) : v.toDouble(); };
  const bool ints = std::all_of(in.begin(), in.end(), [](const c10::IValue& v) { return v.isInt() || v.isBool(); });
  const auto integer = [](const c10::IValue& v) { return v.isInt() ? v.toInt() : static_cast<std::int64_t>(v.toBool()); };
  switch (op) {
    case Arithmetic::kNeg: return ints ? c10::IValue(-integer(in[0])) : c10::IValue(-number(in[0]));
    case Arithmetic::kNot: return c10::IValue(number(in[0]) == 0.0);
    case Arithmetic::kTrueDiv: return c10::IValue(number(in[0]) / number(in[1]));
    case Arithmetic::kEq: return c10::IValue(number(in[0]) == number(in[1]));
    case Arithmetic::kNe: return c10::IValue(number(in[0]) != number(in[1]));
    case Arithmetic::kLt: return c10::IValue(number(in[0]) < number(in[1]));
    case Arithmetic::kLe: return c10::IValue(number(in[0]) <= number(in[1]));
    case Arithmetic::kGt: return c10::IValue(number(in[0]) > number(in[1]));
    case Arithmetic::kGe: return c10::IValue(number(in[0]) >= number(in[1]));
    default: break;
  }
  if (!ints) {
    const double a = number(in[0]);
    const double b = number(in[1]);
    switch (op) {
      case Arithmetic::kAdd: return a + b;
      case Arithmetic::kSub: return a - b;
      case Arithmetic::kMul: return a * b;
      case Arithmetic::kFloorDiv: return std::floor(a / b);
      case Arithmetic::kMod: return a - std::floor(a / b) * b;
      case Arithmetic::kMax: return std::max(a, b);
      case Arithmetic::kMin: return std::min(a, b);
      default: break;
    }
  }
  const std::int64_t a = integer(in[0]);
  const std::int64_t b = integer(in[1]);
  switch (op) {
    case Arithmetic::kAdd: return a + b;
    case Arithmetic::kSub: return a - b;
    case Arithmetic::kMul: return a * b;
    case Arithmetic::kFloorDiv: {
      TORCH_CHECK(b != 0, "integer division by zero in the program's sizes");
      const std::int64_t q = a / b;
      return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
    }
    case Arithmetic::kMod: {
      TORCH_CHECK(b != 0, "integer modulo by zero in the program's sizes");
      const std::int64_t r = a % b;
      return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
    case Arithmetic::kMax: return std::max(a, b);
    case Arithmetic::kMin: return std::min(a, b);
    default: break;
  }
  TORCH_CHECK(false, "unhandled arithmetic");
}

}  // namespace headscan

#include "analyzer/model/torchscript/pickle_scan.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "analyzer/errors.h"

namespace headscan {
namespace {

constexpr const char* kExport = kExportAgain;

// Bytes per element of the storage classes a TorchScript pickle names (torch.FloatStorage, …),
// one per c10::ScalarType that LibTorch unpickles (those of 1.13, and the unsigned, float8 and bits
// types of torch 2.x).
std::optional<std::int64_t> storage_itemsize(const std::string& global) {
  static const std::map<std::string, std::int64_t> kSizes = {
      {"torch.ByteStorage", 1},        {"torch.CharStorage", 1},         {"torch.ShortStorage", 2},
      {"torch.IntStorage", 4},         {"torch.LongStorage", 8},         {"torch.HalfStorage", 2},
      {"torch.FloatStorage", 4},       {"torch.DoubleStorage", 8},       {"torch.ComplexHalfStorage", 4},
      {"torch.ComplexFloatStorage", 8}, {"torch.ComplexDoubleStorage", 16}, {"torch.BoolStorage", 1},
      {"torch.QInt8Storage", 1},       {"torch.QUInt8Storage", 1},       {"torch.QInt32Storage", 4},
      {"torch.BFloat16Storage", 2},    {"torch.QUInt4x2Storage", 1},     {"torch.QUInt2x4Storage", 1},
      {"torch.UInt16Storage", 2},      {"torch.UInt32Storage", 4},       {"torch.UInt64Storage", 8},
      {"torch.Float8_e5m2Storage", 1}, {"torch.Float8_e4m3fnStorage", 1}, {"torch.Float8_e5m2fnuzStorage", 1},
      {"torch.Float8_e4m3fnuzStorage", 1}, {"torch.Float8_e8m0fnuStorage", 1}, {"torch.Bits8Storage", 1},
      {"torch.Bits16Storage", 2}};
  const auto found = kSizes.find(global);
  if (found == kSizes.end()) return std::nullopt;
  return found->second;
}

// A value on the pickle machine's stack. Only what the storage and tensor checks need is kept:
// numbers, strings, globals, storages and tuples at most two deep (a tensor's arguments hold its
// sizes); everything else is an opaque "other", so no input builds deep or large structures.
struct Value {
  enum class Kind { other, none, number, text, global, tuple, storage } kind = Kind::other;
  std::int64_t number = 0;
  std::shared_ptr<const std::string> text;          // text, global ("module.name")
  std::shared_ptr<const std::vector<Value>> items;  // tuple; null when too deep to keep
  std::shared_ptr<const PickledStorage> storage;
};

bool is_flat(const Value& value) { return value.items == nullptr; }

class PickleScanner {
 public:
  PickleScanner(const std::string& bytes, const std::string& origin) : bytes_(bytes), origin_(origin) {}

  std::vector<PickledStorage> run() {
    if (bytes_.size() < 2 || static_cast<unsigned char>(bytes_[0]) != 0x80 || bytes_[1] != 2) {
      fail("it does not start with a protocol-2 pickle header");
    }
    position_ = 2;
    while (true) {
      if (position_ >= bytes_.size()) fail("it ends before its STOP opcode");
      opcode_at_ = position_;
      const unsigned char opcode = static_cast<unsigned char>(bytes_[position_++]);
      if (opcode == '.') break;  // STOP
      step(opcode);
    }
    return std::move(storages_);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InputError(fmt::format("{}: damaged pickle at byte {}: {}; {}", origin_, opcode_at_, what, kExport));
  }

  const char* take(std::size_t count) {
    if (bytes_.size() - position_ < count) fail("it ends inside an opcode's argument");
    const char* start = bytes_.data() + position_;
    position_ += count;
    return start;
  }
  template <typename T>
  T read() {
    T value;
    std::memcpy(&value, take(sizeof value), sizeof value);  // little-endian, as x86 and ARM are
    return value;
  }
  std::string read_line() {
    const std::size_t end = bytes_.find('\n', position_);
    if (end == std::string::npos) fail("a GLOBAL name has no end of line");
    std::string line = bytes_.substr(position_, end - position_);
    position_ = end + 1;
    return line;
  }

  Value pop() {
    if (stack_.size() <= floor()) fail("an opcode takes more values than the stack holds");
    Value value = std::move(stack_.back());
    stack_.pop_back();
    return value;
  }
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  // The values above the last MARK, which is removed.
  std::vector<Value> pop_to_mark() {
    if (marks_.empty()) fail("an opcode needs a MARK and there is none");
    const std::size_t mark = marks_.back();
    marks_.pop_back();
    std::vector<Value> values(std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(mark)),
                              std::make_move_iterator(stack_.end()));
    stack_.resize(mark);
    return values;
  }
  void push_number(std::int64_t number) {
    Value value;
    value.kind = Value::Kind::number;
    value.number = number;
    stack_.push_back(std::move(value));
  }
  void push(Value::Kind kind) {
    Value value;
    value.kind = kind;
    stack_.push_back(std::move(value));
  }
  void push_tuple(std::vector<Value> items) {
    Value tuple;
    tuple.kind = Value::Kind::tuple;
    const bool keep = std::all_of(items.begin(), items.end(), [](const Value& item) {
      return is_flat(item) || std::all_of(item.items->begin(), item.items->end(), is_flat);
    });
    if (keep) tuple.items = std::make_shared<const std::vector<Value>>(std::move(items));
    stack_.push_back(std::move(tuple));
  }
  void put(std::size_t id) {
    if (stack_.empty()) fail("PUT with an empty stack");
    if (id > memo_.size()) fail(fmt::format("memo id {} skips ids (the memo holds {})", id, memo_.size()));
    if (id == memo_.size()) {
      memo_.push_back(stack_.back());
    } else {
      memo_[id] = stack_.back();
    }
  }
  void get(std::size_t id) {
    if (id >= memo_.size()) fail(fmt::format("memo id {} was never stored", id));
    stack_.push_back(memo_[id]);
  }

  void persistent_id() {
    const Value id = pop();
    const auto* items = id.kind == Value::Kind::tuple ? id.items.get() : nullptr;
    if (items == nullptr || items->size() != 5 || (*items)[0].kind != Value::Kind::text ||
        *(*items)[0].text != "storage" || (*items)[1].kind != Value::Kind::global ||
        (*items)[2].kind != Value::Kind::text || (*items)[3].kind != Value::Kind::text ||
        (*items)[4].kind != Value::Kind::number) {
      fail("a persistent id is not (\"storage\", type, key, device, numel)");
    }
    const std::string& type = *(*items)[1].text;
    const auto itemsize = storage_itemsize(type);
    if (!itemsize) fail(fmt::format("unknown storage type {}", type));
    const std::int64_t numel = (*items)[4].number;
    if (numel < 0 || numel > (std::int64_t{1} << 62) / *itemsize) {
      fail(fmt::format("storage {} has {} elements", *(*items)[2].text, numel));
    }
    auto storage = std::make_shared<PickledStorage>();
    storage->key = *(*items)[2].text;
    storage->type = type.substr(type.find('.') + 1);
    storage->numel = numel;
    storage->itemsize = *itemsize;
    storages_.push_back(*storage);
    Value value;
    value.kind = Value::Kind::storage;
    value.storage = std::move(storage);
    stack_.push_back(std::move(value));
  }

  // torch._utils._rebuild_tensor_v2(storage, offset, sizes, strides, …): the view must lie within
  // the storage, or LibTorch reads beyond it.
  void rebuild_tensor(const Value& args) {
    const auto* items = args.kind == Value::Kind::tuple ? args.items.get() : nullptr;
    if (items == nullptr || items->size() < 4 || (*items)[0].kind != Value::Kind::storage ||
        (*items)[1].kind != Value::Kind::number || (*items)[2].kind != Value::Kind::tuple ||
        (*items)[3].kind != Value::Kind::tuple || !(*items)[2].items || !(*items)[3].items) {
      fail("a tensor's arguments are not (storage, offset, sizes, strides, …)");
    }
    const PickledStorage& storage = *(*items)[0].storage;
    const auto& sizes = *(*items)[2].items;
    const auto& strides = *(*items)[3].items;
    if (sizes.size() != strides.size()) fail("a tensor has a different number of sizes and strides");
    const std::int64_t offset = (*items)[1].number;
    if (offset < 0) fail("a tensor has a negative storage offset");
    std::int64_t last = offset;  // the last element the view reaches
    bool empty = false;
    for (std::size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d].kind != Value::Kind::number || strides[d].kind != Value::Kind::number) {
        fail("a tensor's sizes or strides are not integers");
      }
      if (sizes[d].number < 0 || strides[d].number < 0) fail("a tensor has a negative size or stride");
      if (sizes[d].number == 0) empty = true;
      std::int64_t reach = 0;
      if (__builtin_mul_overflow(sizes[d].number - (sizes[d].number > 0 ? 1 : 0), strides[d].number, &reach) ||
          __builtin_add_overflow(last, reach, &last)) {
        fail("a tensor's sizes and strides overflow");
      }
    }
    if (!empty && last >= storage.numel) {
      fail(fmt::format("a tensor reaches element {} of storage {}, which holds {}", last,
                       storage.key, storage.numel));
    }
  }

  void step(unsigned char opcode) {
    switch (opcode) {
      case '(': marks_.push_back(stack_.size()); break;                           // MARK
      case ']': case '}': push(Value::Kind::other); break;                        // EMPTY_LIST, EMPTY_DICT
      case ')': push_tuple({}); break;                                            // EMPTY_TUPLE
      case 'N': push(Value::Kind::none); break;                                   // NONE
      case 0x88: push_number(1); break;                                           // NEWTRUE
      case 0x89: push_number(0); break;                                           // NEWFALSE
      case 'K': push_number(read<std::uint8_t>()); break;                         // BININT1
      case 'M': push_number(read<std::uint16_t>()); break;                        // BININT2
      case 'J': push_number(read<std::int32_t>()); break;                         // BININT
      case 0x8a:                                                                  // LONG1
        if (read<std::uint8_t>() != 8) fail("a LONG1 is not 8 bytes long (LibTorch reads only those)");
        push_number(read<std::int64_t>());
        break;
      case 'G': take(8); push(Value::Kind::other); break;                         // BINFLOAT
      case 'X': {                                                                 // BINUNICODE
        const std::uint32_t length = read<std::uint32_t>();
        Value value;
        value.kind = Value::Kind::text;
        value.text = std::make_shared<const std::string>(take(length), length);
        stack_.push_back(std::move(value));
        break;
      }
      case 'c': {                                                                 // GLOBAL
        std::string module = read_line();
        Value value;
        value.kind = Value::Kind::global;
        value.text = std::make_shared<const std::string>(module + "." + read_line());
        stack_.push_back(std::move(value));
        break;
      }
      case 't': push_tuple(pop_to_mark()); break;                                 // TUPLE
      case 0x85: { Value a = pop(); push_tuple({std::move(a)}); break; }          // TUPLE1
      case 0x86: {                                                                // TUPLE2
        Value b = pop();
        Value a = pop();
        push_tuple({std::move(a), std::move(b)});
        break;
      }
      case 0x87: {                                                                // TUPLE3
        Value c = pop();
        Value b = pop();
        Value a = pop();
        push_tuple({std::move(a), std::move(b), std::move(c)});
        break;
      }
      case 'l': case 'd': pop_to_mark(); push(Value::Kind::other); break;         // LIST, DICT
      case 'e': case 'u':                                                         // APPENDS, SETITEMS
        pop_to_mark();
        if (stack_.size() <= floor()) fail("APPENDS or SETITEMS without a container");
        break;
      case 's': pop(); pop(); if (stack_.size() <= floor()) fail("SETITEM without a dict"); break;
      case 'q': put(read<std::uint8_t>()); break;                                 // BINPUT
      case 'r': put(read<std::uint32_t>()); break;                                // LONG_BINPUT
      case 'h': get(read<std::uint8_t>()); break;                                 // BINGET
      case 'j': get(read<std::uint32_t>()); break;                                // LONG_BINGET
      case 0x81: pop(); pop(); push(Value::Kind::other); break;                   // NEWOBJ
      case 'b': pop(); pop(); push(Value::Kind::other); break;                    // BUILD
      case 'R': {                                                                 // REDUCE
        const Value args = pop();
        const Value callable = pop();
        if (callable.kind == Value::Kind::global &&
            (*callable.text == "torch._utils._rebuild_tensor_v2" || *callable.text == "torch._utils._rebuild_qtensor")) {
          rebuild_tensor(args);
        }
        push(Value::Kind::other);
        break;
      }
      case 'Q': persistent_id(); break;                                           // BINPERSID
      default:
        fail(fmt::format("opcode 0x{:02x} is not one LibTorch's unpickler reads", opcode));
    }
  }

  const std::string& bytes_;
  const std::string& origin_;
  std::size_t position_ = 0;
  std::size_t opcode_at_ = 0;
  std::vector<Value> stack_;
  std::vector<std::size_t> marks_;
  std::vector<Value> memo_;
  std::vector<PickledStorage> storages_;
};

}  // namespace

std::vector<PickledStorage> scan_pickle(const std::string& bytes, const std::string& origin) {
  return PickleScanner(bytes, origin).run();
}

}  // namespace headscan

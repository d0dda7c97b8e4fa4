#pragma once
// link-grammar parses on threads of their own, beside whatever the caller does meanwhile (the
// model's forward calls): documents are handed in in corpus order and parsed in that order, except
// those the caller asks for first (PendingParse::prefer, PendingParse::get). A parse does not
// depend on the thread or the order it runs in (LinkGrammarParser: no time limit, repeatable
// random sampling), so the results are those of one parser reading the corpus in order.

#include <cstddef>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "analyzer/corpus/link_grammar_parser.h"

namespace headscan {

class ParsePool;

// One document's parse, queued, running or done.
class PendingParse : public std::enable_shared_from_this<PendingParse> {
 public:
  // The parse, once done: waits for it, asking for it before every document not asked for.
  // Rethrows what the parser threw.
  const LineParse& get();
  // Asks for this document before those not asked for (in the order of the calls); no wait.
  void prefer();
  bool done() const;

 private:
  friend class ParsePool;
  struct Shared;
  enum class State { queued, running, done };

  PendingParse(std::shared_ptr<Shared> shared, std::string text);

  std::shared_ptr<Shared> shared_;
  std::string text_;
  State state_ = State::queued;  // the members below text_ are guarded by Shared::mutex
  bool asked_ = false;           // prefer() queued it among the asked-for ones
  LineParse parse_;
  std::exception_ptr error_;
};

class ParsePool {
 public:
  // Loads link-grammar's English dictionary on this thread (LinkGrammarParser: it may set the
  // locale) and starts `threads` parsers (at least 1) that share it. Throws InputError when the
  // dictionary cannot be loaded.
  explicit ParsePool(std::size_t threads);
  // Stops the parsers; documents not parsed by then fail with an error when asked for.
  ~ParsePool();
  ParsePool(const ParsePool&) = delete;
  ParsePool& operator=(const ParsePool&) = delete;

  // Queues `text` (one corpus line, LinkGrammarParser::parse_line) behind those queued before.
  std::shared_ptr<PendingParse> submit(std::string text);
  std::size_t threads() const { return workers_.size(); }

 private:
  void work(LinkGrammarParser parser);

  std::shared_ptr<PendingParse::Shared> shared_;
  std::vector<std::thread> workers_;
};

// Parser threads beside `model_threads` threads of the model's forward on `cores` cores (0:
// unknown): the cores the model leaves idle, at least 1 and at most 16.
std::size_t parser_threads(std::size_t cores, std::size_t model_threads);

// The cores this process may run on (its CPU affinity: a Slurm job's or taskset's share of the
// machine), else std::thread::hardware_concurrency(); 0 when unknown.
std::size_t usable_cores();

}  // namespace headscan

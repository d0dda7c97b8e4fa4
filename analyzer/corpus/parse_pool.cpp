#include "analyzer/corpus/parse_pool.h"

#include <sched.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <utility>

namespace headscan {
namespace {

// Past this many, the documents waiting in the corpus pass's batcher rarely keep more busy.
constexpr std::size_t kMaxParserThreads = 16;

}  // namespace

// What the pool's threads and the documents' handles share.
struct PendingParse::Shared {
  std::mutex mutex;
  std::condition_variable queued;  // a document to parse, or stopping
  std::condition_variable parsed;  // a document parsed
  std::deque<std::shared_ptr<PendingParse>> asked;     // prefer() and get(), in their order
  std::deque<std::shared_ptr<PendingParse>> in_order;  // every document, as submitted
  bool stopping = false;

  // The next document to parse, asked-for ones first; null when none is waiting.
  std::shared_ptr<PendingParse> take() {
    for (auto* queue : {&asked, &in_order}) {
      while (!queue->empty()) {
        std::shared_ptr<PendingParse> next = std::move(queue->front());
        queue->pop_front();
        if (next->state_ == State::queued) return next;
      }
    }
    return nullptr;
  }
};

PendingParse::PendingParse(std::shared_ptr<Shared> shared, std::string text)
    : shared_(std::move(shared)), text_(std::move(text)) {}

const LineParse& PendingParse::get() {
  std::unique_lock<std::mutex> lock(shared_->mutex);
  if (state_ == State::queued) {  // the caller waits for it: it goes before every other
    shared_->asked.push_front(shared_from_this());
    shared_->queued.notify_one();
  }
  shared_->parsed.wait(lock, [this] { return state_ == State::done; });
  if (error_) std::rethrow_exception(error_);
  return parse_;
}

void PendingParse::prefer() {
  const std::lock_guard<std::mutex> lock(shared_->mutex);
  if (state_ != State::queued || asked_) return;
  asked_ = true;
  shared_->asked.push_back(shared_from_this());
  shared_->queued.notify_one();
}

bool PendingParse::done() const {
  const std::lock_guard<std::mutex> lock(shared_->mutex);
  return state_ == State::done;
}

ParsePool::ParsePool(std::size_t threads) : shared_(std::make_shared<PendingParse::Shared>()) {
  // Every parser is made here, on the caller's thread: loading the dictionary may set the locale.
  LinkGrammarParser first;
  std::vector<LinkGrammarParser> parsers;
  for (std::size_t i = 1; i < std::max<std::size_t>(threads, 1); ++i) parsers.push_back(first.sharing_dictionary());
  parsers.push_back(std::move(first));
  for (LinkGrammarParser& parser : parsers) {
    workers_.emplace_back([this, parser = std::move(parser)]() mutable { work(std::move(parser)); });
  }
}

ParsePool::~ParsePool() {
  {
    const std::lock_guard<std::mutex> lock(shared_->mutex);
    shared_->stopping = true;
  }
  shared_->queued.notify_all();
  for (std::thread& worker : workers_) worker.join();
  // Documents never parsed: asking for one is an error, not a wait without end.
  const std::lock_guard<std::mutex> lock(shared_->mutex);
  for (std::shared_ptr<PendingParse> left = shared_->take(); left != nullptr; left = shared_->take()) {
    left->state_ = PendingParse::State::done;
    left->error_ = std::make_exception_ptr(std::logic_error("link-grammar's parsers stopped before this document"));
  }
  shared_->parsed.notify_all();
}

std::shared_ptr<PendingParse> ParsePool::submit(std::string text) {
  std::shared_ptr<PendingParse> pending(new PendingParse(shared_, std::move(text)));
  const std::lock_guard<std::mutex> lock(shared_->mutex);
  shared_->in_order.push_back(pending);
  shared_->queued.notify_one();
  return pending;
}

void ParsePool::work(LinkGrammarParser parser) {
  PendingParse::Shared& shared = *shared_;
  std::unique_lock<std::mutex> lock(shared.mutex);
  for (;;) {
    std::shared_ptr<PendingParse> next;
    shared.queued.wait(lock, [&] { return shared.stopping || (next = shared.take()) != nullptr; });
    if (next == nullptr) return;  // stopping
    next->state_ = PendingParse::State::running;
    lock.unlock();
    LineParse parse;
    std::exception_ptr error;
    try {
      parse = parser.parse_line(next->text_);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    next->parse_ = std::move(parse);
    next->error_ = error;
    next->text_.clear();
    next->text_.shrink_to_fit();
    next->state_ = PendingParse::State::done;
    shared.parsed.notify_all();
  }
}

std::size_t parser_threads(std::size_t cores, std::size_t model_threads) {
  const std::size_t idle = cores > model_threads ? cores - model_threads : 0;
  return std::clamp<std::size_t>(idle, 1, kMaxParserThreads);
}

std::size_t usable_cores() {
  cpu_set_t cores;
  CPU_ZERO(&cores);
  if (sched_getaffinity(0, sizeof(cores), &cores) == 0) return static_cast<std::size_t>(CPU_COUNT(&cores));
  return std::thread::hardware_concurrency();
}

}  // namespace headscan

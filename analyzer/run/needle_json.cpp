#include "analyzer/run/needle_json.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "analyzer/run/sequences/needles.h"
#include "heads/registry.h"

namespace headscan {
namespace {

using Json = nlohmann::ordered_json;

// events / candidates, rounded to 6 decimals as scores are; null without a candidate.
Json share(std::int64_t events, std::int64_t candidates) {
  if (candidates <= 0) return Json();
  return std::round(static_cast<double>(events) / static_cast<double>(candidates) * 1e6) / 1e6;
}

}  // namespace

Json needle_json(const NeedleSummary& summary) {
  // Per depth over every length: the figure of a run of one length.
  Json accuracy = Json::array();
  std::int64_t events = 0;
  std::int64_t candidates = 0;
  for (std::size_t depth = 0; depth < kNeedleDepths.size() && !summary.cells.empty(); ++depth) {
    std::int64_t depth_events = 0;
    std::int64_t depth_candidates = 0;
    for (const auto& cells : summary.cells) {
      depth_events += cells[depth].events;
      depth_candidates += cells[depth].candidates;
    }
    accuracy.push_back(depth_candidates > 0 ? Json(static_cast<double>(depth_events) / static_cast<double>(depth_candidates))
                                            : Json());
    events += depth_events;
    candidates += depth_candidates;
  }
  Json grid_probes = Json::array();
  Json grid_candidates = Json::array();
  Json grid_events = Json::array();
  Json grid_accuracy = Json::array();
  for (const auto& cells : summary.cells) {
    Json probes = Json::array(), asked = Json::array(), copied = Json::array(), shares = Json::array();
    for (const NeedleCell& cell : cells) {
      probes.push_back(cell.probes);
      asked.push_back(cell.candidates);
      copied.push_back(cell.events);
      shares.push_back(share(cell.events, cell.candidates));
    }
    grid_probes.push_back(std::move(probes));
    grid_candidates.push_back(std::move(asked));
    grid_events.push_back(std::move(copied));
    grid_accuracy.push_back(std::move(shares));
  }
  Json head_hits = Json::array();
  for (int layer = 0; layer < summary.layers && !summary.head_hits.empty(); ++layer) {
    Json heads = Json::array();
    for (int head = 0; head < summary.heads; ++head) {
      Json lengths = Json::array();
      for (std::size_t length = 0; length < summary.lengths.size(); ++length) {
        Json depths = Json::array();
        for (std::size_t depth = 0; depth < kNeedleDepths.size(); ++depth) {
          depths.push_back(summary.hits(layer, head, length, depth));
        }
        lengths.push_back(std::move(depths));
      }
      heads.push_back(std::move(lengths));
    }
    head_hits.push_back(std::move(heads));
  }
  Json section = {{"probes", summary.probes()},
                  {"haystacks", kHaystacks},
                  {"needle_length", kNeedleLength},
                  {"haystack_tokens", summary.haystack_length.empty() ? 0 : summary.haystack_length.back()},
                  {"depths", kNeedleDepths},
                  {"copy_accuracy", std::move(accuracy)},
                  {"copy_events", events},
                  {"candidates", candidates},
                  {"minimum_events", kMinimumCopyEvents},
                  {"lengths", summary.lengths},
                  {"grid", {{"haystack_tokens", summary.haystack_length},
                            {"probes", std::move(grid_probes)},
                            {"candidates", std::move(grid_candidates)},
                            {"copy_events", std::move(grid_events)},
                            {"copy_accuracy", std::move(grid_accuracy)}}},
                  {"head_hits", std::move(head_hits)}};
  if (!summary.note.empty()) section["note"] = summary.note;
  return section;
}

}  // namespace headscan

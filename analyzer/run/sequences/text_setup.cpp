#include "analyzer/run/sequences/text_setup.h"

#include "analyzer/model/model_archive.h"

#include <fmt/format.h>

#include "analyzer/errors.h"

namespace headscan {

TextSetup resolve_text_setup(const TextSources& sources) {
  TextSetup setup;
  if (!sources.tokenizer_path.empty()) {
    setup.tokenizer = load_tokenizer_file(sources.tokenizer_path);
    setup.tokenizer_description = fmt::format("{} ({})", setup.tokenizer->describe(), sources.tokenizer_path);
  } else if (sources.model_path.empty()) {
    throw InputError("no tokenizer; give MODEL.pt or --tokenizer FILE (tokenizer.json or .model)");
  } else if (sources.embedded_tokenizer.empty()) {
    throw InputError(fmt::format(
        "{}: no tokenizer: the archive holds no tokenizer.json; pass --tokenizer FILE (a Hugging Face "
        "tokenizer.json or a SentencePiece .model), or save it inside the model with torch.jit.save(m, path, "
        "_extra_files={{\"tokenizer.json\": text}})",
        sources.model_path));
  } else {
    const std::string origin = sources.model_path + ":tokenizer.json";
    setup.tokenizer = tokenizer_from_hf_json(sources.embedded_tokenizer, origin);
    setup.tokenizer_description = fmt::format("{} ({})", setup.tokenizer->describe(), origin);
  }

  const ModelMetadata none;
  const ModelMetadata& metadata = sources.metadata != nullptr ? *sources.metadata : none;
  const std::string metadata_origin =
      sources.model_path.empty() ? std::string("headscan.json") : sources.model_path + ":headscan.json";
  // headscan.json's BOS, else the tokenizer template's single leading special token; after the
  // text, the template's suffix in either case.
  setup.bos = choose_bos(*setup.tokenizer, metadata.bos_token, metadata_origin);
  if (setup.bos) setup.shape.bos_id = setup.bos->id;
  setup.shape.suffix_ids = template_suffix_ids(*setup.tokenizer);

  if (sources.max_length != 0 && sources.max_length < 2) {
    throw InputError(fmt::format("--max-length {}: sequences need at least 2 tokens", sources.max_length));
  }
  setup.shape.max_length = sources.max_length > 0 ? sources.max_length
                           : metadata.max_length  ? *metadata.max_length
                                                  : kDefaultMaxLength;
  const std::size_t framing = setup.shape.framing();
  if (setup.shape.max_length <= static_cast<std::int64_t>(framing)) {
    std::string suffix;
    for (const std::string& token : setup.tokenizer->template_suffix()) suffix += " " + token;
    throw InputError(fmt::format("max_length {} leaves no room for text: BOS{} and the tokenizer template's suffix{} "
                                 "take {} token(s) of every window; set --max-length to at least {}",
                                 setup.shape.max_length, setup.bos ? " " + setup.bos->token : " (none)",
                                 suffix.empty() ? " (none)" : suffix, framing, framing + 1));
  }
  if (sources.max_length == 0 && !metadata.max_length && !sources.model_path.empty()) {
    setup.warnings.push_back(fmt::format("{} has no max_length in headscan.json: sequences are cut at {} tokens "
                                         "(set --max-length to the model's context)",
                                         sources.model_path, kDefaultMaxLength));
  }
  return setup;
}

TextSetup load_text_setup(const std::string& model_path, const std::string& tokenizer_path, std::int64_t max_length) {
  ModelArchiveExtras extras;
  ModelMetadata metadata;
  if (!model_path.empty()) {
    extras = read_model_extras(model_path);
    metadata = parse_model_metadata(extras.headscan_json, model_path + ":headscan.json");
  }
  return resolve_text_setup(TextSources{tokenizer_path, model_path, extras.tokenizer_json, &metadata, max_length});
}

}  // namespace headscan

"""The models of tests/hf/check_export_hf.py: the test corpus, tokenizers in the styles of the model
families trained on it, and the architectures (a transformers config each, randomly initialized,
saved as a Hugging Face model directory by build_model_dir)."""

import json
import os

import torch

MAX_POSITIONS = 64  # the models' positions: lines longer than this become several windows

CORPUS = [
    "The cat sat on the mat and the dog sat on the rug.",
    "A quick brown fox jumps over the lazy dog while the cat watches from the window.",
    "Tokens repeat: alpha beta gamma delta, alpha beta gamma delta, alpha beta gamma delta.",
    "Short line.",
    "In the beginning the model saw only random weights, and every head attended wherever its "
    "random queries and keys pointed; long lines like this one are cut into windows of at most "
    "sixty-four tokens, each window starting again with the same first token, so that the "
    "analysis sees the beginning of a sequence in every window it runs.",
    "She sells sea shells by the sea shore.",
    "Numbers 1 2 3 4 5 6 7 8 9 10 and symbols !? ; : are tokens too.",
    "Why do heads attend to the first token? Because it is always there.",
    "Another sentence, with commas, and a final period.",
    "x",
    "The end of the corpus is near, said the last line of the corpus.",
]


# ---------------------------------------------------------------------------------------------
# Tokenizers in the styles of the model families, trained on the corpus.



def train_tokenizer(style):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

    if style in ("bert", "bert_padded"):
        specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
        tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
        tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
        trainer = trainers.WordPieceTrainer(vocab_size=300, special_tokens=specials)
        tokenizer.train_from_iterator(CORPUS, trainer)
        tokenizer.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", tokenizer.token_to_id("[CLS]")), ("[SEP]", tokenizer.token_to_id("[SEP]"))])
        tokenizer.decoder = decoders.WordPiece()
        if style == "bert_padded":  # as sentence-transformers' tokenizer.json: every text padded to 128
            tokenizer.enable_padding(pad_id=tokenizer.token_to_id("[PAD]"), pad_token="[PAD]", length=128)
            tokenizer.enable_truncation(max_length=128)
        return tokenizer, {"pad": "[PAD]", "unk": "[UNK]", "cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]"}

    # Byte-level BPE (GPT-2, Qwen, NeoX, Llama 3 style), with a template per family.
    specials = {"gpt2": ["<|endoftext|>"],
                "llama": ["<unk>", "<s>", "</s>"],
                "roberta": ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]}[style]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train_from_iterator(CORPUS, trainer)
    if style == "gpt2":
        tokenizer.post_processor = processors.ByteLevel(trim_offsets=False)
        return tokenizer, {"bos": "<|endoftext|>", "eos": "<|endoftext|>"}
    if style == "llama":
        tokenizer.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s>:1 $B:1", special_tokens=[("<s>", tokenizer.token_to_id("<s>"))])
        return tokenizer, {"bos": "<s>", "eos": "</s>", "unk": "<unk>"}
    tokenizer.post_processor = processors.RobertaProcessing(("</s>", tokenizer.token_to_id("</s>")),
                                                            ("<s>", tokenizer.token_to_id("<s>")))
    return tokenizer, {"bos": "<s>", "eos": "</s>", "pad": "<pad>", "unk": "<unk>", "cls": "<s>", "sep": "</s>",
                       "mask": "<mask>"}


# ---------------------------------------------------------------------------------------------
# Architectures: the transformers class, a tiny config, the tokenizer style and what headscan.json
# must say. `required` ones are the list; the others are tried and reported.

SMALL = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
             max_position_embeddings=MAX_POSITIONS, initializer_range=0.25)


def ids_of(tokenizer, tokens):
    """The config's special token ids (encoders: BOS = [CLS], EOS = [SEP], as ModernBERT's config has)."""
    names = {"bos": tokens.get("bos", tokens.get("cls")), "eos": tokens.get("eos", tokens.get("sep")),
             "pad": tokens.get("pad"), "cls": tokens.get("cls"), "sep": tokens.get("sep")}
    return {f"{name}_token_id": tokenizer.token_to_id(token) for name, token in names.items() if token}


def architecture(name, cls, style, config, *, causal=None, kv_heads=None, required=False, bos=None, refusal=None,
                 refusal_exit=1, new_process=False, positions=MAX_POSITIONS, config_patch=None,
                 expected_name="model", notice=None, options=()):
    """refusal: export_hf.py must stop (exit refusal_exit) with this text in its message. new_process:
    export with `python scripts/export_hf.py` in a new process (see run_export). positions: the
    tokenizer's model_max_length (the config's positions are the config's). config_patch: fields
    written over config.json after the model is saved. notice: texts export_hf.py must print.
    options: export_hf.py's options after MODEL_DIR OUT.pt."""
    return dict(name=name, cls=cls, style=style, config=config, causal=causal, kv_heads=kv_heads,
                required=required, bos=bos, refusal=refusal, refusal_exit=refusal_exit, new_process=new_process,
                positions=positions, config_patch=config_patch, expected_name=expected_name, notice=notice,
                options=list(options))


# Qwen3-Next and Qwen3.5: linear-attention layers (a loop over chunks of 64 tokens, which the trace
# unrolls at its length) beside a full-attention one, with positions beyond one chunk.
LINEAR_ATTENTION = dict(SMALL, max_position_embeddings=256, num_key_value_heads=2, head_dim=16,
                        layer_types=["linear_attention", "full_attention"], linear_key_head_dim=16,
                        linear_value_head_dim=16, linear_num_key_heads=2, linear_num_value_heads=4)
UNROLLED_AT_TRACE = "tokens but not at 65"

ARCHITECTURES = [
    architecture("gpt2", "GPT2LMHeadModel", "gpt2",
                 lambda: ("GPT2Config", dict(n_layer=2, n_head=4, n_embd=64, n_positions=MAX_POSITIONS,
                                             initializer_range=0.25)),
                 causal=True, required=True, bos="<|endoftext|>", new_process=True),
    architecture("llama", "LlamaForCausalLM", "llama", lambda: ("LlamaConfig", dict(SMALL, num_key_value_heads=4)),
                 causal=True, kv_heads=4, required=True, bos="<s>"),
    architecture("qwen2", "Qwen2ForCausalLM", "gpt2", lambda: ("Qwen2Config", dict(SMALL, num_key_value_heads=2)),
                 causal=True, kv_heads=2, required=True, bos="<|endoftext|>"),
    architecture("gpt_neox", "GPTNeoXForCausalLM", "gpt2",
                 lambda: ("GPTNeoXConfig", dict(SMALL, rotary_pct=0.25)),
                 causal=True, required=True, bos="<|endoftext|>"),
    architecture("mixtral", "MixtralForCausalLM", "llama",
                 lambda: ("MixtralConfig", dict(SMALL, num_key_value_heads=2, num_local_experts=4,
                                                num_experts_per_tok=2, sliding_window=None)),
                 causal=True, kv_heads=2, required=True, bos="<s>"),
    architecture("bert", "BertForMaskedLM", "bert", lambda: ("BertConfig", dict(SMALL)),
                 causal=False, required=True, bos="[CLS]", new_process=True),
    # Tried beyond the list.
    architecture("mistral", "MistralForCausalLM", "llama",
                 lambda: ("MistralConfig", dict(SMALL, num_key_value_heads=2, sliding_window=None)),
                 causal=True, kv_heads=2, bos="<s>"),
    architecture("gemma", "GemmaForCausalLM", "llama",
                 lambda: ("GemmaConfig", dict(SMALL, num_key_value_heads=1, head_dim=16)),
                 causal=True, kv_heads=1, bos="<s>"),
    architecture("gemma2", "Gemma2ForCausalLM", "llama",
                 lambda: ("Gemma2Config", dict(SMALL, num_key_value_heads=2, head_dim=16, sliding_window=4096,
                                               query_pre_attn_scalar=16)),
                 causal=True, kv_heads=2, bos="<s>"),
    architecture("phi3", "Phi3ForCausalLM", "llama",
                 lambda: ("Phi3Config", dict(SMALL, num_key_value_heads=2, pad_token_id=None)),
                 causal=True, kv_heads=2, bos="<s>"),
    architecture("qwen3_moe", "Qwen3MoeForCausalLM", "gpt2",
                 lambda: ("Qwen3MoeConfig", dict(SMALL, num_key_value_heads=2, head_dim=16, num_experts=4,
                                                 num_experts_per_tok=2, moe_intermediate_size=32,
                                                 decoder_sparse_step=1)),
                 causal=True, kv_heads=2, bos="<|endoftext|>"),
    architecture("olmoe", "OlmoeForCausalLM", "gpt2",
                 lambda: ("OlmoeConfig", dict(SMALL, num_key_value_heads=4, num_experts=4, num_experts_per_tok=2)),
                 causal=True, kv_heads=4, bos="<|endoftext|>"),
    architecture("deepseek_v3", "DeepseekV3ForCausalLM", "llama",
                 lambda: ("DeepseekV3Config", dict(SMALL, num_key_value_heads=4, moe_intermediate_size=32,
                                                   n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
                                                   n_group=1, topk_group=1, first_k_dense_replace=1,
                                                   kv_lora_rank=16, q_lora_rank=32, qk_rope_head_dim=8,
                                                   qk_nope_head_dim=8, v_head_dim=16,
                                                   rope_parameters={"rope_type": "default", "rope_theta": 10000.0})),
                 causal=True, kv_heads=4, bos="<s>"),
    architecture("gpt_oss", "GptOssForCausalLM", "gpt2",
                 lambda: ("GptOssConfig", dict(SMALL, num_key_value_heads=2, head_dim=16, num_local_experts=4,
                                               num_experts_per_tok=2, sliding_window=128)),
                 causal=True, kv_heads=2, bos="<|endoftext|>"),
    architecture("modernbert", "ModernBertForMaskedLM", "bert",
                 lambda: ("ModernBertConfig", dict(SMALL, local_attention=128, global_attn_every_n_layers=2)),
                 causal=False, bos="[CLS]"),
    architecture("roberta", "RobertaForMaskedLM", "roberta",
                 lambda: ("RobertaConfig", dict(SMALL, max_position_embeddings=MAX_POSITIONS + 2)),
                 causal=False, bos="<s>"),
    # A sentence-transformers encoder: no language-model head, a tokenizer.json that pads and
    # truncates to 128, a folder named `model` and the model's name in _name_or_path.
    architecture("bert_no_head", "BertModel", "bert_padded", lambda: ("BertConfig", dict(SMALL)),
                 causal=False, required=True, bos="[CLS]", config_patch={"_name_or_path": "org/tiny-embedder"},
                 expected_name="org/tiny-embedder",
                 notice=["BertModel has no language-model head", "no repeat_loss", "--ablation is refused"]),
    # Refused: exact only up to one chunk of linear attention; a config.json that says 10 million
    # layers beside a small model's weights (transformers would build the layers, then load).
    architecture("qwen3_next", "Qwen3NextForCausalLM", "gpt2",
                 lambda: ("Qwen3NextConfig", dict(LINEAR_ATTENTION, num_experts=4, num_experts_per_tok=2,
                                                  moe_intermediate_size=32, shared_expert_intermediate_size=32)),
                 required=True, refusal=UNROLLED_AT_TRACE, positions=256),
    architecture("qwen3_5", "Qwen3_5ForCausalLM", "gpt2", lambda: ("Qwen3_5TextConfig", dict(LINEAR_ATTENTION)),
                 required=True, refusal=UNROLLED_AT_TRACE, positions=256),
    # The same model within one chunk, where its trace is exact: exported and analysed right.
    architecture("qwen3_next_64", "Qwen3NextForCausalLM", "gpt2",
                 lambda: ("Qwen3NextConfig", dict(LINEAR_ATTENTION, num_experts=4, num_experts_per_tok=2,
                                                  moe_intermediate_size=32, shared_expert_intermediate_size=32)),
                 causal=True, kv_heads=2, required=True, bos="<|endoftext|>", positions=256,
                 options=["--max-length", str(MAX_POSITIONS)]),
    architecture("huge", "LlamaForCausalLM", "llama", lambda: ("LlamaConfig", dict(SMALL)),
                 config_patch={"num_hidden_layers": 10_000_000}, required=True,
                 refusal="at least 3.28e+11 parameters (10000000 layers", refusal_exit=2),
]
BY_NAME = {a["name"]: a for a in ARCHITECTURES}


def build_model_dir(arch, model_dir):
    """A tokenizer and a randomly initialized model saved as a Hugging Face model directory."""
    import transformers
    from transformers import PreTrainedTokenizerFast

    tokenizer, tokens = train_tokenizer(arch["style"])
    config_name, fields = arch["config"]()
    config_cls = getattr(transformers, config_name)
    vocab = tokenizer.get_vocab_size()
    config = config_cls(vocab_size=vocab, **fields, **ids_of(tokenizer, tokens))
    torch.manual_seed(0)
    model = getattr(transformers, arch["cls"])(config).eval()
    if arch.get("weights"):
        with torch.no_grad():
            arch["weights"](model)
    os.makedirs(model_dir, exist_ok=True)
    model.save_pretrained(model_dir)
    if arch["config_patch"]:
        config_path = os.path.join(model_dir, "config.json")
        with open(config_path, encoding="utf-8") as f:
            stored = json.load(f)
        with open(config_path, "w", encoding="utf-8") as f:
            json.dump(dict(stored, **arch["config_patch"]), f, indent=2)
    special = {f"{k}_token": v for k, v in tokens.items()}
    PreTrainedTokenizerFast(tokenizer_object=tokenizer, model_max_length=arch["positions"],
                            **special).save_pretrained(model_dir)


# ---------------------------------------------------------------------------------------------
# Exported programs (tests/hf/check_export_pt2.py, `headscan export`): positions for 300 tokens and
# block sizes far below that (sliding windows of 16 tokens, attention chunks of 32, the 64-token
# chunks of linear attention, Mamba-2 chunks of 32), so that sequences of about 40 and 300 tokens
# cross them. `kinds`: every layer's kind as heads.json's model.layers must say it (None: every
# layer is attention); `refusal`: `headscan export` must exit 2 with this text in its message.

PT2_POSITIONS = 1024
WINDOW = 16
ATTENTION_CHUNK = 32
SSM_CHUNK = 32

FOUR_LAYERS = dict(SMALL, num_hidden_layers=4, max_position_embeddings=PT2_POSITIONS)
# Hybrids: a linear-attention or state-space layer, then an attention layer (its map is the first,
# its layer the second). Two layers only: torch.export of a chunked layer takes tens of seconds.
HYBRID_LAYERS = dict(SMALL, num_hidden_layers=2, max_position_embeddings=PT2_POSITIONS)
HYBRID_PATTERN = ["linear_attention", "full_attention"]
LINEAR_KINDS = ["linear attention", "attention"]
SSM_KINDS = ["state space", "attention"]
MAMBA2 = dict(mamba_n_heads=4, mamba_d_head=16, mamba_d_state=16, mamba_n_groups=1, mamba_chunk_size=SSM_CHUNK,
              mamba_expand=1)
# The reason headscan export gives for a model whose computation depends on the length through
# Python (a loop over chunks or tokens, a branch on the length).
DATA_DEPENDENT = "data-dependent control flow"


def pt2_architecture(name, cls, style, config, *, bos, causal=True, kinds=None, refusal=None, new_process=False,
                     max_length=None, eager=None, sdpa=None, run_options=(), weights=None):
    """max_length: `headscan export --max-length N`, and the longest sequence analysed (default 300).
    eager: the reason `headscan export` loads the model with eager attention (a text of it), or
    None where it keeps transformers' SDPA attention. sdpa: the reason it keeps transformers' SDPA
    attention rather than headscan's implementation (a text of it), or None. weights: a function
    that sets some of the random model's weights before it is saved."""
    arch = architecture(name, cls, style, config, causal=causal, bos=bos, refusal=refusal, refusal_exit=2,
                        new_process=new_process, positions=PT2_POSITIONS,
                        options=["--max-length", str(max_length)] if max_length else ())
    arch["kinds"] = kinds
    arch["max_length"] = max_length
    arch["eager"] = eager
    arch["sdpa"] = sdpa
    arch["run_options"] = list(run_options)
    arch["weights"] = weights
    return arch


def trained_qk_norms(model):
    """The attention's q_norm and k_norm at a gain of 2, not their initial 1 (zero-centred weights
    at 1, others at 2): a random model's queries and keys of unit RMS give logits of standard
    deviation 1, so its attention over 1,024 keys would be nearly uniform (hf_references' weak test):
    the models with q_norm and k_norm (Qwen3, Qwen3-MoE, OLMo 2, OLMoE, Apertus, the linear-attention
    hybrids)."""
    for name, module in model.named_modules():
        if name.endswith(("q_norm", "k_norm")) and isinstance(getattr(module, "weight", None), torch.Tensor):
            module.weight.fill_(1.0 if bool((module.weight == 0).all()) else 2.0)


def longer(name, eager=None, weights=None, **fields):
    """An architecture of ARCHITECTURES with positions for PT2_POSITIONS tokens and FIELDS over its config."""
    arch = BY_NAME[name]

    def config():
        config_name, stored = arch["config"]()
        positions = {key: PT2_POSITIONS + (2 if name == "roberta" else 0)
                     for key in ("max_position_embeddings", "n_positions") if key in stored}
        return config_name, dict(stored, **positions, **fields)

    return pt2_architecture(name, arch["cls"], arch["style"], config, bos=arch["bos"], causal=arch["causal"],
                            new_process=arch["new_process"], eager=eager, weights=weights)


# Why `headscan export` keeps eager attention for the models whose attention has no SDPA form
# (Gemma 2's soft-capping and gpt-oss's sinks are headscan::attention.windowed's).
DIFFERENTIAL = "more than once per map (differential attention)"
NO_SDPA = "has no SDPA attention"
# Why DeepSeek-V3.2 keeps SDPA attention's [B, 1, T, T] mask: its indexer reads the mask's rows.
INDEXER_MASK = "its output with headscan's attention differs from eager attention's"
# DeepSeek-V3.2's indexer keeps each query's top-k keys by index score, whose ties (many in a tiny
# random model: a sum over 2 heads of relu(q·k)) topk breaks by the row's width: a sequence padded in
# a batch may keep other keys than alone, in transformers as in the program. The reference is each
# sequence alone, so the analysis runs one sequence per call.
UNBATCHED = ("--batch-size", "1")
COMPRESSED_KEYS = "attend to compressed entries of the sequence, not to its tokens"


def text_config(config_name, **fields):
    return lambda: (config_name, dict(SMALL, max_position_embeddings=PT2_POSITIONS, **fields))



def qwen3_5_config():
    return "Qwen3_5TextConfig", dict(LINEAR_ATTENTION, **HYBRID_LAYERS, layer_types=HYBRID_PATTERN)


def qwen3_next_config():
    return "Qwen3NextConfig", dict(LINEAR_ATTENTION, **HYBRID_LAYERS, layer_types=HYBRID_PATTERN, num_experts=4,
                                   num_experts_per_tok=2, moe_intermediate_size=32, shared_expert_intermediate_size=32)


def jamba_config():
    return "JambaConfig", dict(HYBRID_LAYERS, num_key_value_heads=2, attn_layer_period=2, attn_layer_offset=1,
                               expert_layer_period=2, expert_layer_offset=1, num_experts=4, num_experts_per_tok=2,
                               mamba_d_state=8, mamba_dt_rank=8, use_mamba_kernels=False)


def granite_hybrid_config():
    return "GraniteMoeHybridConfig", dict(HYBRID_LAYERS, num_key_value_heads=2, num_local_experts=4,
                                          num_experts_per_tok=2, shared_intermediate_size=64,
                                          layer_types=HYBRID_PATTERN, **MAMBA2)


falcon_h1_config = text_config("FalconH1Config", num_key_value_heads=2, mamba_d_ssm=64, **MAMBA2)  # Mamba beside attention


def olmo_hybrid_config():
    linear = {key: value for key, value in LINEAR_ATTENTION.items() if key.startswith("linear_")}
    return "OlmoHybridConfig", dict(HYBRID_LAYERS, num_key_value_heads=2, layer_types=HYBRID_PATTERN, pad_token_id=None,
                                    **linear)


def nemotron_h_config():
    # Mamba-2 with 2 groups of B and C, Nemotron-H's own field names; layers_block_type replaces
    # num_hidden_layers.
    fields = {key: value for key, value in HYBRID_LAYERS.items() if key != "num_hidden_layers"}
    return "NemotronHConfig", dict(fields, num_key_value_heads=2, head_dim=16, layers_block_type=HYBRID_PATTERN,
                                   mamba_num_heads=4, mamba_head_dim=16, ssm_state_size=16, n_groups=2,
                                   chunk_size=SSM_CHUNK, use_mamba_kernels=False, n_routed_experts=4,
                                   moe_intermediate_size=32, moe_shared_expert_intermediate_size=32)


PT2_ARCHITECTURES = [
    # The architectures of hf.export_hf, windows small.
    longer("gpt2"), longer("llama"), longer("qwen2"), longer("gpt_neox"), longer("mixtral"), longer("bert"),
    longer("mistral", sliding_window=WINDOW), longer("gemma"),
    longer("gemma2", sliding_window=WINDOW),
    longer("phi3"), longer("qwen3_moe", weights=trained_qk_norms), longer("olmoe", weights=trained_qk_norms), longer("deepseek_v3"),
    longer("gpt_oss", sliding_window=WINDOW), longer("modernbert", local_attention=WINDOW), longer("roberta"),
    longer("bert_no_head"),
    # Newer families: sliding and global layers, chunked attention, layers without RoPE, MLA with a
    # sparse indexer, differential attention.
    pt2_architecture("gemma3", "Gemma3ForCausalLM", "llama",
                     text_config("Gemma3TextConfig", num_key_value_heads=2, head_dim=16, query_pre_attn_scalar=16,
                                 sliding_window=WINDOW, layer_types=["sliding_attention", "full_attention"]),
                     bos="<s>"),
    pt2_architecture("gemma4", "Gemma4ForCausalLM", "llama",
                     text_config("Gemma4TextConfig", num_key_value_heads=2, head_dim=16, sliding_window=WINDOW,
                                 layer_types=["sliding_attention", "full_attention"], hidden_size_per_layer_input=16,
                                 vocab_size_per_layer_input=400),
                     bos="<s>"),
    pt2_architecture("llama4", "Llama4ForCausalLM", "llama",
                     lambda: ("Llama4TextConfig", dict(FOUR_LAYERS, num_key_value_heads=2, head_dim=16,
                                                       intermediate_size_mlp=128, num_local_experts=4,
                                                       num_experts_per_tok=1, attention_chunk_size=ATTENTION_CHUNK,
                                                       moe_layers=[1, 3], no_rope_layers=[1, 1, 1, 0],
                                                       layer_types=["chunked_attention"] * 3 + ["full_attention"])),
                     bos="<s>"),
    pt2_architecture("smollm3", "SmolLM3ForCausalLM", "llama",
                     lambda: ("SmolLM3Config", dict(FOUR_LAYERS, num_key_value_heads=2, no_rope_layer_interval=2,
                                                    no_rope_layers=[1, 0, 1, 0], pad_token_id=0)),
                     bos="<s>"),
    pt2_architecture("deepseek_v32", "DeepseekV32ForCausalLM", "llama",
                     text_config("DeepseekV32Config", num_key_value_heads=4, moe_intermediate_size=32,
                                 n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1, n_group=1,
                                 topk_group=1, first_k_dense_replace=1, mlp_layer_types=["dense", "sparse"],
                                 kv_lora_rank=16, q_lora_rank=32, qk_rope_head_dim=8, qk_nope_head_dim=8,
                                 v_head_dim=16, head_dim=8, index_topk=WINDOW, index_head_dim=16, index_n_heads=2,
                                 layer_types=None, rope_parameters={"rope_type": "default", "rope_theta": 10000.0}),
                     bos="<s>", sdpa=INDEXER_MASK, run_options=UNBATCHED),
    # DeepSeek-V4: compressed attention (its keys are compressed entries of the sequence) is refused.
    pt2_architecture("deepseek_v4", "DeepseekV4ForCausalLM", "llama",
                     text_config("DeepseekV4Config", head_dim=16, q_lora_rank=32, moe_intermediate_size=32,
                                 n_routed_experts=4, num_experts_per_tok=2, o_groups=2, o_lora_rank=16,
                                 index_n_heads=2, index_head_dim=16, index_topk=WINDOW, sliding_window=WINDOW,
                                 layer_types=["sliding_attention", "compressed_sparse_attention"]),
                     bos="<s>", refusal=COMPRESSED_KEYS),
    pt2_architecture("cohere2", "Cohere2ForCausalLM", "llama",
                     text_config("Cohere2Config", num_key_value_heads=2, head_dim=16, sliding_window=WINDOW,
                                 layer_types=["sliding_attention", "full_attention"]),
                     bos="<s>"),
    pt2_architecture("olmo3", "Olmo3ForCausalLM", "gpt2",
                     text_config("Olmo3Config", num_key_value_heads=2, sliding_window=WINDOW,
                                 layer_types=["sliding_attention", "full_attention"]),
                     bos="<|endoftext|>"),
    pt2_architecture("diffllama", "DiffLlamaForCausalLM", "llama",
                     text_config("DiffLlamaConfig", num_key_value_heads=2, head_dim=16), bos="<s>",
                     eager=DIFFERENTIAL),
    # Hybrids: a linear-attention or state-space layer before an attention layer. Their layers compute
    # by chunks (linear attention's 64 tokens, Mamba-2's mamba_chunk_size) or token by token (Jamba's
    # Mamba scan) in transformers' Python loops, which headscan export replaces by its operators
    # (headscan::gated_delta_rule, ssd_scan, selective_scan): exported at the default length.
    pt2_architecture("qwen3_5", "Qwen3_5ForCausalLM", "gpt2", qwen3_5_config, bos="<|endoftext|>", kinds=LINEAR_KINDS,
                     weights=trained_qk_norms),
    pt2_architecture("qwen3_next", "Qwen3NextForCausalLM", "gpt2", qwen3_next_config, bos="<|endoftext|>",
                     kinds=LINEAR_KINDS, weights=trained_qk_norms),
    pt2_architecture("olmo_hybrid", "OlmoHybridForCausalLM", "gpt2", olmo_hybrid_config, bos="<|endoftext|>",
                     kinds=LINEAR_KINDS, weights=trained_qk_norms),
    pt2_architecture("jamba", "JambaForCausalLM", "llama", jamba_config, bos="<s>", kinds=SSM_KINDS),
    pt2_architecture("granitemoehybrid", "GraniteMoeHybridForCausalLM", "gpt2", granite_hybrid_config,
                     bos="<|endoftext|>", kinds=SSM_KINDS),
    pt2_architecture("nemotron_h", "NemotronHForCausalLM", "llama", nemotron_h_config, bos="<s>", kinds=SSM_KINDS),
    pt2_architecture("falcon_h1", "FalconH1ForCausalLM", "llama", falcon_h1_config, bos="<s>"),
]
PT2_BY_NAME = {a["name"]: a for a in PT2_ARCHITECTURES}


# More of transformers' decoder and encoder families, each exported and analysed as above (the
# README's architecture table lists them): attention in their own layouts (fused QKV, ALiBi,
# multi-query, parallel blocks, partial rotary, QK norms, relative positions).
# Falcon keeps transformers' SDPA attention ([B, 1, T, T] mask): transformers cannot switch its
# attention after loading it. ALBERT runs one layer's module for every layer (shared weights), and
# headscan numbers layers by module: refused.
NOT_SWITCHED = "cannot switch FalconForCausalLM's attention after loading it"
SHARED_LAYER = "has 2 attention softmaxes"


WIDER_PT2_ARCHITECTURES = [
    pt2_architecture("qwen3", "Qwen3ForCausalLM", "gpt2", text_config("Qwen3Config", num_key_value_heads=2, head_dim=16),
                     bos="<|endoftext|>", weights=trained_qk_norms),
    pt2_architecture("olmo2", "Olmo2ForCausalLM", "gpt2", text_config("Olmo2Config", num_key_value_heads=2),
                     bos="<|endoftext|>", weights=trained_qk_norms),
    pt2_architecture("granite", "GraniteForCausalLM", "gpt2", text_config("GraniteConfig", num_key_value_heads=2),
                     bos="<|endoftext|>"),
    pt2_architecture("stablelm", "StableLmForCausalLM", "gpt2", text_config("StableLmConfig", num_key_value_heads=2),
                     bos="<|endoftext|>"),
    pt2_architecture("phi", "PhiForCausalLM", "gpt2", text_config("PhiConfig", partial_rotary_factor=0.5),
                     bos="<|endoftext|>"),
    pt2_architecture("falcon", "FalconForCausalLM", "gpt2",
                     lambda: ("FalconConfig", dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                                   max_position_embeddings=PT2_POSITIONS, initializer_range=0.25,
                                                   multi_query=True, new_decoder_architecture=False)),
                     bos="<|endoftext|>", sdpa=NOT_SWITCHED),
    pt2_architecture("bloom", "BloomForCausalLM", "gpt2",
                     lambda: ("BloomConfig", dict(hidden_size=64, n_layer=2, n_head=4, initializer_range=0.25)),
                     bos="<|endoftext|>", eager=NO_SDPA),
    pt2_architecture("gptj", "GPTJForCausalLM", "gpt2",
                     lambda: ("GPTJConfig", dict(n_embd=64, n_layer=2, n_head=4, rotary_dim=8,
                                                 n_positions=PT2_POSITIONS, initializer_range=0.25)),
                     bos="<|endoftext|>", eager=NO_SDPA),
    pt2_architecture("opt", "OPTForCausalLM", "gpt2",
                     lambda: ("OPTConfig", dict(hidden_size=64, ffn_dim=128, num_hidden_layers=2, num_attention_heads=4,
                                                word_embed_proj_dim=64, max_position_embeddings=PT2_POSITIONS,
                                                init_std=0.25)),
                     bos="<|endoftext|>"),
    pt2_architecture("gpt_bigcode", "GPTBigCodeForCausalLM", "gpt2",
                     lambda: ("GPTBigCodeConfig", dict(n_embd=64, n_layer=2, n_head=4, n_positions=PT2_POSITIONS,
                                                       multi_query=True, initializer_range=0.25)),
                     bos="<|endoftext|>"),
    pt2_architecture("starcoder2", "Starcoder2ForCausalLM", "gpt2",
                     text_config("Starcoder2Config", num_key_value_heads=2, sliding_window=WINDOW),
                     bos="<|endoftext|>"),
    pt2_architecture("cohere", "CohereForCausalLM", "llama", text_config("CohereConfig", num_key_value_heads=2),
                     bos="<s>"),
    pt2_architecture("glm4", "Glm4ForCausalLM", "gpt2", text_config("Glm4Config", num_key_value_heads=2, head_dim=16, pad_token_id=0),
                     bos="<|endoftext|>"),
    pt2_architecture("qwen2_moe", "Qwen2MoeForCausalLM", "gpt2",
                     text_config("Qwen2MoeConfig", num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
                                 moe_intermediate_size=32, shared_expert_intermediate_size=32),
                     bos="<|endoftext|>"),
    pt2_architecture("granitemoe", "GraniteMoeForCausalLM", "gpt2",
                     text_config("GraniteMoeConfig", num_key_value_heads=2, num_local_experts=4, num_experts_per_tok=2),
                     bos="<|endoftext|>"),
    pt2_architecture("nemotron", "NemotronForCausalLM", "gpt2",
                     text_config("NemotronConfig", num_key_value_heads=2, partial_rotary_factor=0.5),
                     bos="<|endoftext|>"),
    pt2_architecture("ernie4_5", "Ernie4_5ForCausalLM", "gpt2", text_config("Ernie4_5Config", num_key_value_heads=2),
                     bos="<|endoftext|>"),
    pt2_architecture("seed_oss", "SeedOssForCausalLM", "gpt2",
                     text_config("SeedOssConfig", num_key_value_heads=2, head_dim=16), bos="<|endoftext|>"),
    pt2_architecture("apertus", "ApertusForCausalLM", "gpt2", text_config("ApertusConfig", num_key_value_heads=2),
                     bos="<|endoftext|>", weights=trained_qk_norms),
    pt2_architecture("helium", "HeliumForCausalLM", "gpt2",
                     text_config("HeliumConfig", num_key_value_heads=2, head_dim=16), bos="<|endoftext|>"),
    # Refused: a model without attention (pure Mamba), an encoder-decoder (T5).
    pt2_architecture("mamba", "MambaForCausalLM", "gpt2",
                     lambda: ("MambaConfig", dict(hidden_size=64, num_hidden_layers=2, state_size=8)),
                     bos="<|endoftext|>", refusal="headscan would find no attention"),
    pt2_architecture("t5", "T5ForConditionalGeneration", "gpt2",
                     lambda: ("T5Config", dict(d_model=64, d_ff=128, num_layers=2, num_heads=4, d_kv=16)),
                     bos="<|endoftext|>", refusal="is an encoder-decoder model"),
    pt2_architecture("distilbert", "DistilBertForMaskedLM", "bert",
                     lambda: ("DistilBertConfig", dict(dim=64, hidden_dim=128, n_layers=2, n_heads=4,
                                                       max_position_embeddings=PT2_POSITIONS, initializer_range=0.25)),
                     bos="[CLS]", causal=False),
    pt2_architecture("electra", "ElectraForMaskedLM", "bert",
                     lambda: ("ElectraConfig", dict(SMALL, embedding_size=32, max_position_embeddings=PT2_POSITIONS)),
                     bos="[CLS]", causal=False),
    pt2_architecture("xlm_roberta", "XLMRobertaForMaskedLM", "roberta",
                     lambda: ("XLMRobertaConfig", dict(SMALL, max_position_embeddings=PT2_POSITIONS + 2)),
                     bos="<s>", causal=False),
    pt2_architecture("albert", "AlbertForMaskedLM", "bert",
                     lambda: ("AlbertConfig", dict(SMALL, embedding_size=32, max_position_embeddings=PT2_POSITIONS)),
                     bos="[CLS]", causal=False, refusal=SHARED_LAYER),
    pt2_architecture("deberta_v2", "DebertaV2ForMaskedLM", "bert",
                     lambda: ("DebertaV2Config", dict(SMALL, max_position_embeddings=PT2_POSITIONS)),
                     bos="[CLS]", causal=False, eager=NO_SDPA),
    pt2_architecture("mpnet", "MPNetForMaskedLM", "roberta",
                     lambda: ("MPNetConfig", dict(SMALL, max_position_embeddings=PT2_POSITIONS + 2)),
                     bos="<s>", causal=False, eager=NO_SDPA),
]
PT2_ARCHITECTURES += WIDER_PT2_ARCHITECTURES
PT2_BY_NAME.update({a["name"]: a for a in WIDER_PT2_ARCHITECTURES})

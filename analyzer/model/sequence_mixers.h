#pragma once
// The sequence mixers of hybrid models that are not attention, as transformers' torch reference
// functions compute them, for any length: the operators headscan::gated_delta_rule,
// headscan::ssd_scan and headscan::selective_scan that `headscan export` puts in an exported
// program in their place (headscan/_export/mixer_ops.py), so that the program is length-dynamic.
// Each is the reference's sequence of ATen operations (its loops over chunks or tokens here in
// C++), so it equals the reference to the rounding of those operations; none takes or returns a
// recurrent state (a forward without a cache). All are differentiable ATen compositions.

#include <cstdint>
#include <optional>

#include <ATen/core/Tensor.h>

namespace headscan {

// transformers' torch_chunk_gated_delta_rule (Qwen3-Next, Qwen3.5, OLMo hybrid; Yang et al. 2025,
// "Gated Delta Networks"), chunks of `chunk_size` tokens, the triangular system solved by
// linalg_solve_triangular as the eager reference does. query, key [B, T, H, Dk], value [B, T, H, Dv],
// g (log decay, ≤ 0) and beta [B, T, H]; returns [B, T, H, Dv] in query's dtype.
at::Tensor gated_delta_rule(const at::Tensor& query, const at::Tensor& key, const at::Tensor& value,
                            const at::Tensor& g, const at::Tensor& beta, std::int64_t chunk_size, bool use_qk_l2norm);

// transformers' mamba2_chunk_scan, Mamba-2's SSD in its chunked form (Dao & Gu 2024, §6):
// hidden_states [B, T, H, P], dt [B, T, H], A [H], B and C [B, T, G, N] (H a multiple of G),
// D and dt_bias [H]; dt is biased, softplus'ed when asked and clamped to [dt_min, dt_max]. Returns
// [B, T, H, P] in float32 (promoted with D's dtype).
at::Tensor ssd_scan(const at::Tensor& hidden_states, const at::Tensor& dt, const at::Tensor& A, const at::Tensor& B,
                    const at::Tensor& C, std::int64_t chunk_size, const std::optional<at::Tensor>& D,
                    const std::optional<at::Tensor>& dt_bias, bool dt_softplus, double dt_min, double dt_max);

// transformers' mamba_selective_scan in its recurrent form, Mamba's selective scan (Gu & Dao 2023,
// Algorithm 2) token by token: hidden_states, dt and z [B, D, T], A [D, N], B and C [B, N, T],
// D and delta_bias [D]. Returns [B, D, T].
at::Tensor selective_scan(const at::Tensor& hidden_states, const at::Tensor& dt, const at::Tensor& A,
                          const at::Tensor& B, const at::Tensor& C, const std::optional<at::Tensor>& D,
                          const std::optional<at::Tensor>& z, const std::optional<at::Tensor>& delta_bias,
                          bool delta_softplus);

}  // namespace headscan

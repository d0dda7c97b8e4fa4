#include "analyzer/model/sequence_mixers.h"

#include <cmath>
#include <limits>
#include <vector>

#include <ATen/ATen.h>
#include <torch/library.h>

#include "analyzer/model/capture.h"

// Each function follows its transformers reference line by line (the same operations on tensors of
// the same shapes and layouts, so the same rounding); the comments give the reference's lines
// where the ATen spelling differs from Python's indexing.

namespace headscan {
namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// .to(torch.float32, memory_format=torch.contiguous_format)
at::Tensor contiguous_float(const at::Tensor& x) {
  return x.to(at::kFloat, /*non_blocking=*/false, /*copy=*/false, at::MemoryFormat::Contiguous);
}

// transformers' l2norm (the FLA library's): x · rsqrt(Σ x² + eps) over the last dimension.
at::Tensor l2norm(const at::Tensor& x) { return x * at::rsqrt((x * x).sum(/*dim=*/-1, /*keepdim=*/true) + 1e-6); }

// Pads dimension `dim` (counted from the end, 0 the last) at its end by `size` zeros: F.pad's
// (0, 0, ..., 0, size) with `dim` pairs of zeros before.
at::Tensor pad_end(const at::Tensor& x, std::int64_t dim, std::int64_t size) {
  std::vector<std::int64_t> pad(static_cast<std::size_t>(2 * (dim + 1)), 0);
  pad.back() = size;
  return at::constant_pad_nd(x, pad, 0);
}

// reshape_into_chunks: [B, T, ...] padded to a multiple of chunk_size, then [B, n, chunk_size, ...].
at::Tensor into_chunks(const at::Tensor& x, std::int64_t pad_size, std::int64_t chunk_size) {
  const bool four = x.dim() == 4;
  // pad_tensor_by_size pads the whole tensor's dimensions (rank 3 or 4), sequence on dim 1.
  std::vector<std::int64_t> pad = four ? std::vector<std::int64_t>{0, 0, 0, 0, 0, pad_size, 0, 0}
                                       : std::vector<std::int64_t>{0, 0, 0, pad_size, 0, 0};
  const at::Tensor padded = at::constant_pad_nd(x, pad, 0);
  if (!four) return padded.reshape({padded.size(0), -1, chunk_size, padded.size(2)});
  return padded.reshape({padded.size(0), -1, chunk_size, padded.size(2), padded.size(3)});
}

// segment_sum: [..., c] -> [..., c, c], out[..., i, j] = Σ_{j < k ≤ i} x[..., k], −inf above the diagonal.
at::Tensor segment_sum(const at::Tensor& input) {
  const std::int64_t chunk = input.size(-1);
  std::vector<std::int64_t> expanded = input.sizes().vec();
  expanded.push_back(chunk);
  at::Tensor x = input.unsqueeze(-1).expand(expanded);
  const auto mask_options = at::TensorOptions().dtype(at::kBool).device(input.device());
  const at::Tensor below = at::ones({chunk, chunk}, mask_options).tril(-1);
  x = x.masked_fill(below.logical_not(), 0);
  at::Tensor sums = at::cumsum(x, /*dim=*/-2);
  const at::Tensor lower = at::ones({chunk, chunk}, mask_options).tril(0);
  return sums.masked_fill(lower.logical_not(), -kInfinity);
}

void check_same_sequence(const at::Tensor& x, const char* name, std::int64_t batch, std::int64_t length,
                         std::int64_t rank) {
  TORCH_CHECK(x.dim() == rank && x.size(0) == batch && x.size(1) == length, name, " must be [", batch, ", ", length,
              ", ...] of rank ", rank, ", got ", x.sizes());
}

}  // namespace

at::Tensor gated_delta_rule(const at::Tensor& query_in, const at::Tensor& key_in, const at::Tensor& value_in,
                            const at::Tensor& g, const at::Tensor& beta_in, std::int64_t chunk_size,
                            bool use_qk_l2norm) {
  TORCH_CHECK(key_in.dim() == 4, "gated_delta_rule: key must be [B, T, H, Dk], got ", key_in.sizes());
  const std::int64_t batch = key_in.size(0), length = key_in.size(1), k_head_dim = key_in.size(3);
  check_same_sequence(query_in, "gated_delta_rule: query", batch, length, 4);
  check_same_sequence(value_in, "gated_delta_rule: value", batch, length, 4);
  check_same_sequence(g, "gated_delta_rule: g", batch, length, 3);
  check_same_sequence(beta_in, "gated_delta_rule: beta", batch, length, 3);
  TORCH_CHECK(chunk_size >= 1, "gated_delta_rule: chunk_size must be positive, got ", chunk_size);
  const std::int64_t heads = value_in.size(2), v_head_dim = value_in.size(3);
  TORCH_CHECK(query_in.size(2) == heads && key_in.size(2) == heads && g.size(2) == heads && beta_in.size(2) == heads,
              "gated_delta_rule: query, key, g and beta must have value's ", heads, " heads, got ", query_in.sizes(),
              ", ", key_in.sizes(), ", ", g.sizes(), ", ", beta_in.sizes());
  const auto initial_dtype = query_in.scalar_type();

  // [B, H, T, ...] in float32
  at::Tensor query = contiguous_float(query_in.transpose(1, 2));
  at::Tensor key = contiguous_float(key_in.transpose(1, 2));
  at::Tensor value = contiguous_float(value_in.transpose(1, 2));
  at::Tensor beta = contiguous_float(beta_in.transpose(1, 2));
  at::Tensor decay = contiguous_float(g.transpose(1, 2));
  if (use_qk_l2norm) {
    query = l2norm(query);
    key = l2norm(key);
  }
  const double scaling = std::pow(static_cast<double>(query.size(-1)), -0.5);
  query = query * scaling;

  const std::int64_t pad_size = (chunk_size - length % chunk_size) % chunk_size;
  query = pad_end(query, 1, pad_size);
  key = pad_end(key, 1, pad_size);
  value = pad_end(value, 1, pad_size);
  beta = pad_end(beta, 0, pad_size);
  decay = pad_end(decay, 0, pad_size);
  const std::int64_t num_chunks = (length + pad_size) / chunk_size;

  at::Tensor v_beta = value * beta.unsqueeze(-1);
  at::Tensor k_beta = key * beta.unsqueeze(-1);
  auto chunked = [chunk_size](const at::Tensor& x) {
    return x.reshape({x.size(0), x.size(1), -1, chunk_size, x.size(-1)});
  };
  query = chunked(query);
  key = chunked(key);
  k_beta = chunked(k_beta);
  v_beta = chunked(v_beta);
  decay = decay.reshape({decay.size(0), decay.size(1), -1, chunk_size});

  const at::Tensor strictly_upper =
      at::ones({chunk_size, chunk_size}, at::TensorOptions().dtype(at::kBool).device(query.device())).triu(1);
  const at::Tensor cum_decay = decay.cumsum(/*dim=*/3);
  at::Tensor pairwise_decay = cum_decay.unsqueeze(4) - cum_decay.unsqueeze(3);
  pairwise_decay = pairwise_decay.masked_fill(strictly_upper, -kInfinity).exp();

  const at::Tensor ut_system = at::matmul(k_beta, key.transpose(-1, -2)) * pairwise_decay;
  const at::Tensor intra_chunk_attn = at::matmul(query, key.transpose(-1, -2)) * pairwise_decay;
  const at::Tensor decayed_k_beta = k_beta * cum_decay.exp().unsqueeze(-1);
  // The eager reference (not under torch.export) solves the unit lower-triangular system.
  const at::Tensor new_values =
      at::linalg_solve_triangular(ut_system, v_beta, /*upper=*/false, /*left=*/true, /*unitriangular=*/true);
  const at::Tensor k_cumdecay =
      at::linalg_solve_triangular(ut_system, decayed_k_beta, /*upper=*/false, /*left=*/true, /*unitriangular=*/true);

  at::Tensor state = at::zeros({batch, heads, k_head_dim, v_head_dim}, new_values.options());
  at::Tensor core_attn_out = at::zeros_like(new_values);

  query = query * cum_decay.exp().unsqueeze(-1);
  key = key * (cum_decay.slice(/*dim=*/-1, chunk_size - 1) - cum_decay).exp().unsqueeze(-1);  // cum_decay[..., -1:]
  const at::Tensor chunk_decay = cum_decay.select(-1, -1).exp().unsqueeze(-1).unsqueeze(-1);  // [..., None, None]

  for (std::int64_t i = 0; i < num_chunks; ++i) {
    const at::Tensor v_new = new_values.select(2, i) - at::matmul(k_cumdecay.select(2, i), state);
    const at::Tensor inter_chunk_attn = at::matmul(query.select(2, i), state);
    core_attn_out.select(2, i).copy_(inter_chunk_attn + at::matmul(intra_chunk_attn.select(2, i), v_new));
    state = state * chunk_decay.select(2, i) + at::matmul(key.select(2, i).transpose(-1, -2), v_new);
  }

  core_attn_out = core_attn_out.reshape({batch, heads, -1, v_head_dim}).slice(/*dim=*/2, 0, length);
  // The reference's .to(initial_dtype, memory_format=torch.contiguous_format) keeps a float32
  // view strided by heads (suggest_memory_format() is already Contiguous); the operator's result
  // is contiguous, as its fake kernel says.
  return core_attn_out.transpose(1, 2)
      .to(initial_dtype, /*non_blocking=*/false, /*copy=*/false, at::MemoryFormat::Contiguous)
      .contiguous();
}

at::Tensor ssd_scan(const at::Tensor& hidden_states_in, const at::Tensor& dt_in, const at::Tensor& A_in,
                    const at::Tensor& B_in, const at::Tensor& C_in, std::int64_t chunk_size,
                    const std::optional<at::Tensor>& D, const std::optional<at::Tensor>& dt_bias, bool dt_softplus,
                    double dt_min, double dt_max) {
  TORCH_CHECK(hidden_states_in.dim() == 4, "ssd_scan: hidden_states must be [B, T, H, P], got ",
              hidden_states_in.sizes());
  const std::int64_t batch = hidden_states_in.size(0), length = hidden_states_in.size(1);
  const std::int64_t heads = hidden_states_in.size(2), head_dim = hidden_states_in.size(3);
  check_same_sequence(dt_in, "ssd_scan: dt", batch, length, 3);
  check_same_sequence(B_in, "ssd_scan: B", batch, length, 4);
  check_same_sequence(C_in, "ssd_scan: C", batch, length, 4);
  const std::int64_t groups = B_in.size(2);
  TORCH_CHECK(groups >= 1 && heads % groups == 0 && C_in.size(2) == groups,
              "ssd_scan: B and C must have a number of groups dividing the ", heads, " heads, got ", B_in.sizes(),
              " and ", C_in.sizes());
  TORCH_CHECK(chunk_size >= 1, "ssd_scan: chunk_size must be positive, got ", chunk_size);

  at::Tensor dt = dt_in;
  if (dt_bias) dt = dt + dt_bias->to(dt.scalar_type());
  if (dt_softplus) dt = at::softplus(dt);
  dt = at::clamp(dt, dt_min, dt_max);

  at::Tensor hidden_states = hidden_states_in.to(at::kFloat);
  at::Tensor B = at::repeat_interleave(B_in.to(at::kFloat), heads / groups, /*dim=*/2, /*output_size=*/heads);
  at::Tensor C = at::repeat_interleave(C_in.to(at::kFloat), heads / groups, /*dim=*/2, /*output_size=*/heads);

  const std::int64_t pad_size = (chunk_size - length % chunk_size) % chunk_size;
  at::Tensor D_residual;
  if (D) {
    D_residual = D->unsqueeze(-1) * at::constant_pad_nd(hidden_states, {0, 0, 0, 0, 0, pad_size, 0, 0}, 0);
  }

  // Discretize x and A
  hidden_states = hidden_states * dt.unsqueeze(-1).to(at::kFloat);
  at::Tensor A = A_in.to(hidden_states.scalar_type()) * dt.to(at::kFloat);

  hidden_states = into_chunks(hidden_states, pad_size, chunk_size);
  A = into_chunks(A, pad_size, chunk_size);
  B = into_chunks(B, pad_size, chunk_size);
  C = into_chunks(C, pad_size, chunk_size);

  A = A.permute({0, 3, 1, 2});
  const at::Tensor A_cumsum = at::cumsum(A, /*dim=*/-1);

  // 1. the diagonal blocks' outputs
  const at::Tensor L = at::exp(segment_sum(A));
  const at::Tensor G = (C.unsqueeze(3) * B.unsqueeze(2)).sum(-1);  // C[:, :, :, None, :, :] * B[:, :, None, :, :, :]
  const at::Tensor M = (G.unsqueeze(-1) * L.permute({0, 2, 3, 4, 1}).unsqueeze(-1)).sum(-1);
  const at::Tensor Y_diag = (M.unsqueeze(-1) * hidden_states.unsqueeze(2)).sum(3);

  // 2. each chunk's state
  const at::Tensor decay_states = at::exp(A_cumsum.slice(/*dim=*/-1, chunk_size - 1) - A_cumsum);
  const at::Tensor B_decay = B * decay_states.permute({0, -2, -1, 1}).unsqueeze(-1);
  at::Tensor states = (B_decay.unsqueeze(-2) * hidden_states.unsqueeze(-1)).sum(2);

  // 3. the recurrence over chunks
  const at::Tensor previous_states = at::zeros_like(states.slice(/*dim=*/1, 0, 1));
  states = at::cat({previous_states, states}, /*dim=*/1);
  const at::Tensor decay_chunk =
      at::exp(segment_sum(at::constant_pad_nd(A_cumsum.select(-1, -1), {1, 0}, 0))).transpose(1, 3);
  const at::Tensor new_states = (decay_chunk.unsqueeze(-1).unsqueeze(-1) * states.unsqueeze(2)).sum(1);
  states = new_states.slice(/*dim=*/1, 0, -1);

  // 4. state -> output per chunk
  const at::Tensor state_decay_out = at::exp(A_cumsum);
  const at::Tensor C_times_states = C.unsqueeze(-2) * states.unsqueeze(2);  // C[..., None, :] * states[:, :, None, ...]
  const at::Tensor Y_off = C_times_states.sum(-1) * state_decay_out.permute({0, 2, 3, 1}).unsqueeze(-1);

  at::Tensor output = (Y_diag + Y_off).reshape({batch, -1, heads, head_dim});
  if (D) output = output + D_residual;
  if (pad_size > 0) output = output.slice(/*dim=*/1, 0, length);
  return output.contiguous();
}

at::Tensor selective_scan(const at::Tensor& hidden_states, const at::Tensor& dt_in, const at::Tensor& A,
                          const at::Tensor& B_in, const at::Tensor& C_in, const std::optional<at::Tensor>& D,
                          const std::optional<at::Tensor>& z, const std::optional<at::Tensor>& delta_bias,
                          bool delta_softplus) {
  TORCH_CHECK(hidden_states.dim() == 3, "selective_scan: hidden_states must be [B, D, T], got ",
              hidden_states.sizes());
  const std::int64_t batch = hidden_states.size(0), inner = hidden_states.size(1), length = hidden_states.size(2);
  TORCH_CHECK(dt_in.sizes() == hidden_states.sizes(), "selective_scan: dt must be [", batch, ", ", inner, ", ", length,
              "], got ", dt_in.sizes());
  TORCH_CHECK(A.dim() == 2 && A.size(0) == inner, "selective_scan: A must be [", inner, ", N], got ", A.sizes());
  const std::int64_t state_size = A.size(-1);
  for (const at::Tensor* x : {&B_in, &C_in}) {
    TORCH_CHECK(x->dim() == 3 && x->size(0) == batch && x->size(1) == state_size && x->size(2) == length,
                "selective_scan: B and C must be [", batch, ", ", state_size, ", ", length, "], got ", x->sizes());
  }
  const auto input_dtype = hidden_states.scalar_type();

  at::Tensor dt = dt_in;
  if (delta_bias) dt = dt + delta_bias->to(dt.scalar_type()).unsqueeze(-1);
  if (delta_softplus) dt = at::softplus(dt);

  const at::Tensor B = B_in.transpose(1, 2);
  const at::Tensor C = C_in.transpose(1, 2);

  // A[None, :, None, :] * dt[:, :, :, None], dt[:, :, :, None] * B[:, None, :, :]
  const at::Tensor discrete_A = at::exp(A.unsqueeze(0).unsqueeze(2) * dt.unsqueeze(-1));
  const at::Tensor discrete_B = dt.unsqueeze(-1) * B.unsqueeze(1).to(at::kFloat);
  const at::Tensor deltaB_u = discrete_B * hidden_states.unsqueeze(-1).to(at::kFloat);

  at::Tensor state = at::zeros({batch, inner, state_size}, hidden_states.options().dtype(input_dtype));
  std::vector<at::Tensor> outputs;
  outputs.reserve(static_cast<std::size_t>(length));
  for (std::int64_t index = 0; index < length; ++index) {
    state = discrete_A.select(2, index) * state + deltaB_u.select(2, index);
    const at::Tensor output = at::matmul(state.to(input_dtype), C.select(1, index).unsqueeze(-1));
    outputs.push_back(output.select(2, 0));
  }
  at::Tensor scan_output = at::stack(outputs, /*dim=*/-1);

  if (D) scan_output = scan_output + hidden_states * D->unsqueeze(0).unsqueeze(-1);  // D[None, :, None]
  if (z) scan_output = scan_output * at::silu(*z);
  return scan_output.contiguous();
}

namespace {

TORCH_LIBRARY_FRAGMENT(headscan, m) {
  m.def("headscan::gated_delta_rule(Tensor query, Tensor key, Tensor value, Tensor g, Tensor beta, int chunk_size, "
        "bool use_qk_l2norm) -> Tensor");
  m.def("headscan::ssd_scan(Tensor hidden_states, Tensor dt, Tensor A, Tensor B, Tensor C, int chunk_size, Tensor? D, "
        "Tensor? dt_bias, bool dt_softplus, float dt_min, float dt_max) -> Tensor");
  m.def("headscan::selective_scan(Tensor hidden_states, Tensor dt, Tensor A, Tensor B, Tensor C, Tensor? D, "
        "Tensor? z, Tensor? delta_bias, bool delta_softplus) -> Tensor");
}

// Explicit kernels for every backend (not the implicit catch-all), so that Python can register the
// fake implementations torch.export traces with (headscan/_export/mixer_ops.py).
TORCH_LIBRARY_IMPL(headscan, CompositeExplicitAutograd, m) {
  m.impl("gated_delta_rule", gated_delta_rule);
  m.impl("ssd_scan", ssd_scan);
  m.impl("selective_scan", selective_scan);
}

// Differentiable where headscan's importance pass runs an exported program with autograd
// (capture.h, differentiable_kernel): the kernels' own ATen operations record the backward;
// elsewhere (torch.export tracing them) they run below autograd, whole.
TORCH_LIBRARY_IMPL(headscan, Autograd, m) {
  m.impl("gated_delta_rule", torch::CppFunction::makeFromBoxedFunction<&differentiable_kernel>());
  m.impl("ssd_scan", torch::CppFunction::makeFromBoxedFunction<&differentiable_kernel>());
  m.impl("selective_scan", torch::CppFunction::makeFromBoxedFunction<&differentiable_kernel>());
}

}  // namespace
}  // namespace headscan

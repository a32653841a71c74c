// The Wan VAE's own CUDA kernels (built to PTX by build.rs with `--features cuda`; loaded
// by src/model/cuda/mod.rs): the copies the convolutions need around cuDNN (zero padding
// on one side, the bias added in place) and Wan's channel norm fused with the SiLU after it.
//
// Each kernel's arithmetic per element is a __host__ __device__ function, so that
// scripts/cuda-kernels-host-check.sh can run the same code on the CPU against a plain
// reference (tests/cuda/kernels_host_check.cu) where there is no GPU.
#include <cuda_bf16.h>
#include <stdint.h>

namespace wan {

// ---- element types: load as f32, store rounded once (bf16: round to nearest even)

__host__ __device__ inline float load(const float* p, uint64_t i) { return p[i]; }
__host__ __device__ inline void store(float* p, uint64_t i, float v) { p[i] = v; }
__host__ __device__ inline float load(const __nv_bfloat16* p, uint64_t i) { return __bfloat162float(p[i]); }
__host__ __device__ inline void store(__nv_bfloat16* p, uint64_t i, float v) { p[i] = __float2bfloat16(v); }

// ---- zero padding of a 5-D [N, C, T, H, W] tensor: `before` and `after` elements on each
// side of T, H and W (the causal front frames; Wan's downsampling pads right and bottom only)

struct Pad5d {
    uint64_t n_c;      // N * C
    uint64_t t, h, w;  // input extents
    uint64_t t0, h0, w0;  // padding before, per dim
    uint64_t to, ho, wo;  // output extents (input + before + after)
};

// The input index read by output element `i`, or -1 where it falls in the padding.
__host__ __device__ inline int64_t pad5d_source(const Pad5d& p, uint64_t i) {
    uint64_t x = i % p.wo;
    uint64_t r = i / p.wo;
    uint64_t y = r % p.ho;
    r /= p.ho;
    uint64_t z = r % p.to;
    uint64_t nc = r / p.to;
    if (x < p.w0 || y < p.h0 || z < p.t0) return -1;
    x -= p.w0;
    y -= p.h0;
    z -= p.t0;
    if (x >= p.w || y >= p.h || z >= p.t) return -1;
    return (int64_t)(((nc * p.t + z) * p.h + y) * p.w + x);
}

template <typename T>
__device__ void pad5d(const Pad5d p, const T* in, T* out) {
    const uint64_t total = p.n_c * p.to * p.ho * p.wo;
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (uint64_t)gridDim.x * blockDim.x) {
        const int64_t s = pad5d_source(p, i);
        out[i] = s < 0 ? T(0.0f) : in[s];
    }
}

// ---- bias added in place to a convolution's output [N, C_out, S]

__host__ __device__ inline float bias_add_one(float y, float b) { return y + b; }

template <typename T>
__device__ void bias_add(uint64_t total, uint64_t channels, uint64_t spatial, T* y, const T* bias) {
    for (uint64_t i = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; i < total;
         i += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t c = (i / spatial) % channels;
        store(y, i, bias_add_one(load(y, i), load(bias, c)));
    }
}

// ---- Wan's RMS_norm over channels, then SiLU when `silu`: for x [outer, C, inner],
// y = x / max(||x||_2 over C, 1e-12) * gamma (gamma already times sqrt(C)), in f32.
// One thread per (outer, inner) position; consecutive threads read consecutive positions.

__host__ __device__ inline float silu_of(float v) { return v / (1.0f + expf(-v)); }

__host__ __device__ inline float norm_scale(float sum_sq) {
    const float norm = sqrtf(sum_sq);
    return 1.0f / (norm > 1e-12f ? norm : 1e-12f);
}

template <typename T>
__host__ __device__ inline void channel_norm_position(
    const T* x, T* y, const float* gamma, uint64_t channels, uint64_t inner, uint64_t base, int silu) {
    float sum = 0.0f;
    for (uint64_t c = 0; c < channels; ++c) {
        const float v = load(x, base + c * inner);
        sum += v * v;
    }
    const float scale = norm_scale(sum);
    for (uint64_t c = 0; c < channels; ++c) {
        const uint64_t i = base + c * inner;
        float v = load(x, i) * scale * gamma[c];
        if (silu) v = silu_of(v);
        store(y, i, v);
    }
}

template <typename T>
__device__ void channel_norm(
    uint64_t outer, uint64_t channels, uint64_t inner, const T* x, T* y, const float* gamma, int silu) {
    const uint64_t positions = outer * inner;
    for (uint64_t p = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x; p < positions;
         p += (uint64_t)gridDim.x * blockDim.x) {
        const uint64_t o = p / inner, s = p % inner;
        channel_norm_position(x, y, gamma, channels, inner, o * channels * inner + s, silu);
    }
}

}  // namespace wan

#ifdef __CUDACC__
#define WAN_KERNELS(SUFFIX, T)                                                                      \
    extern "C" __global__ void wan_pad5d_##SUFFIX(const wan::Pad5d p, const T* in, T* out) {        \
        wan::pad5d(p, in, out);                                                                     \
    }                                                                                               \
    extern "C" __global__ void wan_bias_add_##SUFFIX(                                               \
        uint64_t total, uint64_t channels, uint64_t spatial, T* y, const T* bias) {                 \
        wan::bias_add(total, channels, spatial, y, bias);                                           \
    }                                                                                               \
    extern "C" __global__ void wan_channel_norm_##SUFFIX(uint64_t outer, uint64_t channels,         \
        uint64_t inner, const T* x, T* y, const float* gamma, int silu) {                          \
        wan::channel_norm(outer, channels, inner, x, y, gamma, silu);                               \
    }

WAN_KERNELS(f32, float)
WAN_KERNELS(bf16, __nv_bfloat16)
#endif

// The per-element arithmetic of src/model/cuda/kernels.cu run on the CPU (its functions are
// __host__ __device__) against plain references, so that the kernels' index math and
// numerics are checked where there is no GPU: scripts/cuda-kernels-host-check.sh builds and
// runs this with nvcc. Exit 0 when every check holds, 1 with the first failure otherwise.
#include <cmath>
#include <cstdio>
#include <vector>

#include "../../src/model/cuda/kernels.cu"

static int failures = 0;
#define CHECK(cond, ...)                         \
    do {                                         \
        if (!(cond)) {                           \
            std::printf("FAIL: " __VA_ARGS__);   \
            std::printf("\n");                   \
            ++failures;                          \
            return;                              \
        }                                        \
    } while (0)

// Zero padding: every output element against the padded tensor built by hand.
static void pad_case(uint64_t n_c, uint64_t t, uint64_t h, uint64_t w, uint64_t t0, uint64_t t1, uint64_t h0,
                     uint64_t h1, uint64_t w0, uint64_t w1) {
    wan::Pad5d p{n_c, t, h, w, t0, h0, w0, t + t0 + t1, h + h0 + h1, w + w0 + w1};
    std::vector<float> in(n_c * t * h * w);
    for (size_t i = 0; i < in.size(); ++i) in[i] = float(i + 1);
    for (uint64_t nc = 0; nc < n_c; ++nc)
        for (uint64_t z = 0; z < p.to; ++z)
            for (uint64_t y = 0; y < p.ho; ++y)
                for (uint64_t x = 0; x < p.wo; ++x) {
                    const uint64_t i = ((nc * p.to + z) * p.ho + y) * p.wo + x;
                    const bool inside = z >= t0 && z < t0 + t && y >= h0 && y < h0 + h && x >= w0 && x < w0 + w;
                    const int64_t want =
                        inside ? int64_t(((nc * t + (z - t0)) * h + (y - h0)) * w + (x - w0)) : -1;
                    const int64_t got = wan::pad5d_source(p, i);
                    CHECK(got == want, "pad5d_source(%llu) = %lld, want %lld (pad t %llu+%llu h %llu+%llu w %llu+%llu)",
                          (unsigned long long)i, (long long)got, (long long)want, (unsigned long long)t0,
                          (unsigned long long)t1, (unsigned long long)h0, (unsigned long long)h1,
                          (unsigned long long)w0, (unsigned long long)w1);
                }
}

// The channel norm (+ SiLU) of one position against a double-precision reference.
template <typename T>
static void norm_case(uint64_t outer, uint64_t channels, uint64_t inner, int silu, double tol) {
    const uint64_t n = outer * channels * inner;
    std::vector<T> x(n), y(n);
    std::vector<float> xf(n), gamma(channels);
    for (uint64_t i = 0; i < n; ++i) {
        const float v = float(((i * 7919) % 2003) / 1001.5 - 1.0) * 3.0f;
        wan::store(x.data(), i, v);
        xf[i] = wan::load(x.data(), i);  // as rounded to T
    }
    for (uint64_t c = 0; c < channels; ++c) gamma[c] = float(0.5 + 0.01 * c) * std::sqrt(float(channels));
    for (uint64_t o = 0; o < outer; ++o)
        for (uint64_t s = 0; s < inner; ++s)
            wan::channel_norm_position(x.data(), y.data(), gamma.data(), channels, inner, o * channels * inner + s,
                                       silu);
    for (uint64_t o = 0; o < outer; ++o)
        for (uint64_t s = 0; s < inner; ++s) {
            double sum = 0;
            for (uint64_t c = 0; c < channels; ++c) {
                const double v = xf[(o * channels + c) * inner + s];
                sum += v * v;
            }
            const double norm = std::max(std::sqrt(sum), 1e-12);
            for (uint64_t c = 0; c < channels; ++c) {
                const uint64_t i = (o * channels + c) * inner + s;
                double want = xf[i] / norm * gamma[c];
                if (silu) want = want / (1.0 + std::exp(-want));
                const double got = wan::load(y.data(), i);
                CHECK(std::fabs(got - want) <= tol * std::max(1.0, std::fabs(want)),
                      "channel_norm (C %llu, inner %llu, silu %d) at %llu: %.9g, want %.9g",
                      (unsigned long long)channels, (unsigned long long)inner, silu, (unsigned long long)i, got, want);
            }
        }
}

int main() {
    pad_case(2, 3, 4, 5, 0, 0, 0, 0, 0, 0);  // no padding: a copy
    pad_case(3, 1, 6, 7, 2, 0, 0, 0, 0, 0);  // causal: two zero frames in front
    pad_case(2, 2, 6, 8, 0, 0, 0, 1, 0, 1);  // downsampling: bottom and right
    pad_case(1, 2, 3, 3, 1, 2, 2, 1, 1, 3);  // every side
    norm_case<float>(1, 96, 37, 1, 1e-5);
    norm_case<float>(2, 384, 5, 0, 1e-5);
    norm_case<float>(1, 3, 1, 1, 1e-5);
    // bf16 in and out: the result is rounded once to bf16 (8 bits of mantissa).
    norm_case<__nv_bfloat16>(1, 96, 37, 1, 1e-2);
    norm_case<__nv_bfloat16>(2, 192, 11, 0, 1e-2);
    {
        // All-zero input: the 1e-12 floor keeps it finite (zeros out).
        float x[4] = {0, 0, 0, 0}, y[4] = {1, 1, 1, 1}, g[4] = {1, 1, 1, 1};
        wan::channel_norm_position(x, y, g, 4, 1, 0, 1);
        for (float v : y)
            if (v != 0.0f) {
                std::printf("FAIL: the norm of zeros is %g, want 0\n", v);
                ++failures;
            }
    }
    {
        __nv_bfloat16 y[2] = {__float2bfloat16(1.5f), __float2bfloat16(-2.0f)}, b[1] = {__float2bfloat16(0.25f)};
        for (int i = 0; i < 2; ++i) wan::store(y, i, wan::bias_add_one(wan::load(y, i), wan::load(b, 0)));
        if (wan::load(y, 0) != 1.75f || wan::load(y, 1) != -1.75f) {
            std::printf("FAIL: bias_add bf16 gave %g %g\n", wan::load(y, 0), wan::load(y, 1));
            ++failures;
        }
    }
    if (failures == 0) std::printf("kernels host check: all passed\n");
    return failures == 0 ? 0 : 1;
}

//! Layer spans (`run --profile`): each leaf layer enters a `tracing` span named `layer`,
//! with its checkpoint key path (`path`, e.g. `decoder.upsamples.4.residual.2`), its
//! input's shape and dtype, as candle-transformers' `with_tracing.rs` wraps its layers.
//! Without a subscriber (every timed pass) a span costs one disabled-callsite check and its
//! fields are never formatted; `engine::candle::profile`'s subscriber times them.
//!
//! Must not: time, synchronize or know any subscriber.
use candle_core::Tensor;

/// Enter the span of layer `path` on input `x` (exited when the guard drops).
pub fn layer(path: &str, x: &Tensor) -> tracing::span::EnteredSpan {
    tracing::trace_span!("layer", path = path, shape = ?x.dims(), dtype = x.dtype().as_str()).entered()
}

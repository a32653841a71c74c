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

/// Enter the span of a `Resample`'s 2D conv (`resample.1`) on the 5D `x`, shaped as the
/// reference's conv sees it: frames folded into the batch (`b c t h w -> (b t) c h w`) and
/// `zero_pad` rows and columns of the reference's `ZeroPad2d` (its `resample.0`) added, so
/// that every engine's row for the layer has one input shape. Like [`layer`]'s, the shape is
/// only computed when a subscriber (the profiled pass) takes the span.
pub fn layer_2d(path: &str, x: &Tensor, zero_pad: usize) -> tracing::span::EnteredSpan {
    let folded = |d: &[usize]| match *d {
        [b, c, t, h, w] => vec![b * t, c, h + zero_pad, w + zero_pad],
        _ => d.to_vec(),
    };
    tracing::trace_span!("layer", path = path, shape = ?folded(x.dims()), dtype = x.dtype().as_str()).entered()
}

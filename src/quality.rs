//! Output quality: PSNR, max and mean absolute error between two tensors.

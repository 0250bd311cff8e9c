//! Turning SIGINT/SIGTERM into a [`Signal`] value that is passed down, never a global.

use engine::Signal;

/// A signal raised on the first SIGINT or SIGTERM. A second one exits at once with
/// status 130, the conventional code for an interrupt, in case the first one was not enough.
pub fn on_interrupt() -> std::io::Result<Signal> {
    let signal = Signal::new();
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, signal.flag())?;
        signal_hook::flag::register(sig, signal.flag())?;
    }
    Ok(signal)
}

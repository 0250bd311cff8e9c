//! Turning SIGINT/SIGTERM into a [`Signal`] value that is passed down, never a global.

use engine::Signal;

/// A signal raised on the first SIGINT or SIGTERM. A second one exits at once with
/// status 130, the conventional code for an interrupt, in case the first one was not enough.
///
/// With `hang_up`, SIGHUP raises it too, however often it comes: the terminal or the process
/// that started this one went away (`linerate ui` gives its children SIGHUP as their
/// parent-death signal, which the kernel can send more than once as the UI's threads end), and
/// the run stops and stores what it measured instead of dying with it. `serve` rereads its
/// keys on SIGHUP instead.
pub fn on_interrupt(hang_up: bool) -> std::io::Result<Signal> {
    let signal = Signal::new();
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(sig, 130, signal.flag())?;
        signal_hook::flag::register(sig, signal.flag())?;
    }
    if hang_up {
        signal_hook::flag::register(signal_hook::consts::SIGHUP, signal.flag())?;
    }
    Ok(signal)
}

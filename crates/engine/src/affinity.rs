//! Pinning a data thread to one CPU (as `iperf3 -A` and `nuttcp -xc` do), so a run's placement
//! of sender, receiver and their softirq work is chosen, repeatable and reported.

use std::io;

/// `--affinity CLIENT[,SERVER]` refused: the text says what to give.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AffinityError {
    /// A part that is not a CPU number.
    #[error("'{0}' is not a CPU number; e.g. --affinity 0,1")]
    NotACpu(String),
    /// Neither end named.
    #[error("give a CPU for this end and/or the server, e.g. --affinity 0,1")]
    Empty,
    /// This end's CPU is not on this host.
    #[error("this host has {cpus} CPUs (0 to {}); CPU {cpu} is not one of them", cpus - 1)]
    NotHere {
        /// The CPU asked for.
        cpu: u32,
        /// CPUs online here.
        cpus: usize,
    },
}

/// `CLIENT[,SERVER]` CPU numbers, either may be empty but not both: (this end's, the
/// server's). This end's is checked against this host's CPUs; the server's is the server's to
/// check.
pub fn parse_placement(value: &str) -> Result<(Option<u32>, Option<u32>), AffinityError> {
    let cpu = |v: &str| match v.trim() {
        "" => Ok(None),
        v => v
            .parse::<u32>()
            .map(Some)
            .map_err(|_| AffinityError::NotACpu(v.into())),
    };
    let (client, server) = match value.split_once(',') {
        Some((c, s)) => (cpu(c)?, cpu(s)?),
        None => (cpu(value)?, None),
    };
    if client.is_none() && server.is_none() {
        return Err(AffinityError::Empty);
    }
    let cpus = online_cpus();
    match client.filter(|&c| c as usize >= cpus) {
        Some(cpu) => Err(AffinityError::NotHere { cpu, cpus }),
        None => Ok((client, server)),
    }
}

/// CPUs online on this host.
pub fn online_cpus() -> usize {
    // SAFETY: sysconf has no memory effects.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}

/// Pins the calling thread to `cpu`.
pub fn pin_current_thread(cpu: usize) -> io::Result<()> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("CPU {cpu} beyond the largest CPU number this build supports"),
        ));
    }
    // SAFETY: cpu_set_t is plain data; CPU_ZERO/CPU_SET write within it (cpu checked above);
    // sched_setaffinity(0, ...) applies to the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_ZERO(&mut set);
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The CPU the calling thread runs on now.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no arguments and no memory effects.
    let c = unsafe { libc::sched_getcpu() };
    usize::try_from(c).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pinned_thread_runs_there() {
        let last = online_cpus() - 1;
        let on = std::thread::spawn(move || {
            pin_current_thread(last).unwrap();
            std::thread::yield_now();
            current_cpu()
        })
        .join()
        .unwrap();
        assert_eq!(on, Some(last));
        assert!(pin_current_thread(100_000).is_err());
    }

    #[test]
    fn a_placement_names_either_end_and_only_this_hosts_cpus() {
        assert_eq!(parse_placement("0,1"), Ok((Some(0), Some(1))));
        assert_eq!(parse_placement(",7"), Ok((None, Some(7))));
        assert_eq!(parse_placement(" 0 "), Ok((Some(0), None)));
        assert_eq!(parse_placement(","), Err(AffinityError::Empty));
        assert_eq!(
            parse_placement("x,1"),
            Err(AffinityError::NotACpu("x".into()))
        );
        let cpus = online_cpus();
        let beyond = parse_placement(&cpus.to_string()).unwrap_err();
        assert_eq!(
            beyond,
            AffinityError::NotHere {
                cpu: cpus as u32,
                cpus
            }
        );
    }
}

//! CPU accounting: per-thread and per-process user/system time (getrusage), another thread's
//! CPU clock ([`ThreadClock`]), and machine-wide utilisation (/proc/stat).
//!
//! Each end sums the CPU time of its own data threads, so an in-process server and the client
//! in one process still get separate figures; the process and machine-wide figures are
//! reported beside them. Each interval's figures are differences of two [`CpuSoFar`] readings
//! of one end, over that end's own clock.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// User and system CPU time, microseconds.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct CpuTime {
    /// User-mode CPU time, µs.
    pub user_us: u64,
    /// Kernel-mode CPU time, µs.
    pub sys_us: u64,
}

impl CpuTime {
    /// CPU time of the calling thread so far.
    pub fn thread_now() -> Self {
        rusage(libc::RUSAGE_THREAD)
    }

    /// CPU time of the whole process so far.
    pub fn process_now() -> Self {
        rusage(libc::RUSAGE_SELF)
    }

    /// The time spent since `earlier`.
    pub fn since(self, earlier: CpuTime) -> CpuTime {
        CpuTime {
            user_us: self.user_us.saturating_sub(earlier.user_us),
            sys_us: self.sys_us.saturating_sub(earlier.sys_us),
        }
    }

    /// Sum of two figures.
    pub fn plus(self, other: CpuTime) -> CpuTime {
        CpuTime {
            user_us: self.user_us + other.user_us,
            sys_us: self.sys_us + other.sys_us,
        }
    }

    /// User + system, µs.
    pub fn total_us(self) -> u64 {
        self.user_us + self.sys_us
    }

    /// User + system as a percentage of one core over `wall` (can exceed 100 with threads).
    pub fn pct_of(self, wall: Duration) -> f64 {
        let wall_us = wall.as_secs_f64() * 1e6;
        if wall_us > 0.0 {
            self.total_us() as f64 * 100.0 / wall_us
        } else {
            0.0
        }
    }
}

/// A thread's CPU clock (`pthread_getcpuclockid`): the scheduler's run time of that one thread,
/// user and system together, which any thread of the process can read while it lives. It counts
/// what `getrusage(RUSAGE_THREAD)`'s user + system time counts (the kernel scales those two to
/// this run time), in nanoseconds rather than microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThreadClock(libc::clockid_t);

impl ThreadClock {
    /// The calling thread's clock.
    pub fn current() -> std::io::Result<Self> {
        let mut id: libc::clockid_t = 0;
        // SAFETY: pthread_self() names the calling thread, which is alive; `id` is a valid
        // pointer to write the clock id to.
        let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut id) };
        if rc != 0 {
            return Err(std::io::Error::from_raw_os_error(rc));
        }
        Ok(Self(id))
    }

    /// The CPU time the thread has used so far (one `clock_gettime`, about a microsecond).
    /// Only while the thread lives: once it has ended its id may be reused by another thread,
    /// so the caller must keep it from ending during the read.
    pub fn read(self) -> std::io::Result<Duration> {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid pointer; an unknown clock id is an error return, not UB.
        if unsafe { libc::clock_gettime(self.0, &mut ts) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32))
    }
}

fn rusage(who: libc::c_int) -> CpuTime {
    // SAFETY: getrusage writes a plain-data struct that we zero-initialise; `who` is a valid
    // constant. It cannot fail for RUSAGE_SELF/RUSAGE_THREAD with a valid pointer.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut ru);
        ru
    };
    let us = |tv: libc::timeval| tv.tv_sec as u64 * 1_000_000 + tv.tv_usec as u64;
    CpuTime {
        user_us: us(ru.ru_utime),
        sys_us: us(ru.ru_stime),
    }
}

/// Machine-wide CPU utilisation over a period.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct SystemCpu {
    /// Busy share of all cores (100 = every core busy), %.
    pub busy_pct: f64,
    /// Of which user + nice, %.
    pub user_pct: f64,
    /// Of which system + irq + softirq, %.
    pub sys_pct: f64,
    /// Online cores counted.
    pub cores: u32,
}

/// One core's share of a period, each figure % of that core (100 = the core busy throughout):
/// where receive cost hides (one core's softirq) when a process's CPU % looks modest.
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, Default)]
pub struct CoreCpu {
    /// The core's number (`cpuN` in /proc/stat).
    pub core: u32,
    /// Busy: everything but idle and iowait, %.
    pub busy_pct: f64,
    /// User mode (user + nice), %.
    pub user_pct: f64,
    /// Kernel mode outside interrupts (system), %.
    pub system_pct: f64,
    /// Hardware interrupts (irq), %.
    pub irq_pct: f64,
    /// Software interrupts (softirq: most receive processing), %.
    pub softirq_pct: f64,
}

/// One core's /proc/stat line: user nice system idle iowait irq softirq steal, in ticks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct CoreTicks {
    core: u32,
    ticks: [u64; 8],
}

/// A reading of /proc/stat: the aggregate `cpu` line and each core's, in clock ticks.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SystemCpuSnapshot {
    user: u64,
    sys: u64,
    idle: u64,
    total: u64,
    cores: u32,
    per_core: Vec<CoreTicks>,
}

impl SystemCpuSnapshot {
    /// Reads /proc/stat; `None` where it is not available.
    pub fn now() -> Option<Self> {
        Self::parse(&std::fs::read_to_string("/proc/stat").ok()?)
    }

    /// Parses the text of /proc/stat.
    pub fn parse(text: &str) -> Option<Self> {
        let mut lines = text.lines();
        let first = lines.next()?;
        let mut fields = first.split_whitespace();
        if fields.next()? != "cpu" {
            return None;
        }
        let v: Vec<u64> = fields.filter_map(|f| f.parse().ok()).collect();
        let get = |i: usize| v.get(i).copied().unwrap_or(0);
        // user nice system idle iowait irq softirq steal (guest time is inside user already)
        let total: u64 = (0..8).map(get).sum();
        let per_core: Vec<CoreTicks> = lines.filter_map(core_line).collect();
        Some(Self {
            user: get(0) + get(1),
            sys: get(2) + get(5) + get(6),
            idle: get(3) + get(4),
            total,
            cores: per_core.len() as u32,
            per_core,
        })
    }

    /// Each core's share between `earlier` and this reading (cores in both readings).
    pub fn cores_since(&self, earlier: &SystemCpuSnapshot) -> Vec<CoreCpu> {
        self.per_core
            .iter()
            .filter_map(|now| {
                let then = earlier.per_core.iter().find(|c| c.core == now.core)?;
                let d: Vec<u64> = (0..8)
                    .map(|i| now.ticks[i].saturating_sub(then.ticks[i]))
                    .collect();
                let total: u64 = d.iter().sum();
                let pct = |x: u64| {
                    if total == 0 {
                        0.0
                    } else {
                        x as f64 * 100.0 / total as f64
                    }
                };
                Some(CoreCpu {
                    core: now.core,
                    busy_pct: pct(total - d[3] - d[4]),
                    user_pct: pct(d[0] + d[1]),
                    system_pct: pct(d[2]),
                    irq_pct: pct(d[5]),
                    softirq_pct: pct(d[6]),
                })
            })
            .collect()
    }

    /// Utilisation between `earlier` and this reading.
    pub fn since(&self, earlier: &SystemCpuSnapshot) -> SystemCpu {
        let total = self.total.saturating_sub(earlier.total);
        let pct = |x: u64| {
            if total == 0 {
                0.0
            } else {
                x as f64 * 100.0 / total as f64
            }
        };
        SystemCpu {
            busy_pct: pct(total.saturating_sub(self.idle.saturating_sub(earlier.idle))),
            user_pct: pct(self.user.saturating_sub(earlier.user)),
            sys_pct: pct(self.sys.saturating_sub(earlier.sys)),
            cores: self.cores,
        }
    }
}

/// Busy and total clock ticks of all of a host's cores (its /proc/stat `cpu` line) over some
/// period: busy is everything but idle and iowait, as in [`SystemCpu::busy_pct`].
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct HostTicks {
    /// Ticks the cores were busy, summed over cores.
    pub busy: u64,
    /// All ticks, summed over cores.
    pub total: u64,
}

impl SystemCpuSnapshot {
    /// The host's busy and total ticks between `earlier` and this reading.
    pub fn ticks_since(&self, earlier: &SystemCpuSnapshot) -> HostTicks {
        let total = self.total.saturating_sub(earlier.total);
        HostTicks {
            busy: total.saturating_sub(self.idle.saturating_sub(earlier.idle)),
            total,
        }
    }
}

/// One end's CPU from the start of its test to a reading: what each interval's CPU figures
/// are the differences of (two readings of the same end, over that end's own clock).
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct CpuSoFar {
    /// Time from the end's start of the test to this reading, µs, by its own monotonic clock.
    pub elapsed_us: u64,
    /// CPU time (user + system) the end's data threads used so far, µs, read from each
    /// thread's [`ThreadClock`] (a thread that has ended counts what it used).
    pub threads_us: u64,
    /// The host's /proc/stat ticks since the start; `None` where /proc/stat is not readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostTicks>,
}

impl CpuSoFar {
    /// The reading at the start of a test: nothing used yet, the host's ticks counted from here.
    pub const START: CpuSoFar = CpuSoFar {
        elapsed_us: 0,
        threads_us: 0,
        host: Some(HostTicks { busy: 0, total: 0 }),
    };

    /// A reading now of an end whose test began at `t0` (when it read `sys0`), its data
    /// threads having used `threads_used`: reads /proc/stat once (tens of µs).
    pub fn now(
        t0: std::time::Instant,
        threads_used: Duration,
        sys0: Option<&SystemCpuSnapshot>,
    ) -> Self {
        CpuSoFar {
            elapsed_us: t0.elapsed().as_micros() as u64,
            threads_us: threads_used.as_micros() as u64,
            host: sys0
                .zip(SystemCpuSnapshot::now())
                .map(|(then, now)| now.ticks_since(then)),
        }
    }

    /// The data threads' CPU from `earlier` to this reading, % of one core (100 = one core
    /// busy throughout); `None` when no time passed between them.
    pub fn threads_pct_since(&self, earlier: &CpuSoFar) -> Option<f64> {
        let wall_us = self.elapsed_us.checked_sub(earlier.elapsed_us)?;
        let used_us = self.threads_us.saturating_sub(earlier.threads_us);
        (wall_us > 0).then(|| used_us as f64 * 100.0 / wall_us as f64)
    }

    /// The host's busy share from `earlier` to this reading, % of all cores; `None` without
    /// both hosts' ticks or when no tick passed between them.
    pub fn host_busy_pct_since(&self, earlier: &CpuSoFar) -> Option<f64> {
        let (now, then) = (self.host?, earlier.host?);
        let total = now.total.checked_sub(then.total).filter(|&t| t > 0)?;
        let busy = now.busy.saturating_sub(then.busy).min(total);
        Some(busy as f64 * 100.0 / total as f64)
    }
}

/// A `cpuN` line of /proc/stat.
fn core_line(line: &str) -> Option<CoreTicks> {
    let mut fields = line.split_whitespace();
    let core = fields.next()?.strip_prefix("cpu")?.parse().ok()?;
    let mut ticks = [0u64; 8];
    for (slot, field) in ticks.iter_mut().zip(fields) {
        *slot = field.parse().ok()?;
    }
    Some(CoreTicks { core, ticks })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_cores_share_with_its_softirq_apart() {
        let a = SystemCpuSnapshot::parse(
            "cpu  0 0 0 0 0 0 0 0\ncpu0 0 0 0 0 0 0 0 0\ncpu1 0 0 0 0 0 0 0 0\nintr 5\n",
        )
        .unwrap();
        let b = SystemCpuSnapshot::parse(
            "cpu  0 0 0 0 0 0 0 0\ncpu0 10 0 20 60 10 0 0 0\ncpu1 0 0 40 0 0 10 50 0\nintr 9\n",
        )
        .unwrap();
        let cores = b.cores_since(&a);
        assert_eq!(cores.len(), 2);
        assert_eq!(
            (cores[0].core, cores[0].busy_pct, cores[0].user_pct),
            (0, 30.0, 10.0)
        );
        assert_eq!(
            (
                cores[1].busy_pct,
                cores[1].system_pct,
                cores[1].irq_pct,
                cores[1].softirq_pct
            ),
            (100.0, 40.0, 10.0, 50.0)
        );
    }

    #[test]
    fn proc_stat_delta() {
        let a =
            SystemCpuSnapshot::parse("cpu  100 0 50 800 50 0 0 0 0 0\ncpu0 1\ncpu1 1\n").unwrap();
        let b = SystemCpuSnapshot::parse("cpu  200 0 100 1000 50 0 50 0 0 0\ncpu0 1\ncpu1 1\n")
            .unwrap();
        let d = b.since(&a);
        // 400 ticks: 100 user, 100 sys (50 system + 50 softirq), 200 idle → 50 % busy.
        assert_eq!(d.cores, 2);
        assert!((d.busy_pct - 50.0).abs() < 1e-9);
        assert!((d.user_pct - 25.0).abs() < 1e-9);
        assert!((d.sys_pct - 25.0).abs() < 1e-9);
    }

    #[test]
    fn readings_so_far_give_each_intervals_shares() {
        let a = SystemCpuSnapshot::parse("cpu  100 0 50 800 50 0 0 0\n").unwrap();
        let b = SystemCpuSnapshot::parse("cpu  200 0 100 1000 50 0 50 0\n").unwrap();
        assert_eq!(
            b.ticks_since(&a),
            HostTicks {
                busy: 200,
                total: 400
            }
        );
        let one = CpuSoFar {
            elapsed_us: 1_000_000,
            threads_us: 500_000,
            host: Some(b.ticks_since(&a)),
        };
        assert_eq!(one.threads_pct_since(&CpuSoFar::START), Some(50.0));
        assert_eq!(one.host_busy_pct_since(&CpuSoFar::START), Some(50.0));
        let two = CpuSoFar {
            elapsed_us: 1_500_000,
            threads_us: 1_500_000,
            host: Some(HostTicks {
                busy: 300,
                total: 500,
            }),
        };
        // Two threads busy for the half second: 200 % of one core; the host all busy.
        assert_eq!(two.threads_pct_since(&one), Some(200.0));
        assert_eq!(two.host_busy_pct_since(&one), Some(100.0));
        // No time or no ticks in between, or a host that cannot be read: no figure.
        assert_eq!(one.threads_pct_since(&one), None);
        assert_eq!(one.host_busy_pct_since(&one), None);
        let unread = CpuSoFar { host: None, ..two };
        assert_eq!(unread.host_busy_pct_since(&one), None);
    }

    #[test]
    fn another_threads_clock_reads_what_it_used() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = std::sync::mpsc::channel::<()>();
        let spinner = std::thread::spawn(move || {
            tx.send(ThreadClock::current().unwrap()).unwrap();
            let start = CpuTime::thread_now();
            let mut x = 0u64;
            while stop_rx.try_recv().is_err() {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            std::hint::black_box(x);
            CpuTime::thread_now().since(start).total_us()
        });
        let clock = rx.recv().unwrap();
        let before = clock.read().unwrap();
        // Until the spinner has been charged 20 ms (a busy machine only makes that take longer).
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while clock.read().unwrap() - before < Duration::from_millis(20) {
            assert!(std::time::Instant::now() < deadline);
            std::thread::sleep(Duration::from_millis(1));
        }
        let seen = clock.read().unwrap();
        stop_tx.send(()).unwrap();
        let own_us = spinner.join().unwrap();
        // The clock read from outside and the thread's own rusage count the same time.
        assert!(
            own_us as u128 + 2_000 >= seen.as_micros(),
            "{own_us} < {seen:?}"
        );
    }

    #[test]
    fn cpu_time_arithmetic() {
        let a = CpuTime {
            user_us: 1_000_000,
            sys_us: 500_000,
        };
        assert_eq!(a.pct_of(Duration::from_secs(3)), 50.0);
        assert_eq!(a.since(a), CpuTime::default());
        assert_eq!(a.plus(a).total_us(), 3_000_000);
    }

    #[test]
    fn thread_time_advances_with_work() {
        // Spin until the thread has been charged 10 ms: a busy machine only makes it take longer
        // in wall time (bounded at 10 s, which would mean the clock does not advance).
        let before = CpuTime::thread_now();
        let mut x = 0u64;
        let start = std::time::Instant::now();
        while CpuTime::thread_now().since(before).total_us() <= 10_000 {
            for _ in 0..10_000 {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            assert!(start.elapsed() < Duration::from_secs(10));
        }
        std::hint::black_box(x);
    }
}

//! CPU accounting: per-thread and per-process user/system time (getrusage) and machine-wide
//! utilisation (/proc/stat).
//!
//! Each end sums the CPU time of its own data threads, so an in-process server and the client
//! in one process still get separate figures; the process and machine-wide figures are
//! reported beside them.

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

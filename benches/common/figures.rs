//! Figures the benchmarks report: percentiles of samples, medians, a process's resident
//! memory. Included by each benchmark that needs them with `#[path]`.

#![allow(
    clippy::cast_precision_loss,
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    reason = "turning counts and durations into figures for a report"
)]

/// The mean, median and 99th percentile of a set of samples.
pub struct Stats {
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
}

impl Stats {
    /// Sorts `samples` in place.
    pub fn of(samples: &mut [f64]) -> Stats {
        samples.sort_by(f64::total_cmp);
        let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
        Stats {
            mean: samples.iter().sum::<f64>() / samples.len() as f64,
            p50: at(0.50),
            p99: at(0.99),
        }
    }
}

/// The median; sorts `values` in place.
pub fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// A process's resident memory in KiB: all of it, and the anonymous part (heap and
/// stacks, as opposed to pages of files such as the executable).
pub struct Resident {
    pub total_kib: u64,
    pub anon_kib: u64,
}

impl Resident {
    /// All of it, in MiB.
    pub fn total_mib(&self) -> f64 {
        self.total_kib as f64 / 1024.0
    }

    /// The anonymous part, in MiB.
    pub fn anon_mib(&self) -> f64 {
        self.anon_kib as f64 / 1024.0
    }
}

/// What `/proc/<pid>/status` says, zeros where it cannot be read.
pub fn resident(pid: u32) -> Resident {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    };
    Resident {
        total_kib: field("VmRSS:"),
        anon_kib: field("RssAnon:"),
    }
}

/// The CPU time all threads of a process have used so far, in nanoseconds, from
/// `/proc/<pid>/task/*/schedstat` (0 where it cannot be read). It depends less than a
/// latency on which core the scheduler wakes a process on.
#[allow(
    dead_code,
    reason = "not every benchmark that includes this file reads it"
)]
pub fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// `ns` nanoseconds shared out over `count` items, in microseconds each.
#[allow(
    dead_code,
    reason = "not every benchmark that includes this file reads it"
)]
pub fn micros_each(ns: u64, count: usize) -> f64 {
    ns as f64 / 1e3 / count.max(1) as f64
}

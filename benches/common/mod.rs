//! Helpers shared by the bench binaries.

use std::time::Duration;

/// Print `n`, min, p50, mean, p99 and max of `times` on one line.
pub fn report(name: &str, times: &[Duration]) {
    let mut sorted = times.to_vec();
    sorted.sort();
    let pick = |q: f64| {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            clippy::cast_precision_loss,
            reason = "an index into a short list"
        )]
        let at = ((sorted.len() - 1) as f64 * q).round() as usize;
        sorted[at]
    };
    let total: Duration = sorted.iter().sum();
    let mean = total / u32::try_from(sorted.len()).unwrap_or(u32::MAX);
    println!(
        "{name}: n={} min={:?} p50={:?} mean={:?} p99={:?} max={:?}",
        sorted.len(),
        sorted[0],
        pick(0.5),
        mean,
        pick(0.99),
        sorted[sorted.len() - 1]
    );
}

/// A multi-threaded runtime; failing to start one ends the benchmark.
pub fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("failed to start the runtime: {err}");
            std::process::exit(1);
        }
    }
}

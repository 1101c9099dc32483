//! Running an agent program briefly to ask it something (`--version`, `auth status`),
//! bounded by a timeout, never spending tokens.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long a probe may take before it counts as not answering.
pub(super) const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

/// What a probe printed, and whether it exited 0.
pub(super) struct Answer {
    pub(super) success: bool,
    pub(super) status: String,
    pub(super) stdout: String,
    pub(super) stderr: String,
}

/// Run `program ARGS` with `env` on top of debussy's environment and stdin empty; its
/// output, or why it could not be had (it did not start, or did not answer within
/// [`PROBE_TIMEOUT`] and was killed).
pub(super) fn probe(
    program: &Path,
    args: &[&str],
    env: &BTreeMap<String, String>,
) -> Result<Answer, String> {
    let mut child = Command::new(program)
        .args(args)
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|err| err.to_string())?;
    let deadline = Instant::now() + PROBE_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20));
            }
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "`{}` did not answer within {}s",
                    args.join(" "),
                    PROBE_TIMEOUT.as_secs()
                ));
            }
            Err(err) => return Err(err.to_string()),
        }
    };
    let output = child.wait_with_output().map_err(|err| err.to_string())?;
    Ok(Answer {
        success: status.success(),
        status: status.to_string(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    })
}

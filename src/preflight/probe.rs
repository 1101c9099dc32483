//! Running an agent program briefly to ask it something (`--version`, `auth status`),
//! bounded by a timeout, never spending tokens.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::process::{Finish, ProcessCommand};

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
/// [`PROBE_TIMEOUT`] and was stopped with everything it started).
pub(super) fn probe(
    program: &Path,
    args: &[&str],
    env: &BTreeMap<String, String>,
) -> Result<Answer, String> {
    probe_within(program, args, env, PROBE_TIMEOUT)
}

fn probe_within(
    program: &Path,
    args: &[&str],
    env: &BTreeMap<String, String>,
    limit: Duration,
) -> Result<Answer, String> {
    let output = ProcessCommand::new(program)
        .args(args)
        .envs(env)
        .stdin_payload(Vec::new())
        .output_blocking(limit)
        .map_err(|err| err.to_string())?;
    let status = match output.finish {
        Finish::Exited(status) => status,
        Finish::TimedOut(limit) => {
            return Err(format!(
                "`{}` did not answer within {}s",
                args.join(" "),
                limit.as_secs()
            ));
        }
    };
    Ok(Answer {
        success: status.is_success(),
        status: status.to_string(),
        stdout: output.stdout,
        stderr: output.stderr,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_that_prints_more_than_a_pipe_holds_is_answered() {
        // Read only after the exit, 200 KB fill the pipe and the program never exits.
        let answer = probe_within(
            Path::new("sh"),
            &[
                "-c",
                "head -c 200000 /dev/zero | tr '\\0' x; echo; echo done",
            ],
            &BTreeMap::new(),
            Duration::from_secs(10),
        )
        .expect("answered");
        assert!(answer.success, "{}", answer.status);
        assert!(answer.stdout.ends_with("\ndone"), "{}", answer.stdout.len());
    }

    #[test]
    fn a_program_that_does_not_answer_is_stopped_at_the_limit() {
        let err = probe_within(
            Path::new("sleep"),
            &["30"],
            &BTreeMap::new(),
            Duration::from_millis(300),
        )
        .err()
        .expect("no answer");
        assert!(err.contains("did not answer within"), "{err}");
    }
}
